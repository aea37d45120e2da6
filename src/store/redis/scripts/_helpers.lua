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
k lease token while active ('-' .. token once the lease has been given up), e last error,
x trace context of the add (JSON propagation carrier; absent unless tracing is on).
]]
local K_SCHEDULED, K_READY, K_ACTIVE, K_DEAD, K_SEQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local JOB_PREFIX, WAKE_CHANNEL = ARGV[1], ARGV[2]
local QUEUE_ROOT = string.sub(JOB_PREFIX, 1, #JOB_PREFIX - 4)
local K_META, K_EVENTS = QUEUE_ROOT .. 'meta', QUEUE_ROOT .. 'events'

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
  return string.format('%016d%016d', math.max(0, tonumber(due) or 0), tonumber(seq) or 0) .. id
end

local function ready_id(member)
  return string.sub(member, 33)
end

local function head_score(zset)
  local head = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if head[2] then return tonumber(head[2]) end
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

-- Which set holds the job: 'scheduled', 'ready', 'active', 'dead', or nil.
local function job_state(id, key)
  if redis.call('ZSCORE', K_SCHEDULED, id) then return 'scheduled' end
  if redis.call('ZSCORE', K_ACTIVE, id) then return 'active' end
  if redis.call('ZSCORE', K_DEAD, id) then return 'dead' end
  local f = redis.call('HMGET', key, 't', 'q')
  if f[1] and redis.call('ZSCORE', K_READY, ready_member(f[1], f[2], id)) then return 'ready' end
  return nil
end

-- Takes a waiting job out of its set (scheduled, ready or dead).
local function unlink_waiting(id, key, state)
  if state == 'scheduled' then
    redis.call('ZREM', K_SCHEDULED, id)
  elseif state == 'ready' then
    local f = redis.call('HMGET', key, 't', 'q')
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
  if events_max == nil then events_max = tonumber(redis.call('HGET', K_META, 'events')) or 0 end
  if events_max > 0 then
    redis.call('XADD', K_EVENTS, 'MAXLEN', '~', events_max, '*', 'event', event, 'id', id, ...)
  end
end

-- The dead set's optional caps (meta deadMax = most jobs kept, deadMaxAge = longest kept, ms).
-- Trimmed a bounded amount per death, oldest first, so one script never stalls Redis.
local DEAD_TRIM_PER_RUN = 100
local function trim_dead(now)
  local caps = redis.call('HMGET', K_META, 'deadMax', 'deadMaxAge')
  local max_count, max_age = tonumber(caps[1]), tonumber(caps[2])
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
