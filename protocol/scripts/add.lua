--[[ delayq protocol 4 · add (delayq 0.1.0) · run it as it is with EVAL or EVALSHA.
Generated from src/store/redis/wire.ts (npm run protocol); protocol/manifest.json has the same in JSON.
KEYS (27):
  1 scheduled = <prefix>:{<queue>}:scheduled
  2 ready = <prefix>:{<queue>}:ready
  3 active = <prefix>:{<queue>}:active
  4 dead = <prefix>:{<queue>}:dead
  5 seq = <prefix>:{<queue>}:seq
  6 jobs = <prefix>:{<queue>}:jobs
  7 runs = <prefix>:{<queue>}:runs
  8 meta = <prefix>:{<queue>}:meta
  9 events = <prefix>:{<queue>}:events
  10 completed = <prefix>:{<queue>}:completed
  11 results = <prefix>:{<queue>}:results
  12 progress = <prefix>:{<queue>}:progress
  13 logs = <prefix>:{<queue>}:logs
  14 errors = <prefix>:{<queue>}:errors
  15 group-of = <prefix>:{<queue>}:group-of
  16 groups = <prefix>:{<queue>}:groups
  17 lanes = <prefix>:{<queue>}:lanes
  18 waiting = <prefix>:{<queue>}:waiting
  19 flow-of = <prefix>:{<queue>}:flow-of
  20 debounce = <prefix>:{<queue>}:debounce
  21 rate = <prefix>:{<queue>}:rate
  22 rate-log = <prefix>:{<queue>}:rate-log
  23 rate-wake = <prefix>:{<queue>}:rate-wake
  24 revoked = <prefix>:{<queue>}:revoked
  25 waiters = <prefix>:{<queue>}:waiters
  26 memo = <prefix>:{<queue>}:req:<request id> (any key of the queue when request_id is '')
  27 schedule_last = <prefix>:{<queue>}:schedule-last
ARGV (8, then the items):
  1 root: text. the queue's key root, <prefix>:{<queue>}:
  2 wake: text. the queue's wake channel, <prefix>:{<queue>}:wake
  3 schedule: text, not set: ''. a recurring schedule guarding the add (library only)
  4 occurrence: integer (epoch ms), not set: '', 0..8640000000000000. the schedule's occurrence (with schedule)
  5 request_id: text, not set: ''. a unique id of this call, so a re-send after a lost reply answers as the first run did; memo is then <root>req:<request id>
  6 memo_ms: integer (ms), 1..315360000000. how long the answer is remembered for a re-send (60000 by the library)
  7 epoch: text, not set: ''. the shard layout's epoch the add was routed by ('' for an unsharded queue)
  8 flow: flag, '0' or '1'. '1' when each item carries group, cost, debounce_key, debounce_ms, debounce_max_ms, debounce_first_ms and attempts_made, '0' when items end at `timeout_ms`
Items from ARGV[9], 20 fields each:
  +0 id: id, 1-256 characters, no control characters. a job id: 1-256 characters of valid Unicode, no control characters
  +1 data: json. the payload as JSON text (the worker JSON.parse's it)
  +2 delay_ms: integer (ms), not set: '', 0..315360000000. from the server's now; exactly one of delay_ms and run_at is set
  +3 run_at: integer (epoch ms), not set: '', 978307200000..253402300799999. an absolute due time
  +4 priority: integer, -1000000..1000000. higher first, -1000000..1000000
  +5 max_attempts: integer, not set: '', 1..1000000. hand-outs before the dead set ('': the worker's default)
  +6 backoff: text, not set: ''. the job's own backoff as formats.BACKOFF ('': the worker's)
  +7 replace: flag, '0' or '1'. '1': replace an existing job that is not active
  +8 dedup_key: text, not set: '', 1-256 characters, no control characters. skip the add while another add holds this key
  +9 dedup_ms: integer (ms), not set: '', 1..315360000000. the dedup key's window
  +10 trace: json, not set: ''. a trace propagation carrier, ASCII
  +11 name: id, not set: '', 1-256 characters, no control characters. the job's name (1-256 characters, no control characters), kept in its body (formats.JOB_BODY) for a worker to route by
  +12 timeout_ms: integer (ms), not set: '', 1..315360000000. how long one attempt of the job may run ('': the worker's timeout), kept in its body (formats.JOB_BODY); a worker fails an attempt that runs longer
  +13 group: id, not set: '', 1-256 characters, no control characters. a group id (add: the job belongs to it; limits: the group to change, or the queue)
  +14 cost: integer, not set: '' (1), 1..1000000. tokens of the rate limits the job takes when handed out; above a limit max: CODE.too_costly
  +15 debounce_key: text, not set: '', 1-256 characters, no control characters. fold the add into this key's pending burst (see add.lua's header); delay_ms and run_at are then ignored
  +16 debounce_ms: integer (ms), not set: '' (with no debounce_key), 0..315360000000. the job runs this long after the burst's last add
  +17 debounce_max_ms: integer (ms), not set: '' (no bound), 1..315360000000. and no later than this after the burst's first add
  +18 debounce_first_ms: integer (ms), not set: '' (now), 0..8640000000000000. the first add of a burst this add starts (epoch ms, at most now): a sharded producer moving a burst off a retired shard keeps its maxWaitMs bound
  +19 attempts_made: integer, not set: '' (0), 0..999999. attempts the job made before it was added (a job moved from another queue): it is written with a run state of that many attempts (formats.RUN_STATE), so its next hand-out is attempt attempts_made + 1; below max_attempts when that is given
Reply: an array: made, then per item code, state, due_ms, holder.
  made is 1 when this add made the queue's keys (took the first sequence number of a life of the queue, take_seq), else 0; per job its CODE, public state (or finished), due time and holder: the dedup holder's id, or the burst job's id when debounced. A reply of one element is CODE.guard_refused (the schedule guard refused), CODE.moved (no guard given and the queue takes no add: a retired shard, meta moved; or not a live shard of the layout epoch given, meta epoch) or CODE.too_costly (a job's cost is above a rate limit's max; nothing was written)
Codes: added = 1, exists = 0, replaced = 2, deduplicated = 3, debounced = 4, guard_refused = -1, moved = -2, too_costly = -3
Refusals: every argument is checked before the first write; one outside what its line says fails the call
with `delayq: argument <name>[ of item <n>] <why>, got <value>` and writes nothing (docs/protocol.md).
]]
-- delayq 0.1.0 add
local K_SCHEDULED, K_READY, K_ACTIVE, K_DEAD, K_SEQ, K_JOBS, K_RUNS, K_META, K_EVENTS, K_COMPLETED, K_RESULTS, K_PROGRESS, K_LOGS, K_ERRORS, K_GROUP_OF, K_GROUPS, K_LANES, K_WAITING, K_FLOW_OF, K_DEBOUNCE, K_RATE, K_RATE_LOG, K_RATE_WAKE, K_REVOKED, K_WAITERS, K_MEMO, K_SCHEDULE_LAST = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19], KEYS[20], KEYS[21], KEYS[22], KEYS[23], KEYS[24], KEYS[25], KEYS[26], KEYS[27]
local ROOT, WAKE_CHANNEL = ARGV[1], ARGV[2]
local DEDUP_PREFIX = ROOT .. 'dedup:'
local K_WAITING_DUE = ROOT .. 'waiting-due'
local K_HISTORY = ROOT .. 'history'
local A = { schedule = 3, occurrence = 4, request_id = 5, memo_ms = 6, epoch = 7, flow = 8 }
local EACH_FIRST = 9
local EACH_SIZE = 20
local E = { id = 0, data = 1, delay_ms = 2, run_at = 3, priority = 4, max_attempts = 5, backoff = 6, replace = 7, dedup_key = 8, dedup_ms = 9, trace = 10, name = 11, timeout_ms = 12, group = 13, cost = 14, debounce_key = 15, debounce_ms = 16, debounce_max_ms = 17, debounce_first_ms = 18, attempts_made = 19 }
local CODE = { added = 1, exists = 0, replaced = 2, deduplicated = 3, debounced = 4, guard_refused = -1, moved = -2, too_costly = -3 }
local R = { made = 1 }
local R_EACH_FIRST = 2
local R_EACH_SIZE = 4
local RE = { code = 1, state = 2, due_ms = 3, holder = 4 }
local RULE = { occurrence = { 'i', 0, 8640000000000000, true }, memo_ms = { 'i', 1, 315360000000, true }, flow = { 'f', nil, nil, false }, id = { 'n', nil, nil, false }, delay_ms = { 'i', 0, 315360000000, true }, run_at = { 'i', 978307200000, 253402300799999, true, 'must be epoch milliseconds, not seconds: before 2001 (978307200000)' }, priority = { 'i', -1000000, 1000000, false }, max_attempts = { 'i', 1, 1000000, true }, replace = { 'f', nil, nil, false }, dedup_key = { 'n', nil, nil, true }, dedup_ms = { 'i', 1, 315360000000, true }, name = { 'n', nil, nil, true }, timeout_ms = { 'i', 1, 315360000000, true }, group = { 'n', nil, nil, true }, cost = { 'i', 1, 1000000, true }, debounce_key = { 'n', nil, nil, true }, debounce_ms = { 'i', 0, 315360000000, true }, debounce_max_ms = { 'i', 1, 315360000000, true }, debounce_first_ms = { 'i', 0, 8640000000000000, true }, attempts_made = { 'i', 0, 999999, true } }
local SEQ_LIFE, SEQ_FLOOR_TTL_MS = 16777216, 2592000000
if #KEYS ~= 27 then error('delayq protocol: add takes 27 KEYS, got ' .. #KEYS) end
local PLACE = { scheduled = 'scheduled', ready = 'ready', waiting = 'waiting', active = 'active', dead = 'dead', completed = 'completed' }
local FINISH = { completed = 'completed', dead = 'dead', cancelled = 'cancelled' }
local EVENT = { added = 'added', claimed = 'claimed', completed = 'completed', retried = 'retried', dead = 'dead', leaseExpired = 'leaseExpired', released = 'released', snoozed = 'snoozed', rescheduled = 'rescheduled', cancelled = 'cancelled', drained = 'drained', purged = 'purged', deadRetried = 'deadRetried', paused = 'paused', resumed = 'resumed' }
local MARK = { given_up = '-', recovered = '~', kept = '+', revoked = '!' }
local LIMIT = { promote_per_claim = 1000, reap_per_claim = 100, ids_per_run = 1000, jobs_per_sweep = 1000, trim_per_run = 100, groups_per_sweep = 1000, rate_visits = 100, revoked_keep_ms = 600000, history_minutes = 1440 }
--[[ _helpers: pulled into every script by its `--@include _helpers.lua` line, after the
script's generated prologue (wire.ts luaPrologue), which names its KEYS and ARGV:
  K_SCHEDULED (ZSET due ms -> id)   K_READY (ZSET -priority -> due|seq|id)
  K_ACTIVE (ZSET lease deadline -> id)   K_DEAD (ZSET time of death -> id)
  K_SEQ (STRING counter: FIFO order and lease tokens; obliterate leaves it at a floor, expiring,
    so a later life of the queue never hands out a token a stale holder still has: take_seq)
  K_JOBS (HASH id -> packed body, wire.ts JOB_BODY: written by add, never changed)
  K_RUNS (HASH id -> run state, wire.ts RUN_STATE: present once the job left scheduled)
  K_META (HASH: paused '1'; events = the stream's MAXLEN; deadMax / deadMaxAge and doneMax /
    doneMaxAge, the retention of dead and completed jobs; completed total)
  K_EVENTS (STREAM, opt-in)   ROOT (`<prefix>:{<queue>}:`)   WAKE_CHANNEL
  K_COMPLETED (ZSET finish time -> id: completed jobs kept by the retention rule)
  K_RESULTS (HASH id -> a kept job's result JSON)   K_PROGRESS (HASH id -> progress JSON)
  K_LOGS (HASH id -> the job's log lines, a JSON array, capped)
  K_ERRORS (HASH id -> the job's last failed attempts, wire.ts ERROR_HISTORY: written by fail)
  K_GROUP_OF, K_GROUPS, K_LANES, K_WAITING: groups (see _groups.lua)
  A.<name>: the ARGV index of each script argument; E.<name>, EACH_FIRST, EACH_SIZE for items;
  CODE.<name>: the script's return codes.
Every script makes a fixed number of Redis calls per batch, whatever its size (the event
stream, when turned on, adds one XADD per event). Other keys of the queue share ROOT and its
hash tag: `dedup:<key>` (STRING '<due ms>:<job id>', expiring with its window), `schedules`,
`schedule-last`, and `req:<request id>` (a request memo: a non-idempotent call's answer, so a
call ioredis re-sends after a lost reply gets the truth instead of a second run).
Lease tokens are '<now ms>-<n>'; what they become when a lease ends, and the one way into and
out of the active set, are in _lifecycle.lua (scripts that move a job include it after this).
Stored data is never trusted: numbers are read with as_int (Lua's tonumber takes nan, inf and
0x1A), bodies with parse_body and run states with parse_run, and every script decides
everything before its first write, because Redis keeps the writes a script made before an error.
]]

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

local function arg(name)
  return ARGV[A[name]]
end

-- A whole-number argument; a bad one fails the script before it writes anything.
local function arg_int(name)
  local v = as_int(ARGV[A[name]])
  if v == nil then error('delayq: argument ' .. name .. ' must be a whole number, got ' .. tostring(ARGV[A[name]])) end
  return v
end

-- The items of a batched call; a call whose ARGV is not whole items after the script's own
-- arguments fails (a client of another protocol version: docs/protocol.md).
local function each_count()
  if EACH_SIZE == 0 then return 0 end
  local n = #ARGV - EACH_FIRST + 1
  if n < 0 or n % EACH_SIZE ~= 0 then error('delayq protocol: items of ' .. EACH_SIZE .. ' arguments each after ARGV[' .. (EACH_FIRST - 1) .. '], got ' .. #ARGV .. ' ARGV') end
  return n / EACH_SIZE
end

local function each_arg(i, name)
  return ARGV[EACH_FIRST + (i - 1) * EACH_SIZE + E[name]]
end


-- A reply's fixed fields by name (wire.ts ReplyShape, the prologue's R): every field must be
-- given, so a reply never goes out short of one.
local function reply(named)
  local out = {}
  for name, i in pairs(R) do
    local v = named[name]
    if v == nil then error('delayq: reply field ' .. name .. ' is not set') end
    out[i] = v
  end
  return out
end

-- Lua's tostring gives 14 significant digits; integers go to Redis through %d so none is lost.
local function int(x)
  return string.format('%d', x)
end

-- Every argument against its RULE (the prologue's, from wire.ts ARG_RULES): a value outside it
-- fails the call before the script does anything, so a refused call writes nothing. `item` is the
-- item's number, or nil for the script's own arguments (the text naming it is made only for a
-- refusal: a string per field and job is much of what checking costs). Lua's tonumber takes
-- 'nan', 'inf', '0x1A' and ' 1': as_int does not.
local function refuse(name, item, why, v)
  v = tostring(v)
  if #v > 40 then v = string.sub(v, 1, 40) .. '...' end
  error('delayq: argument ' .. name .. (item and ' of item ' .. item or '') .. ' ' .. why .. ', got ' .. v)
end
local function check(name, v, item)
  local r = RULE[name]
  if not r or (v == '' and r[4]) then return v end
  local kind = r[1]
  if kind == 'i' then
    local n = as_int(v)
    if n == nil then refuse(name, item, 'must be a whole number', v) end
    if n < r[2] then refuse(name, item, r[5] or (r[2] == 0 and 'must not be negative' or 'must be at least ' .. int(r[2])), v) end
    if n > r[3] then refuse(name, item, 'must be at most ' .. int(r[3]), v) end
    return v, n
  elseif kind == 'f' then
    if v ~= '0' and v ~= '1' then refuse(name, item, "must be '0' or '1'" .. (r[4] and " or ''" or ''), v) end
  elseif kind == 'o' then
    if type(v) ~= 'string' or not r[2][v] then
      local names = {}
      for k in pairs(r[2]) do names[#names + 1] = k end
      table.sort(names)
      refuse(name, item, 'must be one of ' .. table.concat(names, ', '), v)
    end
  elseif kind == 'd' then
    if type(v) ~= 'string' or #v > 20 or not string.find(v, '^%d+$') then refuse(name, item, 'must be a cursor (digits)', v) end
  else
    -- An id (wire.ts ARG_RULES id): as the Node library's idSchema, bar its Unicode check.
    if type(v) ~= 'string' or v == '' then refuse(name, item, 'must not be empty', v) end
    if string.find(v, '[%z\1-\31\127]') or string.find(v, '\194[\128-\159]') then refuse(name, item, 'must not contain control characters', v) end
    if #v > 256 then
      -- UTF-16 units, as JavaScript counts them: bytes less continuation bytes, and a 4-byte
      -- character (its lead byte) counts twice.
      local _, cont = string.gsub(v, '[\128-\191]', '')
      local _, wide = string.gsub(v, '[\240-\247]', '')
      if #v - cont + wide > 256 then refuse(name, item, 'must be at most 256 characters', v) end
    end
  end
  return v
end

-- The script's own arguments, checked before the script's body runs (items: each_int,
-- each_valid): a script calls it right after its includes, a library function as it enters.
local function check_args()
  for name, i in pairs(A) do
    check(name, ARGV[i], nil)
  end
end

-- An item's field, checked against its rule; each_int also reads it as a number.
local function each_valid(i, name)
  return check(name, each_arg(i, name), i)
end

-- A whole-number field that must be given ('' fails too); read once, by its check when it has one.
local function each_int(i, name)
  local s, n = each_valid(i, name)
  if n == nil then n = as_int(s) end
  if n == nil then refuse(name, i, 'must be a whole number', '') end
  return n
end

-- Takes n sequence numbers (n > 0) and returns the number before the first, and true when that
-- number is a multiple of SEQ_LIFE (wire.ts): 0 for a new queue, the floor an obliterate left
-- (obliterate.lua) for a queue made again, so the queue's keys are this call's. The floor
-- expires; the life that starts on it keeps the counter for good.
local function take_seq(n)
  local base = redis.call('INCRBY', K_SEQ, n) - n
  if base % SEQ_LIFE ~= 0 then return base, false end
  if base > 0 then redis.call('PERSIST', K_SEQ) end
  return base, true
end

-- The one clock of the contract: the Redis server's.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- unpack() is bounded by Lua's C stack; variadic calls go in chunks below that bound (one call
-- per 4,000 arguments: still a fixed number per batch, as batches are at most 1,000 jobs).
-- CHUNK is even, so pairs (score and member, field and value) are never split.
local CHUNK = 4000
local function call_chunked(cmd, key, items)
  local n = #items
  local i = 1
  while i <= n do
    local j = math.min(i + CHUNK - 1, n)
    redis.call(cmd, key, unpack(items, i, j))
    i = j + 1
  end
end

-- HMGET of many fields; returns the values in order (false for absent).
local function hmget(key, ids)
  if #ids == 0 then return {} end
  if #ids <= CHUNK then return redis.call('HMGET', key, unpack(ids)) end
  local out = {}
  for i = 1, #ids, CHUNK do
    local part = redis.call('HMGET', key, unpack(ids, i, math.min(i + CHUNK - 1, #ids)))
    for _, v in ipairs(part) do out[#out + 1] = v end
  end
  return out
end

-- A packed body (wire.ts JOB_BODY) as a table { seq, created, priority, max (or nil), backoff,
-- trace and name lengths, data start }, or nil and why it cannot be read. The name's length
-- follows the trace's after a '/' only in a named job's body (older bodies never have one).
local function parse_body(body)
  if type(body) ~= 'string' then return nil, 'corrupt job: no body' end
  -- The hot path: a well-formed header (digits only, at most 16 each) needs no further checks.
  local q, c, p, m, bl, xl, after = string.match(body, '^(%d+):(%d+):(%-?%d+):([%d/]*):(%d+):(%d+)()')
  local nl, start, tl = '', nil, ''
  -- A job with a timeout of its own: '<max attempts or empty>/<timeout ms>'.
  if q and string.find(m, '/', 1, true) then
    m, tl = string.match(m, '^(%d*)/(%d+)$')
    if not m then q = nil end
  end
  if q then
    if string.byte(body, after) == 58 then
      start = after + 1
    else
      nl, start = string.match(body, '^/(%d+):()', after)
    end
  end
  if start and #q < 17 and #c < 17 and #p < 18 and #m < 17 and #tl < 17 and #bl < 17 and #xl < 17 and #nl < 17 then
    local b = { seq = tonumber(q), created = tonumber(c), priority = tonumber(p), bl = tonumber(bl), xl = tonumber(xl), nl = tonumber(nl) or 0, start = start }
    if m ~= '' then b.max = tonumber(m) end
    if tl ~= '' then b.timeout = tonumber(tl) end
    if (b.max == nil or b.max >= 1) and (b.timeout == nil or b.timeout >= 1) and (nl == '' or b.nl >= 1) and start + b.bl + b.xl + b.nl - 1 <= #body then return b, nil end
  end
  -- Otherwise say what is wrong.
  q, c, p, m, bl, xl, start = string.match(body, '^([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):()')
  if not q then return nil, 'corrupt job: unreadable body header' end
  local xs, ns = string.match(xl, '^([^/]*)/(.*)$')
  if xs then xl, nl = xs, ns else nl = nil end
  local b = { seq = as_int(q), created = as_int(c), priority = as_int(p), bl = as_int(bl), xl = as_int(xl), nl = 0, start = start }
  if not b.seq or b.seq < 0 then return nil, 'corrupt job: bad sequence' end
  if not b.created then return nil, 'corrupt job: bad created time' end
  if not b.priority then return nil, 'corrupt job: bad priority' end
  local ms, ts = string.match(m, '^([^/]*)/(.*)$')
  if ms then
    m = ms
    b.timeout = as_int(ts)
    if not b.timeout or b.timeout < 1 then return nil, 'corrupt job: bad timeout' end
  end
  if m ~= '' then
    b.max = as_int(m)
    if not b.max or b.max < 1 then return nil, 'corrupt job: bad max attempts' end
  end
  if nl then
    b.nl = as_int(nl)
    if not b.nl or b.nl < 1 then return nil, 'corrupt job: bad name length' end
  end
  if not b.bl or not b.xl or b.bl < 0 or b.xl < 0 or start + b.bl + b.xl + b.nl - 1 > #body then return nil, 'corrupt job: bad field lengths' end
  return b, nil
end

-- The two body fields a claim orders by: seq (as its text, digits) and priority. A claim reads
-- only these (a full parse is ~2 µs a job in Redis's Lua); the worker reads the rest and buries
-- a body it cannot read. nil and the reason when even these cannot be read.
local function body_order(body)
  if type(body) ~= 'string' then return nil, nil, 'corrupt job: no body' end
  local q, p = string.match(body, '^(%d+):%d+:(%-?%d+):')
  if q and #q < 17 and #p < 18 then return q, tonumber(p), nil end
  local _, why = parse_body(body)
  return nil, nil, why or 'corrupt job: unreadable body header'
end

-- A packed body (wire.ts JOB_BODY) from its numbers as int() writes them (text, made once per
-- call where it can be: add writes thousands of bodies a call) and its strings. A job without a
-- name ('') gets the body of the versions before names, so they can still read it.
local function encode_body(seq_s, created_s, priority_s, max_s, timeout_s, backoff, trace, name, data)
  local limits = max_s or ''
  if timeout_s then limits = limits .. '/' .. timeout_s end
  if name == '' then
    return seq_s .. ':' .. created_s .. ':' .. priority_s .. ':' .. limits .. ':' .. #backoff .. ':' .. #trace .. ':' .. backoff .. trace .. data
  end
  return seq_s .. ':' .. created_s .. ':' .. priority_s .. ':' .. limits .. ':' .. #backoff .. ':' .. #trace .. '/' .. #name .. ':' .. backoff .. trace .. name .. data
end

-- A run state (wire.ts RUN_STATE) as { a, t, k, s, w, e, m }: attempts, due, token, first started
-- (ms or nil), worker id ('' when none), last error, and the max attempts a job that ran out of
-- them had (`<attempts>/<max>`, only a dead job's; nil otherwise, and in every run state written
-- before it). An absent one is a job never run. nil and
-- why when its shape cannot be read; r.bad says why when only a number in it is corrupt (its
-- token can still be compared, so its holder's call settles it).
-- The run state of a job never handed out; shared, so callers must not change it.
local NEVER_RUN = { a = 0, k = '', w = '' }
local function parse_run(run)
  if not run then return NEVER_RUN, nil end
  -- The short form '<due ms>': promoted to ready, never handed out.
  if not string.find(run, ':', 1, true) then
    local t = as_int(run)
    if not t then return nil, 'corrupt job: unreadable run state' end
    return { a = 0, t = t, k = '', w = '' }, nil
  end
  local a, t, k, s, w, rest = string.match(run, '^([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):()')
  if not a then return nil, 'corrupt job: unreadable run state' end
  local r = { a = as_int(a), t = as_int(t), k = k, s = as_int(s), w = w, e = string.sub(run, rest) }
  if r.e == '' then r.e = nil end
  if not r.a then
    -- Only a job that ran out of attempts has '/<max>' (the common case never looks for it).
    local spent, max = string.match(a, '^(%d+)/(%d+)$')
    r.a, r.m = as_int(spent), as_int(max)
  end
  if not r.a or (r.m and r.m < 1) then
    r.a, r.m, r.bad = 0, nil, 'corrupt job: bad attempt count'
  elseif t ~= '' and not r.t then
    r.bad = 'corrupt job: bad due time in its run state'
  end
  return r, nil
end

-- `s` (first started ms) and `w` (worker id) carry over from the run before, so callers that
-- move a job pass r.s and r.w on. `m` is given only by the calls that bury a job out of
-- attempts: the max that applied (its own, or the worker's default), which the reads show.
local function encode_run(a, t, k, e, s, w, m)
  return int(a) .. (m and '/' .. int(m) or '') .. ':' .. (t and int(t) or '') .. ':' .. (k or '') .. ':' .. (s and int(s) or '') .. ':' .. (w or '') .. ':' .. (e or '')
end

-- Ready members sort (within one priority score) by due time, then by the order jobs were
-- added: fixed-width digits compare the same as numbers, and ZSET ties sort by member.
-- From the due time and seq as plain digits (claim's plain_ms, body_order): padded, not
-- formatted, as the claim promotes up to a thousand jobs a call.
local ZEROS = '0000000000000000' -- 16 zeros (a literal: a library's load may call no function)
local function ready_member_text(due_s, seq_s, id)
  return string.sub(ZEROS, #due_s + 1) .. due_s .. string.sub(ZEROS, #seq_s + 1) .. seq_s .. id
end

-- ready_member_text from numbers (a due time below 0, or missing, counts as 0).
local function ready_member(due, seq, id)
  return ready_member_text(int(math.max(0, due or 0)), int(math.max(0, seq or 0)), id)
end

local function ready_id(member)
  return string.sub(member, 33)
end

-- The score at a rank (-1: the last), or nil when the set is shorter.
local function head_score_at(zset, rank)
  local head = redis.call('ZRANGE', zset, rank, rank, 'WITHSCORES')
  if head[2] then return tonumber(head[2]) end -- ZSET scores are always valid numbers
  return nil
end

local function head_score(zset)
  return head_score_at(zset, 0)
end

-- Workers sleep until the earliest due time they know of; tell them when it moved earlier.
local function wake_if_earlier(prev_head, due)
  if prev_head == nil or due < prev_head then
    redis.call('PUBLISH', WAKE_CHANNEL, int(due))
  end
end

-- Puts jobs into the scheduled set: `pairs_` is { due, id, due, id, ... }, each due a number,
-- or its text as int() writes it when the caller passes the earliest due as `min_due`.
local function schedule_many(pairs_, min_due)
  if #pairs_ == 0 then return end
  local prev_head = head_score(K_SCHEDULED)
  if min_due == nil then
    for i = 1, #pairs_, 2 do
      if min_due == nil or pairs_[i] < min_due then min_due = pairs_[i] end
    end
  end
  call_chunked('ZADD', K_SCHEDULED, pairs_)
  wake_if_earlier(prev_head, min_due)
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

-- The event stream is opt-in per queue (meta field `events` = its MAXLEN); read once per run.
-- Hot loops ask events_on() first, so a queue without the stream builds no event arguments.
local events_max = nil
local function events_on()
  if events_max == nil then events_max = as_int(redis.call('HGET', K_META, 'events')) or 0 end
  return events_max > 0
end
local function emit(event, id, ...)
  if events_on() then
    redis.call('XADD', K_EVENTS, 'MAXLEN', '~', events_max, '*', 'event', event, 'id', id, ...)
  end
end

-- What a job carries besides its body and run state: result, progress, logs, error history,
-- its group.
-- Every way a job is deleted (or replaced) goes through here, so none of them outlives it.
-- Most queues have none of these hashes: an EXISTS per hash costs less than passing every id
-- to an HDEL that finds no key (each argument is copied into Redis, ~0.5k instructions an id).
local function forget_extras(ids)
  for _, key in ipairs({ K_RESULTS, K_PROGRESS, K_LOGS, K_ERRORS, K_GROUP_OF, K_FLOW_OF }) do
    if redis.call('EXISTS', key) == 1 then call_chunked('HDEL', key, ids) end
  end
end

-- Ends the debounce bursts whose job is among `ids` (cancelled, drained, purged, replaced or
-- buried before it started), so no debounce key outlives its job; a burst names its job as
-- '<id>:<first add ms>'. Only on a queue that has a burst open (K_DEBOUNCE exists).
local function end_bursts(ids)
  if #ids == 0 or redis.call('EXISTS', K_DEBOUNCE) == 0 then return end
  local ended = {}
  for i, v in ipairs(hmget(K_FLOW_OF, ids)) do
    local key = v and string.match(v, '^%d*:(.+)$')
    if key then
      local held, id = redis.call('HGET', K_DEBOUNCE, key), ids[i]
      if held and string.sub(held, 1, #id + 1) == id .. ':' and not string.find(held, ':', #id + 2, true) then ended[#ended + 1] = key end
    end
  end
  if #ended > 0 then call_chunked('HDEL', K_DEBOUNCE, ended) end
end

-- Deletes jobs for good: their bodies, run states and extras, and the bursts they hold.
-- `started`: jobs that ran (complete), whose bursts ended when they were claimed.
local function forget(ids, started)
  if #ids == 0 then return end
  if not started then end_bursts(ids) end
  call_chunked('HDEL', K_JOBS, ids)
  call_chunked('HDEL', K_RUNS, ids)
  forget_extras(ids)
end

-- The retention rules of the dead and completed sets: meta `<prefix>Max` = most jobs kept,
-- `<prefix>MaxAge` = longest kept (ms). Trimmed a bounded amount per call, oldest first, so one
-- script never stalls Redis; `budget` is at least LIMIT.trim_per_run (a batch that added more trims
-- as many as it added, so a set never outgrows its cap by more than one batch).
local function trim_set(zset, prefix, now, budget, reason)
  local caps = redis.call('HMGET', K_META, prefix .. 'Max', prefix .. 'MaxAge')
  local max_count, max_age = as_int(caps[1]), as_int(caps[2])
  if not max_count and not max_age then return end
  local limit = math.max(LIMIT.trim_per_run, budget or 0)
  local victims = {}
  if max_age then
    victims = redis.call('ZRANGEBYSCORE', zset, '-inf', now - max_age, 'LIMIT', 0, limit)
  end
  if max_count and #victims < limit then
    local over = redis.call('ZCARD', zset) - #victims - max_count
    if over > 0 then
      local more = redis.call('ZRANGE', zset, #victims, #victims + math.min(over, limit - #victims) - 1)
      for _, id in ipairs(more) do victims[#victims + 1] = id end
    end
  end
  if #victims == 0 then return end
  call_chunked('ZREM', zset, victims)
  forget(victims)
  if events_on() then
    for _, id in ipairs(victims) do emit(EVENT.purged, id, 'reason', reason) end
  end
end

local function trim_dead(now, budget)
  trim_set(K_DEAD, 'dead', now, budget, 'dead set cap')
end

local function trim_completed(now, budget)
  trim_set(K_COMPLETED, 'done', now, budget, 'retention')
end

-- Whether completed jobs are kept (meta doneMax or doneMaxAge set).
local function keeps_completed()
  local caps = redis.call('HMGET', K_META, 'doneMax', 'doneMaxAge')
  return caps[1] ~= false or caps[2] ~= false
end

-- Byte order, as ZSETs order members of equal score (Lua's < uses the locale's collation).
local function lex_lt(a, b)
  if a == b then return false end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- HSET of { field, value, ... } pairs, chunked.
local function hset_pairs(key, items)
  if #items > 0 then call_chunked('HSET', key, items) end
end

-- The given ids that are in `zset`, each once, in order (one ZMSCORE per chunk).
local function members_of(zset, ids)
  local out, seen = {}, {}
  for i = 1, #ids, CHUNK do
    local part = redis.call('ZMSCORE', zset, unpack(ids, i, math.min(i + CHUNK - 1, #ids)))
    for j, s in ipairs(part) do
      local id = ids[i + j - 1]
      if s and not seen[id] then
        seen[id] = true
        out[#out + 1] = id
      end
    end
  end
  return out
end

-- One job of a get or list reply (wire.ts JOB_ROW, written through RE): `score` is the lease deadline,
-- time of death or finish time (-1 when none), extras as stored or ''.
local function job_row(out, id, state, score, body, run, due, result, progress, logs, errors, group)
  local n = #out
  out[n + RE.id] = id
  out[n + RE.state] = state or ''
  out[n + RE.score] = score or -1
  out[n + RE.body] = body or ''
  out[n + RE.run] = run or ''
  out[n + RE.due_ms] = due or -1
  out[n + RE.result] = result or ''
  out[n + RE.progress] = progress or ''
  out[n + RE.logs] = logs or ''
  out[n + RE.errors] = errors or ''
  out[n + RE.group] = group or ''
end

-- A worker's heartbeat, for the scripts whose KEYS name `workers` (ZSET expiry ms -> worker id)
-- and `worker_info` (HASH worker id -> wire.ts WORKER_ENTRY). An empty `info` takes the worker
-- out (it closed). Entries of workers that stopped beating are pruned a bounded amount per beat.
local WORKER_PRUNE = 100
local function worker_beat(now, worker, info, ttl_ms)
  if worker == '' then return end
  if info == '' then
    redis.call('ZREM', K_WORKERS, worker)
    redis.call('HDEL', K_WORKER_INFO, worker)
    return
  end
  redis.call('ZADD', K_WORKERS, now + ttl_ms, worker)
  redis.call('HSET', K_WORKER_INFO, worker, int(now) .. ':' .. info)
  local gone = redis.call('ZRANGEBYSCORE', K_WORKERS, '-inf', now, 'LIMIT', 0, WORKER_PRUNE)
  if #gone > 0 then
    call_chunked('ZREM', K_WORKERS, gone)
    call_chunked('HDEL', K_WORKER_INFO, gone)
  end
end
--[[ _groups: where a job waits, and the flow control of groups (the rate limiters are in
_rate.lua). Pulled in by `--@include _groups.lua` after _helpers.lua (and before _lifecycle.lua, which uses it) in every script that
looks a job up by id, moves a waiting job, or starts or ends a lease.
A job of a group (K_GROUP_OF holds its group id) waits, once due, in its group's line: members
of K_WAITING (all scored 0, so ordered by their bytes) that start with '<group>\0', then a
priority key (higher first), due time and add order, as ready members do. The groups that have
due jobs and room, and the lane of the jobs of no group (UNGROUPED, the empty member), take
turns in K_LANES (score = turn: a lane served goes to the tail). K_GROUPS holds each group's
state (wire.ts GROUP_STATE: running, waiting, limit, paused); a group with nothing running or
waiting, no limit of its own and no pause has no field. Meta fields: `grouped` ('1' once a job
of a group was added, so queues without groups take none of these paths), `concurrency` (most
jobs of the queue active at once) and `groupConcurrency` (most of one group, unless the group
has its own limit). Group ids never hold a control character, so '\0' ends one unambiguously.
A group's running count is changed only where a lease starts or ends (enter_active,
leave_active in _lifecycle.lua) and its waiting count only where a member of K_WAITING is added
or removed (wait_in_line, take_from_lines, unlink_waiting): verify() checks both against the sets.
K_WAITING_DUE (`<root>waiting-due`, ZSET due ms -> group id; wire.ts WAITING_DUE_SUFFIX) is what lets stats.lua say how long
the oldest due job of any group has waited without walking the groups: each group with jobs in
its line has a score at or below the due time of every job there (wait_in_line lowers it with
ZADD LT; save_groups drops a group whose line is empty). Taking jobs from a line leaves the score
low (a lower bound, not exact); stats.lua raises the first entry to its line's true earliest due
until the first entry is exact, which is then the earliest of all (see stats.lua).
]]

local UNGROUPED = ''
local HUGE = 1e15

-- A rate limit { max, per } from two stored numbers, or false.
local function rate_of(max, per)
  max, per = as_int(max), as_int(per)
  if max and per and max > 0 and per > 0 then return { max = max, per = per } end
  return false
end

-- The queue's flow settings (meta), read once per run. `rated` ('1' once a rate limit was set or
-- a RateLimitSignal held something back) and `flowed` ('1' once a job with a cost or a debounce
-- key was added) keep the rate and flow-of paths off for queues that never used them.
local flow_cache = nil
local function flow()
  if not flow_cache then
    local m = redis.call('HMGET', K_META, 'paused', 'grouped', 'concurrency', 'groupConcurrency', 'rated', 'rateMax', 'ratePer', 'groupRateMax', 'groupRatePer', 'flowed')
    flow_cache = {
      paused = m[1] == '1',
      grouped = m[2] == '1',
      limit = as_int(m[3]),
      group_limit = as_int(m[4]),
      rated = m[5] == '1',
      rate = rate_of(m[6], m[7]),
      group_rate = rate_of(m[8], m[9]),
      flowed = m[10] == '1',
    }
  end
  return flow_cache
end

-- The group machinery (GL(): the table of its functions), built on first use: every closure a script defines at its top level is
-- made again on every call (measured: ~35 ns each, more for those that capture many upvalues),
-- so a queue without groups builds none of these.
local LIB = nil
local function GL()
  if LIB then return LIB end
  local L = {}
  LIB = L
  -- Group states (wire.ts GROUP_STATE), loaded with one HMGET per batch and written back with one
  -- HSET (and one HDEL for those back to nothing) by save_groups.
  L.GROUPS, L.dirty, L.dirty_list = {}, {}, {}

  function L.parse_group(s)
    local g = { r = 0, w = 0, l = false, p = false, rate = false }
    if s then
      local r, w, l, p, rest = string.match(s, '^(%d+):(%d+):(%d*):(1?)(.*)$')
      -- A state that does not read starts from nothing (verify() reports the counts that disagree).
      if r and #r < 17 and #w < 17 and #l < 17 then
        g.r, g.w, g.p = tonumber(r), tonumber(w), p == '1'
        if l ~= '' then g.l = tonumber(l) end
        -- The optional fifth field: its own rate limit, `<max>/<per ms>`.
        local rm, rp = string.match(rest, '^:(%d+)/(%d+)$')
        if rm and #rm < 17 and #rp < 17 then g.rate = rate_of(rm, rp) end
      end
    end
    -- Its waiting count as read: save_groups drops a line that this run emptied from K_WAITING_DUE.
    g.w0 = g.w
    return g
  end

  -- Loads the states of these groups (UNGROUPED and those loaded already are skipped).
  function L.load_groups(ids)
    local need, seen = {}, {}
    for _, g in ipairs(ids) do
      if g ~= UNGROUPED and L.GROUPS[g] == nil and not seen[g] then
        seen[g] = true
        need[#need + 1] = g
      end
    end
    local vals = hmget(K_GROUPS, need)
    for i, g in ipairs(need) do L.GROUPS[g] = L.parse_group(vals[i]) end
  end

  function L.group_state(g)
    if L.GROUPS[g] == nil then L.load_groups({ g }) end
    return L.GROUPS[g]
  end

  function L.touch_group(g)
    if not L.dirty[g] then
      L.dirty[g] = true
      L.dirty_list[#L.dirty_list + 1] = g
    end
  end

  function L.save_groups()
    local sets, dels = {}, {}
    for _, g in ipairs(L.dirty_list) do
      local s = L.GROUPS[g]
      if s.r <= 0 and s.w <= 0 and not s.l and not s.p and not s.rate then
        dels[#dels + 1] = g
      else
        sets[#sets + 1] = g
        local text = int(math.max(0, s.r)) .. ':' .. int(math.max(0, s.w)) .. ':' .. (s.l and int(s.l) or '') .. ':' .. (s.p and '1' or '')
        if s.rate then text = text .. ':' .. int(s.rate.max) .. '/' .. int(s.rate.per) end
        sets[#sets + 1] = text
      end
    end
    hset_pairs(K_GROUPS, sets)
    if #dels > 0 then call_chunked('HDEL', K_GROUPS, dels) end
    -- A line this run emptied leaves the index of earliest due times (K_WAITING_DUE); a group
    -- whose line was empty already (an ack of one of its jobs) costs no call. A line filled and
    -- emptied within one run keeps a stale entry, which stats drops when it meets it.
    local emptied = {}
    for _, g in ipairs(L.dirty_list) do
      local s = L.GROUPS[g]
      if s.w <= 0 and (s.w0 or 0) > 0 then emptied[#emptied + 1] = g end
      s.w0 = s.w
    end
    if #emptied > 0 then call_chunked('ZREM', K_WAITING_DUE, emptied) end
    L.dirty, L.dirty_list = {}, {}
  end

  -- How many more jobs of the group may run now (0 while paused; HUGE without a limit).
  function L.group_room(s)
    if s.p then return 0 end
    local l = s.l or flow().group_limit
    if not l then return HUGE end
    return l - s.r
  end

  -- A group with due jobs waiting and room belongs in the rotation.
  function L.group_eligible(s)
    return s.w > 0 and L.group_room(s) > 0
  end

  -- The rate limit a group's jobs take tokens of: its own, else the queue's groupRateLimit.
  function L.group_rate(s)
    return s.rate or flow().group_rate
  end

  -- The rotation. New turns go after the last one; a lane joining keeps its place when it is in.
  function L.next_turn()
    if not L.last_turn then L.last_turn = head_score_at(K_LANES, -1) or 0 end
    L.last_turn = L.last_turn + 1
    return L.last_turn
  end

  -- Lanes join the rotation's tail in the order given (ZADD NX: those in keep their place), or
  -- (`to_tail`) move there.
  function L.lanes_add(list, to_tail)
    if #list == 0 then return end
    local adds = {}
    for _, lane in ipairs(list) do
      adds[#adds + 1] = L.next_turn()
      adds[#adds + 1] = lane
    end
    for i = 1, #adds, CHUNK do
      if to_tail then
        redis.call('ZADD', K_LANES, unpack(adds, i, math.min(i + CHUNK - 1, #adds)))
      else
        redis.call('ZADD', K_LANES, 'NX', unpack(adds, i, math.min(i + CHUNK - 1, #adds)))
      end
    end
  end

  function L.lanes_remove(list)
    if #list > 0 then call_chunked('ZREM', K_LANES, list) end
  end

  -- Priority as 7 digits that sort higher priorities first (priorities are within +-1,000,000;
  -- one outside, written by hand, is clamped: it orders first or last, and is still found).
  function L.priority_key(p)
    return string.format('%07d', math.max(0, math.min(2000000, 1000000 - p)))
  end

  -- A job's member in its group's line, from the due time and seq as plain digits.
  function L.waiting_member_text(g, priority, due_s, seq_s, id)
    return g .. '\0' .. L.priority_key(priority) .. ready_member_text(due_s, seq_s, id)
  end

  function L.waiting_member(g, priority, due, seq, id)
    return L.waiting_member_text(g, priority, int(math.max(0, due or 0)), int(math.max(0, seq or 0)), id)
  end

  -- The parts of a waiting member: group, due time, seq and id.
  function L.waiting_parts(member)
    local z = string.find(member, '\0', 1, true)
    local rest = string.sub(member, z + 8)
    return string.sub(member, 1, z - 1), tonumber(string.sub(rest, 1, 16)), tonumber(string.sub(rest, 17, 32)), string.sub(rest, 33)
  end

  -- Puts due jobs of groups in their lines: `members` are waiting members, `groups` their groups
  -- (aligned), counted as waiting there. The caller puts the groups in the rotation.
  function L.wait_in_line(members, groups)
    if #members == 0 then return end
    local adds = {}
    for _, m in ipairs(members) do
      adds[#adds + 1] = 0
      adds[#adds + 1] = m
    end
    call_chunked('ZADD', K_WAITING, adds)
    -- Each group's score in K_WAITING_DUE goes down to the earliest due time put in its line.
    local low, order = {}, {}
    for i, m in ipairs(members) do
      local g = groups[i]
      local _, due = L.waiting_parts(m)
      if low[g] == nil then order[#order + 1] = g end
      if low[g] == nil or due < low[g] then low[g] = due end
    end
    local dues = {}
    for _, g in ipairs(order) do
      dues[#dues + 1] = int(low[g])
      dues[#dues + 1] = g
    end
    for i = 1, #dues, CHUNK do
      redis.call('ZADD', K_WAITING_DUE, 'LT', unpack(dues, i, math.min(i + CHUNK - 1, #dues)))
    end
    L.load_groups(groups)
    for _, g in ipairs(groups) do
      L.GROUPS[g].w = L.GROUPS[g].w + 1
      L.touch_group(g)
    end
  end
  return L
end

-- The group of each id (UNGROUPED for none), one HMGET for all; all UNGROUPED on a queue that
-- never had a job of a group.
local function groups_of(ids)
  local out = {}
  if not flow().grouped or #ids == 0 then
    for i = 1, #ids do out[i] = UNGROUPED end
    return out
  end
  local vals = hmget(K_GROUP_OF, ids)
  for i = 1, #ids do out[i] = vals[i] or UNGROUPED end
  return out
end

-- Which set holds one job: 'scheduled', 'ready', 'waiting', 'active', 'dead', 'completed', or
-- nil; with its body and run state as stored (strings or false).
local function job_state(id)
  local body = redis.call('HGET', K_JOBS, id)
  local run = redis.call('HGET', K_RUNS, id)
  if redis.call('ZSCORE', K_SCHEDULED, id) then return PLACE.scheduled, body, run end
  if redis.call('ZSCORE', K_ACTIVE, id) then return PLACE.active, body, run end
  if redis.call('ZSCORE', K_DEAD, id) then return PLACE.dead, body, run end
  if redis.call('ZSCORE', K_COMPLETED, id) then return PLACE.completed, body, run end
  local b = parse_body(body)
  local r = parse_run(run)
  if b and r and r.t then
    if redis.call('ZSCORE', K_READY, ready_member(r.t, b.seq, id)) then return PLACE.ready, body, run end
    if flow().grouped then
      local g = redis.call('HGET', K_GROUP_OF, id)
      if g and redis.call('ZSCORE', K_WAITING, GL().waiting_member(g, b.priority, r.t, b.seq, id)) then return PLACE.waiting, body, run end
    end
  end
  return nil, body, run
end

-- Takes a job that is not active out of its set (scheduled, ready, waiting, dead or completed).
-- A job leaving its group's line is no longer counted as waiting there; its group stays in the
-- rotation until a claim finds the line empty.
local function unlink_waiting(id, state, body, run)
  if state == PLACE.completed then
    redis.call('ZREM', K_COMPLETED, id)
  elseif state == PLACE.scheduled then
    redis.call('ZREM', K_SCHEDULED, id)
  elseif state == PLACE.ready then
    redis.call('ZREM', K_READY, ready_member(parse_run(run).t, parse_body(body).seq, id))
  elseif state == PLACE.waiting then
    local g = redis.call('HGET', K_GROUP_OF, id)
    local b = parse_body(body)
    redis.call('ZREM', K_WAITING, GL().waiting_member(g, b.priority, parse_run(run).t, b.seq, id))
    local s = GL().group_state(g)
    s.w = s.w - 1
    GL().touch_group(g)
    GL().save_groups()
  elseif state == PLACE.dead then
    redis.call('ZREM', K_DEAD, id)
  end
end

-- The public state: a ready or waiting job is a scheduled job whose time has come.
local function public_state(state)
  if state == PLACE.ready or state == PLACE.waiting then return PLACE.scheduled end
  return state
end

-- A job's due time now: its score while scheduled, else its run's due time (ready, waiting,
-- active, dead); nil when neither is known.
local function current_due(id, run)
  local score = redis.call('ZSCORE', K_SCHEDULED, id)
  if score then return tonumber(score) end
  local r = parse_run(run)
  return r and r.t
end

-- Tells sleeping workers that a job may be handed out now (a slot freed, a group resumed): '0'
-- is a due time that has passed, so every worker with room claims at once.
local function wake_now()
  redis.call('PUBLISH', WAKE_CHANNEL, '0')
end
check_args()
return (function()

-- Items end at `timeout_ms` unless `flow` says they carry group, cost and debounce. EACH_SIZE is
-- the prologue's local, which each_count and each_arg read.
local with_flow = arg('flow') == '1'
if not with_flow then EACH_SIZE = E.timeout_ms + 1 end

local memo_key, memo_ms = '', 0
if arg('request_id') ~= '' then memo_key, memo_ms = K_MEMO, arg_int('memo_ms') end
if arg('schedule') ~= '' then arg_int('occurrence') end

-- Parse and check every job's arguments before anything is written, in this one pass over the
-- items: each field against its rule (wire.ts ARG_RULES, the Node library's bounds), and the
-- rules between fields. A field the job does not use (dedup_ms without a dedup key) is checked
-- too, so a call is refused for what it sends, not for what this version reads.
local jobs, ids = {}, {}
for i = 1, each_count() do
  local j = { id = each_valid(i, 'id'), data = each_arg(i, 'data'), replace = each_valid(i, 'replace') == '1' }
  local delay_s, run_at_s = each_valid(i, 'delay_ms'), each_valid(i, 'run_at')
  if (delay_s == '') == (run_at_s == '') then error('delayq: arguments delay_ms and run_at of item ' .. i .. ': exactly one must be set') end
  if delay_s ~= '' then j.delay = as_int(delay_s) else j.run_at = as_int(run_at_s) end
  j.priority = each_int(i, 'priority')
  -- The body keeps the priority as int() writes it; the argument is usually that text already.
  j.priority_s = each_arg(i, 'priority')
  if j.priority_s ~= '0' and not string.find(j.priority_s, '^%-?[1-9]%d*$') then j.priority_s = int(j.priority) end
  if each_valid(i, 'max_attempts') ~= '' then j.max = each_int(i, 'max_attempts') end
  if each_valid(i, 'timeout_ms') ~= '' then j.timeout = each_int(i, 'timeout_ms') end
  each_valid(i, 'dedup_ms')
  if each_valid(i, 'dedup_key') ~= '' then
    j.dedup = DEDUP_PREFIX .. each_arg(i, 'dedup_key')
    j.window = each_int(i, 'dedup_ms')
  end
  j.backoff, j.trace, j.name = each_arg(i, 'backoff'), each_arg(i, 'trace'), each_valid(i, 'name')
  j.group = with_flow and each_valid(i, 'group') or ''
  if with_flow then
    if each_valid(i, 'cost') ~= '' then j.cost = each_int(i, 'cost') end
    each_valid(i, 'debounce_ms')
    local debounce_max_ms = each_valid(i, 'debounce_max_ms')
    local debounce_first_ms = each_valid(i, 'debounce_first_ms')
    if each_valid(i, 'debounce_key') ~= '' then
      j.debounce = each_arg(i, 'debounce_key')
      j.delay, j.run_at = each_int(i, 'debounce_ms'), nil
      if debounce_max_ms ~= '' then j.max_wait = as_int(debounce_max_ms) end
      if debounce_first_ms ~= '' then j.given_first = as_int(debounce_first_ms) end
    end
    if each_valid(i, 'attempts_made') ~= '' then j.made = each_int(i, 'attempts_made') end
    if j.made and j.max and j.made >= j.max then error('delayq: arguments attempts_made and max_attempts of item ' .. i .. ': attempts_made must be below max_attempts, got ' .. j.made .. ' and ' .. j.max) end
  end
  jobs[i] = j
  ids[i] = j.id
end

local function due_of(j, now)
  if j.delay then return now + j.delay end
  return j.run_at
end

-- The leading flag: 1 when this add made the queue's keys (set below).
local out = reply({ made = 0 })
-- The positions are read once (locals, not a table lookup per job and field).
local AT_CODE, AT_STATE, AT_DUE, AT_HOLDER = RE.code, RE.state, RE.due_ms, RE.holder
local function answer(code, state, due, holder)
  local n = #out
  out[n + AT_CODE] = code
  out[n + AT_STATE] = state
  out[n + AT_DUE] = due
  out[n + AT_HOLDER] = holder
end

-- The job holding a dedup key: its id and the due time it was added with, or nil.
local function dedup_holder(dkey)
  local held = redis.call('GET', dkey)
  if not held then return nil, nil end
  local held_due, holder = string.match(held, '^(%d+):(.*)$')
  return holder, tonumber(held_due)
end

local function answer_deduplicated(holder, held_due)
  local state, _, run = job_state(holder)
  answer(CODE.deduplicated, public_state(state) or 'finished', (state and current_due(holder, run)) or held_due, holder)
end

local function answer_exists(id)
  local state, _, run = job_state(id)
  answer(CODE.exists, public_state(state) or PLACE.scheduled, (state and current_due(id, run)) or 0, '')
end

-- A re-sent call: the first run's answers.
local memo = memo_get(memo_key)
if memo then
  -- `<now>:<codes>:<made>[:<burst ids>]`: the burst job each debounced item went into, one a line.
  local m_now, codes, made, into = string.match(memo, '^(%d+):(%d*):?([01]?):?(.*)$')
  m_now = tonumber(m_now)
  if made == '1' then out[R.made] = 1 end
  local bursts_into = {}
  for id in string.gmatch(into or '', '[^\n]+') do bursts_into[#bursts_into + 1] = id end
  local n_into = 0
  for i, j in ipairs(jobs) do
    local code = tonumber(string.sub(codes, i, i))
    if code == CODE.added or code == CODE.replaced then
      answer(code, PLACE.scheduled, due_of(j, m_now), '')
    elseif code == CODE.debounced then
      -- The burst this add's data went into, not the key's burst now (it may have started since,
      -- and another add begun a new one).
      n_into = n_into + 1
      local id = bursts_into[n_into]
      if not id then id = string.match(redis.call('HGET', K_DEBOUNCE, j.debounce) or '', '^(.*):%d+$') or '' end
      answer(code, PLACE.scheduled, due_of(j, m_now), id)
    elseif code == CODE.deduplicated then
      local holder, held_due = nil, nil
      if j.dedup then holder, held_due = dedup_holder(j.dedup) end
      if holder then answer_deduplicated(holder, held_due) else answer(CODE.deduplicated, 'finished', due_of(j, m_now), '') end
    else
      answer_exists(j.id)
    end
  end
  return out
end

-- A retired shard, or one that is not a live shard of the producer's layout, takes no new job:
-- the producer re-reads the layout and adds where it says. Recurring schedules always add to the
-- unsharded keys, which are never retired for them.
if arg('schedule') == '' then
  local meta = redis.call('HMGET', K_META, 'moved', 'epoch')
  if meta[1] == '1' or (arg('epoch') ~= '' and meta[2] ~= arg('epoch')) then return { CODE.moved } end
end

-- A cost above a rate limit's max could never start: refused before anything is written.
for _, j in ipairs(jobs) do
  if j.cost and j.cost > 1 then
    local f = flow()
    if f.rate and j.cost > f.rate.max then return { CODE.too_costly } end
    if j.group ~= '' then
      local limit = GL().group_rate(GL().group_state(j.group))
      if limit and j.cost > limit.max then return { CODE.too_costly } end
    end
  end
end

local now = now_ms()
if arg('schedule') ~= '' then
  local occurrence = arg_int('occurrence')
  local last = as_int(redis.call('HGET', K_SCHEDULE_LAST, arg('schedule')))
  if last and last >= occurrence then return { CODE.guard_refused } end
  redis.call('HSET', K_SCHEDULE_LAST, arg('schedule'), int(occurrence))
end

-- Decide each job's fate before writing, in order, as if each job were added on its own: a
-- job repeated in the call sees the earlier one as existing, and a dedup key taken by an
-- earlier job holds for the later ones. Only jobs written take a sequence number.
local stored = hmget(K_JOBS, ids)
local writes = 0
local codes = {}
local folded_into = {} -- the burst job of each item answered debounced, in order (the request memo)
local pending, taken = {}, {}
local bursts = {} -- debounce key -> { id, first } of the burst this call started or folded into
local burst_keys, burst_order = {}, {} -- debounce key -> '<id>:<first>' to write, and the keys in order

-- The burst a debounced add joins: its key's job while that job still waits and still carries the
-- key (a job replaced since by an add without it, or a new job that took a drained one's id, is
-- no burst), as this call left it or as stored; nil when the add starts a new burst. Made only
-- for a call whose items carry debounce fields (a closure costs every call).
local burst_of = with_flow and function(key)
  local b = bursts[key]
  if not b then
    local held = redis.call('HGET', K_DEBOUNCE, key)
    if not held then return nil end
    local id, first = string.match(held, '^(.*):(%d+)$')
    if not id or #first > 16 then return nil end
    b = { id = id, first = tonumber(first) }
  end
  local p = pending[b.id]
  if p then
    if p.debounce == key then return b end
    return nil
  end
  local state = job_state(b.id)
  if state ~= PLACE.scheduled and state ~= PLACE.ready and state ~= PLACE.waiting then return nil end
  local flow_of = redis.call('HGET', K_FLOW_OF, b.id)
  if flow_of and string.match(flow_of, '^%d*:(.*)$') == key then return b end
  return nil
end

for i, j in ipairs(jobs) do
  local folded = false
  if j.debounce then
    local burst = burst_of(j.debounce)
    if burst and (not j.max_wait or now < burst.first + j.max_wait) then
      -- Folded into the burst's waiting job: it takes this add's data and options (and, when this
      -- call started the burst, the writing of its key).
      j.id, j.replace, j.first, folded = burst.id, true, burst.first, true
      j.starts_burst = burst.new
    else
      -- A new burst begins now, or (a burst moved off a retired shard) when its first add was.
      j.first, j.starts_burst = math.min(j.given_first or now, now), true
    end
    j.burst_before = bursts[j.debounce]
    bursts[j.debounce] = { id = j.id, first = j.first, new = j.starts_burst }
  end
  j.due = due_of(j, now)
  if j.debounce and j.max_wait and j.due > j.first + j.max_wait then j.due = j.first + j.max_wait end
  local prev = pending[j.id]
  local exists = prev ~= nil or folded or stored[i] ~= false
  local code = CODE.added
  if j.dedup then
    local t = taken[j.dedup]
    if t and t.id ~= j.id then
      code = CODE.deduplicated
      answer(code, PLACE.scheduled, pending[t.id].due, t.id)
    elseif not t then
      local holder, held_due = dedup_holder(j.dedup)
      if holder and (holder ~= j.id or not exists) then
        code = CODE.deduplicated
        -- A holder added again earlier in this call is answered as it will be written.
        if pending[holder] then answer(code, PLACE.scheduled, pending[holder].due, holder) else answer_deduplicated(holder, held_due) end
      end
    end
  end
  if code == CODE.added and exists then
    if prev then
      if j.replace then
        -- Replaces the earlier job of this call, which is then never written.
        code = CODE.replaced
        prev.superseded = true
        j.state, j.delete_stored, j.old_body, j.old_run = prev.state, prev.delete_stored, prev.old_body, prev.old_run
        -- A burst the earlier job started ends with it, as if each add ran on its own (one that
        -- folded into that burst keeps it).
        if not folded and prev.debounce and burst_keys[prev.debounce] == j.id .. ':' .. int(prev.first) then burst_keys[prev.debounce] = false end
      else
        code = CODE.exists
        answer(code, PLACE.scheduled, prev.due, '')
      end
    else
      local state, body, run = job_state(j.id)
      if not j.replace or state == PLACE.active then
        code = CODE.exists
        answer_exists(j.id)
      else
        code = CODE.replaced
        j.state, j.delete_stored, j.old_body, j.old_run = state, true, body, run
      end
    end
  end
  if code == CODE.added or code == CODE.replaced then
    writes = writes + 1
    pending[j.id] = j
    if j.dedup and not taken[j.dedup] and not dedup_holder(j.dedup) then taken[j.dedup] = j end
    -- A burst this call starts is written even when a later item of the call replaces its job
    -- (same id): as if each add ran on its own.
    if j.starts_burst then
      if not burst_keys[j.debounce] then burst_order[#burst_order + 1] = j.debounce end
      burst_keys[j.debounce] = j.id .. ':' .. int(j.first)
    end
    if folded then
      j.folded = true
      answer(CODE.debounced, PLACE.scheduled, j.due, j.id)
    else
      answer(code, PLACE.scheduled, j.due, '')
    end
  elseif j.debounce and not folded then
    -- Not written (its id exists): it starts no burst, and the key's burst is what it was before
    -- this item (one an earlier item of this call started, or the stored one).
    bursts[j.debounce] = j.burst_before
  end
  j.code = code
  codes[i] = code
  if folded and (code == CODE.replaced) then codes[i] = CODE.debounced end
  if codes[i] == CODE.debounced then folded_into[#folded_into + 1] = j.id end
end

local seq = 0
if writes > 0 then
  local made
  seq, made = take_seq(writes)
  if made then out[R.made] = 1 end
end
local dedup_until = 0
local bodies, scheduled, replaced, grouped, flows, burst_starts, made_runs = {}, {}, {}, {}, {}, {}, {}
local unfolded = {} -- replaced jobs not folded into their own burst: their bursts end
-- Numbers as text once, not per job: Redis turns a Lua number into text at each call anyway,
-- and string.format costs ~2.7k instructions a number (bench/script-cost.ts).
local now_s = int(now)
local due_text = {}
local earliest = nil
for _, j in ipairs(jobs) do
  if j.code == CODE.added or j.code == CODE.replaced then
    seq = seq + 1
    -- The due time is kept with the id so a duplicate can be told when the first one ran.
    if taken[j.dedup or ''] == j then
      redis.call('SET', j.dedup, int(j.due) .. ':' .. j.id, 'PX', j.window)
      if now + j.window > dedup_until then dedup_until = now + j.window end
    end
    if not j.superseded then
      if j.delete_stored then
        unlink_waiting(j.id, j.state, j.old_body, j.old_run)
        replaced[#replaced + 1] = j.id
        -- A job folded into its burst stays that burst's job; any other replaced job ends its own.
        if not j.folded then unfolded[#unfolded + 1] = j.id end
      end
      if j.group ~= '' then
        grouped[#grouped + 1] = j.id
        grouped[#grouped + 1] = j.group
      end
      if (j.cost and j.cost > 1) or j.debounce then
        flows[#flows + 1] = j.id
        flows[#flows + 1] = ((j.cost and j.cost > 1) and int(j.cost) or '') .. ':' .. (j.debounce or '')
      end

      bodies[#bodies + 1] = j.id
      bodies[#bodies + 1] = encode_body(int(seq), now_s, j.priority_s, j.max and int(j.max), j.timeout and int(j.timeout), j.backoff, j.trace, j.name, j.data)
      -- Jobs of one add often share a due time: its text is made once.
      local due_s = due_text[j.due]
      if not due_s then
        due_s = int(j.due)
        due_text[j.due] = due_s
      end
      scheduled[#scheduled + 1] = due_s
      scheduled[#scheduled + 1] = j.id
      -- Attempts made before it was added: a run state that counts on from them (RUN_STATE).
      if j.made and j.made > 0 then
        made_runs[#made_runs + 1] = j.id
        made_runs[#made_runs + 1] = int(j.made) .. ':' .. due_s .. '::::'
      end
      if not earliest or j.due < earliest then earliest = j.due end
      if events_on() then emit(EVENT.added, j.id, 'due', int(j.due)) end
    end
  end
end
-- A replaced job starts afresh: no attempts, no last error, result, progress, logs or error
-- history (it is a new job that happens to have the old one's id).
if #replaced > 0 then
  call_chunked('HDEL', K_RUNS, replaced)
  end_bursts(unfolded)
  forget_extras(replaced)
end
-- After the replaced jobs' run states are gone: a replacing job's attempts made are its own.
hset_pairs(K_RUNS, made_runs)
if dedup_until > 0 then
  local known = as_int(redis.call('HGET', K_META, 'dedupUntil'))
  if not known or dedup_until > known then redis.call('HSET', K_META, 'dedupUntil', int(dedup_until)) end
end
hset_pairs(K_JOBS, bodies)
if #flows > 0 then
  hset_pairs(K_FLOW_OF, flows)
  if not flow().flowed then redis.call('HSET', K_META, 'flowed', '1') end
end
local bursts_ended = {}
for _, key in ipairs(burst_order) do
  if burst_keys[key] then
    burst_starts[#burst_starts + 1] = key
    burst_starts[#burst_starts + 1] = burst_keys[key]
  else
    bursts_ended[#bursts_ended + 1] = key
  end
end
hset_pairs(K_DEBOUNCE, burst_starts)
if #bursts_ended > 0 then call_chunked('HDEL', K_DEBOUNCE, bursts_ended) end
if #grouped > 0 then
  hset_pairs(K_GROUP_OF, grouped)
  if not flow().grouped then redis.call('HSET', K_META, 'grouped', '1') end
end
schedule_many(scheduled, earliest)
local memo_into = ''
if #folded_into > 0 then memo_into = ':' .. table.concat(folded_into, '\n') end
memo_set(memo_key, int(now) .. ':' .. table.concat(codes) .. ':' .. out[R.made] .. memo_into, memo_ms)
return out

end)()
