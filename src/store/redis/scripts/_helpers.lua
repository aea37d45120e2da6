--[[ _helpers: pulled into every script by the `--@include _helpers.lua` line.
Every script shares these KEYS and ARGV positions:
  KEYS[1] scheduled (ZSET due ms -> id)       KEYS[2] ready (ZSET -priority -> due|seq|id)
  KEYS[3] active (ZSET lease deadline -> id)  KEYS[4] dead (ZSET time of death -> id)
  KEYS[5] seq (STRING counter: FIFO order and lease tokens)
  ARGV[1] job key prefix (`<prefix>:{<queue>}:job:`)  ARGV[2] wake channel
Job keys of batched scripts are built from ARGV[1]; they share the queue's hash tag, so they
live in the same cluster slot as KEYS[1]. So do the queue's other keys, built from the same
root (ARGV[1] without its `job:`): `meta` (HASH: paused '1' when paused; events = the event
stream's MAXLEN when the stream is on; deadMax / deadMaxAge = the dead set's caps; completed =
running total), `schedules` (HASH name -> definition JSON), `schedule-last` (HASH name -> last
enqueued occurrence ms), `events` (STREAM) and `dedup:<key>` (STRING job id,
expiring with its window; value '<due ms>:<job id>').
Job hash fields: d data, t due ms, q seq, p priority (absent = 0), a attempts handed out
(absent = 0), m max attempts (absent = the worker's default), b backoff, c created ms,
k lease token while active, then marked: '-' .. token once its holder gave the lease up
(fail, snooze, release: a re-send of that call finds the mark and answers as the first run
did), '~' .. token once a claim recovered it after it ran out (every later call with that token
is stale and answers lease lost), e last error, x trace context of the add (JSON propagation
carrier; absent unless tracing is on).
Request memos: `req:<request id>` (STRING, expiring) keeps a non-idempotent call's answer, so a
call that ioredis re-sends after a lost reply gets the truth instead of a second run.
Stored data is never trusted: numbers are read with as_int (Lua's tonumber takes nan, inf and
0x1A), job keys with read_job (a key of another type must not stop the queue), and every
script decides everything before its first write, because Redis keeps the writes a script made
before an error.
]]
local K_SCHEDULED, K_READY, K_ACTIVE, K_DEAD, K_SEQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local JOB_PREFIX, WAKE_CHANNEL = ARGV[1], ARGV[2]
local QUEUE_ROOT = string.sub(JOB_PREFIX, 1, #JOB_PREFIX - 4)
local K_META, K_EVENTS = QUEUE_ROOT .. 'meta', QUEUE_ROOT .. 'events'

-- Stored numbers are whole numbers delayq wrote; anything else (nan, inf, 1e400, 0x1A, '',
-- text, fractions) is corrupt and gives nil. At most 16 digits, so the value is exact.
local function as_int(s)
  if type(s) == 'number' then
    if s == s and s > -1e16 and s < 1e16 and s == math.floor(s) then return s end
    return nil
  end
  if type(s) ~= 'string' or #s == 0 or #s > 17 or not string.find(s, '^%-?%d+$') then return nil end
  return tonumber(s)
end

-- A whole-number argument; a bad one fails the script before it writes anything.
local function arg_int(i, name)
  local v = as_int(ARGV[i])
  if v == nil then error('delayq: argument ' .. name .. ' must be a whole number, got ' .. tostring(ARGV[i])) end
  return v
end

-- Lua's tostring gives 14 significant digits; integers go to Redis through %d so none is lost.
local function int(x)
  return string.format('%d', x)
end

-- The one clock of the contract: the Redis server's.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Ready members sort (within one priority score) by due time, then by the order jobs were
-- added: fixed-width digits compare the same as numbers, and ZSET ties sort by member.
local function ready_member(due, seq, id)
  return string.format('%016d%016d', math.max(0, as_int(due) or 0), math.max(0, as_int(seq) or 0)) .. id
end

local function ready_id(member)
  return string.sub(member, 33)
end

local function head_score(zset)
  local head = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if head[2] then return tonumber(head[2]) end -- ZSET scores are always valid numbers
  return nil
end

-- Workers sleep until the earliest due time they know of; tell them when it moved earlier.
local function wake_if_earlier(prev_head, due)
  if prev_head == nil or due < prev_head then
    redis.call('PUBLISH', WAKE_CHANNEL, int(due))
  end
end

local function schedule(id, due)
  local prev_head = head_score(K_SCHEDULED)
  redis.call('ZADD', K_SCHEDULED, due, id)
  wake_if_earlier(prev_head, due)
end

-- Reads fields of a job's hash. Returns the fields, or nil and why when the key holds another
-- type (a hand-written producer's STRING): a plain HMGET would fail the whole script.
local function read_job(key, ...)
  local f = redis.pcall('HMGET', key, ...)
  if type(f) == 'table' and f.err then
    return nil, 'corrupt job: its key holds a ' .. redis.call('TYPE', key).ok .. ', not a hash'
  end
  return f, nil
end

-- Why a job's body cannot be handed out, or nil when it can. `f` holds the fields
-- d a m b t p c q (the order of CLAIM_FIELDS); absent optional fields are fine.
local CLAIM_FIELDS = { 'd', 'a', 'm', 'b', 't', 'p', 'c', 'q', 'x' }
local function corrupt_reason(f)
  if not f[5] or not as_int(f[5]) then return 'corrupt job: missing or bad due time (t)' end
  if not f[1] then return 'corrupt job: the body has no data field (d)' end
  if f[2] and not as_int(f[2]) then return 'corrupt job: bad attempt count (a)' end
  if f[3] and not as_int(f[3]) then return 'corrupt job: bad max attempts (m)' end
  if f[6] and not as_int(f[6]) then return 'corrupt job: bad priority (p)' end
  if f[7] and not as_int(f[7]) then return 'corrupt job: bad created time (c)' end
  if f[8] and not as_int(f[8]) then return 'corrupt job: bad sequence (q)' end
  return nil
end

-- The answer a re-sent call finds, or nil. `memo_key` is '' when the caller sent no request id.
local function memo_get(memo_key)
  if memo_key == '' then return nil end
  return redis.call('GET', memo_key) or nil
end

local function memo_set(memo_key, value, ttl_ms)
  if memo_key == '' then return end
  redis.call('SET', memo_key, value, 'PX', ttl_ms)
end

-- Which set holds the job: 'scheduled', 'ready', 'active', 'dead', or nil.
local function job_state(id, key)
  if redis.call('ZSCORE', K_SCHEDULED, id) then return 'scheduled' end
  if redis.call('ZSCORE', K_ACTIVE, id) then return 'active' end
  if redis.call('ZSCORE', K_DEAD, id) then return 'dead' end
  local f = read_job(key, 't', 'q')
  if f and as_int(f[1]) and redis.call('ZSCORE', K_READY, ready_member(f[1], f[2], id)) then return 'ready' end
  return nil
end

-- Takes a waiting job out of its set (scheduled, ready or dead).
local function unlink_waiting(id, key, state)
  if state == 'scheduled' then
    redis.call('ZREM', K_SCHEDULED, id)
  elseif state == 'ready' then
    local f = read_job(key, 't', 'q')
    redis.call('ZREM', K_READY, ready_member(f[1], f[2], id))
  elseif state == 'dead' then
    redis.call('ZREM', K_DEAD, id)
  end
end

-- The public state: a ready job is a scheduled job whose time has come.
local function public_state(state)
  if state == 'ready' then return 'scheduled' end
  return state
end

-- unpack() is bounded by Lua's C stack; variadic calls go in chunks below that bound.
local function call_chunked(cmd, key, items)
  local n = #items
  local i = 1
  while i <= n do
    local j = math.min(i + 4999, n)
    redis.call(cmd, key, unpack(items, i, j))
    i = j + 1
  end
end

-- The event stream is opt-in per queue (meta field `events` = its MAXLEN); read once per run.
local events_max = nil
local function emit(event, id, ...)
  if events_max == nil then events_max = as_int(redis.call('HGET', K_META, 'events')) or 0 end
  if events_max > 0 then
    redis.call('XADD', K_EVENTS, 'MAXLEN', '~', events_max, '*', 'event', event, 'id', id, ...)
  end
end

-- The dead set's optional caps (meta deadMax = most jobs kept, deadMaxAge = longest kept, ms).
-- Trimmed a bounded amount per death, oldest first, so one script never stalls Redis.
local DEAD_TRIM_PER_RUN = 100
local function trim_dead(now)
  local caps = redis.call('HMGET', K_META, 'deadMax', 'deadMaxAge')
  local max_count, max_age = as_int(caps[1]), as_int(caps[2])
  if not max_count and not max_age then return end
  local victims = {}
  if max_age then
    victims = redis.call('ZRANGEBYSCORE', K_DEAD, '-inf', now - max_age, 'LIMIT', 0, DEAD_TRIM_PER_RUN)
  end
  if max_count and #victims < DEAD_TRIM_PER_RUN then
    local over = redis.call('ZCARD', K_DEAD) - #victims - max_count
    if over > 0 then
      local more = redis.call('ZRANGE', K_DEAD, #victims, #victims + math.min(over, DEAD_TRIM_PER_RUN - #victims) - 1)
      for _, id in ipairs(more) do victims[#victims + 1] = id end
    end
  end
  for _, id in ipairs(victims) do
    redis.call('ZREM', K_DEAD, id)
    redis.call('DEL', JOB_PREFIX .. id)
    emit('purged', id, 'reason', 'dead set cap')
  end
end

-- Every way into the dead set goes through here.
local function bury(id, now)
  redis.call('ZADD', K_DEAD, now, id)
  trim_dead(now)
end
