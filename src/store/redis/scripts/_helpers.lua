--[[ _helpers: pulled into every script by its `--@include _helpers.lua` line, after the
script's generated prologue (wire.ts luaPrologue), which names its KEYS and ARGV:
  K_SCHEDULED (ZSET due ms -> id)   K_READY (ZSET -priority -> due|seq|id)
  K_ACTIVE (ZSET lease deadline -> id)   K_DEAD (ZSET time of death -> id)
  K_SEQ (STRING counter: FIFO order and lease tokens; obliterate leaves it at a floor, expiring,
    so a later life of the queue never hands out a token a stale holder still has: take_seq)
  K_JOBS (HASH id -> packed body, wire.ts JOB_BODY: written by add, never changed)
  K_RUNS (HASH id -> run state, wire.ts RUN_STATE: present once the job left scheduled)
    (both also hold HT_FIELD, which is no job: hset_pairs; so do K_GROUP_OF, K_FLOW_OF and
    K_GROUPS, where it is no group)
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

-- Script arguments' whole numbers already read (text -> number), kept from call to call by the
-- library (an EVAL script starts afresh): a worker sends the same count, lease and limits with
-- every claim, and as_int costs ~5k instructions (a pattern and strtod) where a look-up costs a
-- tenth of that (a one-job claim: 445k -> 424k). The one state a call leaves to the next, and
-- safe to: an entry is as_int of its key, whatever queue or call put it there
-- (test/unit/lua-call-state.test.ts names it). Only numbers as_int took go in; at 256 it starts
-- over, so it stays small whatever the arguments. Items' numbers (due times, mostly all
-- different) are not kept. Its number keys hold text() of them (below).
local arg_numbers, arg_numbers_size = {}, 0
local function arg_as_int(s)
  -- Its number keys are text()'s (ARGV holds only strings; this keeps it so).
  if type(s) ~= 'string' then return as_int(s) end
  local n = arg_numbers[s]
  if n ~= nil then return n end
  n = as_int(s)
  if n ~= nil then
    if arg_numbers_size >= 256 then arg_numbers, arg_numbers_size = {}, 0 end
    arg_numbers[s] = n
    arg_numbers_size = arg_numbers_size + 1
  end
  return n
end

local function arg(name)
  return ARGV[A[name]]
end

-- The script's whole-number arguments as check_args read them (name -> number), so arg_int does
-- not read them a second time.
local ARG_INTS = nil

-- A whole-number argument; a bad one fails the script before it writes anything.
local function arg_int(name)
  local known = ARG_INTS and ARG_INTS[name]
  if known then return known end
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


-- reply(named), a reply's fixed fields by name, is the prologue's (wire.ts luaReply).

-- Lua's tostring gives 14 significant digits; integers go to Redis through %d so none is lost.
local function int(x)
  return string.format('%d', x)
end

-- Whole numbers from 0 to 4095 as int() writes them: counts, limits and ranks a script passes to
-- redis.call or writes into text. Redis writes a Lua number passed to redis.call with %.17g
-- (~2.5k instructions), int() costs ~1.5k, a look-up a few dozen. Kept in arg_numbers (its
-- number keys; its text keys are arg_as_int's), so the library keeps one memo, not two: an entry
-- is int() of its key, whatever call made it, and these keys are bounded by their range.
local function text(n)
  local s = arg_numbers[n]
  if s then return s end
  s = int(n)
  if n >= 0 and n < 4096 and n % 1 == 0 then arg_numbers[n] = s end
  return s
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
    local n
    if item == nil then n = arg_as_int(v) else n = as_int(v) end
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
    -- Printable ASCII (most ids) passes both control-character checks in one look.
    if string.find(v, '[^\32-\126]') and (string.find(v, '[%z\1-\31\127]') or string.find(v, '\194[\128-\159]')) then refuse(name, item, 'must not contain control characters', v) end
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

-- The script's own arguments are checked by its check_args (wire.ts luaArgChecks), as it enters.

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
  local base = redis.call('INCRBY', K_SEQ, text(n)) - n
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
  -- Most jobs have priority 0: no tonumber for it.
  if q and #q < 17 and #p < 18 then return q, (p == '0' and 0 or tonumber(p)), nil end
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

-- The scheduled set's members (wire.ts SCHEDULED_MEMBER). A queue whose meta says `ordered` (a
-- queue made by this version, or one `migrate` converted) writes each member as
-- '\1' .. <the length of seq, as the character 48 + n> .. <seq> .. <id>: within one due time,
-- members then sort by add order (a shorter number has a smaller length character), so the set
-- alone keeps the hand-out order of a queue without priorities, and its claims need no ready
-- set. An id never holds a control character, so the leading '\1' tells this form from the
-- other one, the id alone, which older versions wrote (and still write, and read) and which
-- every read here takes too.
-- `ordered` is '1' while writes take the new form and `migrate` converts the old members, '2'
-- once every member has it (claims may then hand out in the set's order).
local order_cache = nil
-- The functions of the scheduled members (one top-level name: the library's are counted).
local SCHED = {}
-- From the meta fields as read (a caller that reads meta anyway primes it: SCHED.prime).
-- `prioritized`: claims order due jobs through the ready set (meta `prioritized` '1', or '2' while
-- migrate checks whether a job with a priority is left); `marked`: the mark is '1', so an add of a
-- job with a priority need not write it (a '2' it must turn back into '1': the check then keeps it).
-- `ranked`: how many jobs with a priority other than 0 have not ended (meta `ranked`, kept with
-- the mark: 0 and no mark when none), or nil when the mark is not counted: a version before the
-- count marked the queue (its jobs' ends were never counted off), migrate is checking ('2'), or
-- the count does not read. Only a counted mark comes off when its jobs end (SCHED.rank);
-- an uncounted one only by migrate's walk, which then starts the count at 0.
-- `indexed`: every scheduled job with a priority is in K_RANKED (meta `rankedSet` '1', set when
-- the count starts from 0 here, gone with it): claims then take those jobs out of the scheduled
-- set by the index and leave the rest there (CLAIM.pick_ranked), not every due job through the
-- ready set.
function SCHED.prime(ordered, prioritized, ranked, ranked_set)
  local count = nil
  -- No field reads as false from HMGET, nil from flow()'s HGETALL.
  if not prioritized then
    count = 0
  elseif prioritized == '1' then
    count = as_int(ranked)
    if count and count < 1 then count = nil end
  end
  order_cache = {
    writes = ordered == '1' or ordered == '2',
    complete = ordered == '2',
    prioritized = prioritized == '1' or prioritized == '2',
    marked = prioritized == '1',
    ranked = count,
    indexed = count ~= nil and count > 0 and ranked_set == '1',
  }
end

function SCHED.order()
  if not order_cache then
    local m = redis.call('HMGET', K_META, 'ordered', 'prioritized', 'ranked', 'rankedSet')
    SCHED.prime(m[1], m[2], m[3], m[4])
  end
  return order_cache
end

-- A queue made by this call keeps add order in its scheduled members from the start.
function SCHED.made()
  redis.call('HSET', K_META, 'ordered', '2')
  order_cache = nil
end

-- `n` more (or, below 0, fewer) jobs with a priority that have not ended: an add, a dead job
-- retried, a job ended or replaced. Due jobs go through the ready set while any is left; the
-- count reaching 0 takes the mark off, so a queue whose jobs with a priority all ended claims
-- its backlog in one pass again. An uncounted mark is left as it is ('2' turns back into '1' on
-- a job more, so migrate's check starts again).
function SCHED.rank(n)
  if n == 0 then return end
  local order = SCHED.order()
  local count = order.ranked
  if not count then
    if n > 0 and not order.marked then
      redis.call('HSET', K_META, 'prioritized', '1')
      order.prioritized, order.marked = true, true
    end
    return
  end
  local from = count
  count = count + n
  if count > 0 then
    if from == 0 then
      -- The count starts here, so every job with a priority from now on is indexed (K_RANKED)
      -- by the writes of this version. A set left from before (entries whose job left the
      -- scheduled set by an older version's claim) goes first.
      redis.call('DEL', K_RANKED)
      redis.call('HSET', K_META, 'prioritized', '1', 'ranked', text(count), 'rankedSet', '1')
      order.indexed = true
    else
      redis.call('HSET', K_META, 'prioritized', '1', 'ranked', text(count))
    end
    order.prioritized, order.marked, order.ranked = true, true, count
  elseif count == 0 then
    redis.call('HDEL', K_META, 'prioritized', 'ranked', 'rankedSet')
    redis.call('DEL', K_RANKED)
    order.prioritized, order.marked, order.ranked, order.indexed = false, false, 0, false
  else
    -- Below 0 only when the count was wrong (a job an older version added with a priority ended
    -- here): the mark stays, uncounted, until migrate's check finds no job with a priority.
    redis.call('HSET', K_META, 'prioritized', '1')
    redis.call('HDEL', K_META, 'ranked', 'rankedSet')
    order.prioritized, order.marked, order.ranked, order.indexed = true, true, nil, false
  end
end

-- The index of scheduled jobs with a priority (K_RANKED: due ms -> the job's scheduled member).
-- Kept while the queue has a job with a priority (`prioritized`), by whoever writes or removes a
-- scheduled member; a plain queue pays nothing for it. A member whose job left the scheduled
-- set another way (an older version's claim) is dropped by the claim that meets it.
function SCHED.unindex(members)
  if #members > 0 and SCHED.order().prioritized then call_chunked('ZREM', K_RANKED, members) end
end

-- Whether a stored body has a priority other than 0, as body_order reads it (the test an add and
-- an end count by: priority 0 as add writes it, with no capture, most jobs).
function SCHED.has_priority(body)
  if not body or string.find(body, '^%d+:%d+:0:') then return false end
  local _, priority = body_order(body)
  return priority ~= nil and priority ~= 0
end

-- How many of `ids`' bodies (as stored) have a priority other than 0, as body_order reads it (an
-- add counts by the same reading): read only while the queue counts some, so a plain queue's
-- ends read nothing for it. A body that does not read is not counted off: the count may stay
-- high (the ready set a while longer), never low (a priority passed over).
function SCHED.ranked_of(ids)
  local count = SCHED.order().ranked
  if not count or count == 0 or #ids == 0 then return 0 end
  local n, find = 0, string.find
  for _, body in ipairs(hmget(K_JOBS, ids)) do
    -- SCHED.has_priority, written out (an ack runs it for every job): priority 0 as add writes
    -- it, with no capture (most jobs); any other through body_order.
    if body and not find(body, '^%d+:%d+:0:') then
      local _, priority = body_order(body)
      if priority and priority ~= 0 then n = n + 1 end
    end
  end
  return n
end

-- What comes before the seq in a member whose seq has `seq_len` digits.
function SCHED.member_head(seq_len)
  return '\1' .. string.char(48 + seq_len)
end

function SCHED.member(seq_s, id)
  return SCHED.member_head(#seq_s) .. seq_s .. id
end

-- The job id of a scheduled member of either form.
function SCHED.id(member)
  if string.byte(member, 1) ~= 1 then return member end
  return string.sub(member, 3 + string.byte(member, 2) - 48)
end

-- The new-form member of a job from its stored body (the seq its header starts with), or nil.
function SCHED.member_of(id, body)
  local seq_s = type(body) == 'string' and string.match(body, '^(%d+):')
  if seq_s and #seq_s < 17 then return SCHED.member(seq_s, id) end
  return nil
end

-- The member a job gets in the scheduled set, from its stored body: the new form on a queue that
-- writes it, else the id. For a caller that has read the body already, so schedule_many (its
-- `members`) does not read it again.
function SCHED.at(id, body)
  if SCHED.order().writes then return SCHED.member_of(id, body) or id end
  return id
end

-- A job's score in the scheduled set under either form (text), or false. `body` is the stored
-- body (read here when nil).
function SCHED.score(id, body)
  if body == nil then body = redis.call('HGET', K_JOBS, id) end
  local member = SCHED.member_of(id, body)
  local score = member and redis.call('ZSCORE', K_SCHEDULED, member)
  if not score then score = redis.call('ZSCORE', K_SCHEDULED, id) end
  return score
end

-- Takes a job out of the scheduled set, whichever form its member has (and out of its index).
function SCHED.remove(id, body)
  local member = SCHED.member_of(id, body)
  if member then
    redis.call('ZREM', K_SCHEDULED, member, id)
    SCHED.unindex({ member, id })
  else
    redis.call('ZREM', K_SCHEDULED, id)
    SCHED.unindex({ id })
  end
end

-- The score at a rank (the first when `rank` is nil; -1: the last), or nil when the set is
-- shorter. One name for both: the library's top-level names are counted (lua-limits.test.ts).
local function head_score(zset, rank)
  local head = redis.call('ZRANGE', zset, rank or '0', rank or '0', 'WITHSCORES')
  if head[2] then return tonumber(head[2]) end -- ZSET scores are always valid numbers
  return nil
end

-- Workers sleep until the earliest due time they know of; tell them when it moved earlier.
local function wake_if_earlier(prev_head, due)
  if prev_head == nil or due < prev_head then
    redis.call('PUBLISH', WAKE_CHANNEL, int(due))
  end
end

-- Puts jobs into the scheduled set: `pairs_` is { due, id, due, id, ... }, each due a number,
-- or its text as int() writes it when the caller passes the earliest due as `min_due`. With
-- `members` the pairs hold scheduled members already (add.lua makes them as it writes the
-- bodies); else the ids become members of the form the queue writes (their bodies read once).
-- On a queue with a job with a priority, those with one go into its index too (K_RANKED):
-- `ranked` says which (a list of the positions of such pairs' jobs, 1 for the first pair; an add
-- knows), else their bodies are read for it.
local function schedule_many(pairs_, min_due, members, ranked)
  if #pairs_ == 0 then return end
  local order = SCHED.order()
  local bodies = nil
  if not members and order.writes then
    local ids = {}
    for i = 2, #pairs_, 2 do ids[#ids + 1] = pairs_[i] end
    bodies = hmget(K_JOBS, ids)
    for k, body in ipairs(bodies) do
      local member = SCHED.member_of(ids[k], body)
      if member then pairs_[2 * k] = member end
    end
  end
  if order.prioritized then
    if not ranked then
      ranked = {}
      if not bodies then
        local ids = {}
        for i = 2, #pairs_, 2 do ids[#ids + 1] = SCHED.id(pairs_[i]) end
        bodies = hmget(K_JOBS, ids)
      end
      for k, body in ipairs(bodies) do
        if SCHED.has_priority(body) then ranked[#ranked + 1] = k end
      end
    end
    local index = {}
    for _, k in ipairs(ranked) do
      index[#index + 1] = pairs_[2 * k - 1]
      index[#index + 1] = pairs_[2 * k]
    end
    if #index > 0 then call_chunked('ZADD', K_RANKED, index) end
  end
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
  redis.call('SET', memo_key, value, 'PX', text(ttl_ms))
end

-- The event stream is opt-in per queue (meta field `events` = its MAXLEN); read once per run.
-- Hot loops ask events_on() first, so a queue without the stream builds no event arguments.
local events_max = nil
local function events_on()
  if events_max == nil then events_max = as_int(redis.call('HGET', K_META, 'events')) or 0 end
  return events_max > 0
end
-- The stream's switch from a read of the meta hash the caller makes anyway (its `events` field).
local function events_from(meta_events)
  events_max = as_int(meta_events) or 0
end
local function emit(event, id, ...)
  if events_on() then
    redis.call('XADD', K_EVENTS, 'MAXLEN', '~', events_max, '*', 'event', event, 'id', id, ...)
  end
end

-- A job added (add.lua, _add_packed.lua): its event, built only while the stream is on. One
-- name for the three it reads, as add.lua's function is near Lua's 60 upvalues.
local function emit_added(id, due_s)
  if events_on() then emit(EVENT.added, id, 'due', due_s) end
end

-- A key of holds (wire.ts HOLD_SUFFIXES: held, holds, deps, dependents, results) of this call's
-- queue, built from its root like K_HISTORY: made only by a queue that holds a job.
local function hold_key(name)
  return ROOT .. HOLD_KEY[name]
end

-- What a job carries besides its body and run state: result, progress, logs, error history,
-- its group.
-- Every way a job is deleted (or replaced) goes through here, so none of them outlives it.
-- Most queues have none of these hashes: an EXISTS per hash costs less than passing every id
-- to an HDEL that finds no key (each argument is copied into Redis, ~0.5k instructions an id),
-- and one EXISTS of them all (it counts those that exist) settles the common case in one call
-- instead of nine (~5k instructions each: ~40k of a one-job ack's ~280k).
local function forget_extras(ids)
  local holds = ROOT .. HOLD_KEY.holds
  -- The likeliest first (a queue with groups has group-of, one with costs or debounce flow-of):
  -- the one EXISTS says how many of these keys exist, and the look key by key stops at the last
  -- of them, so a queue with groups asks three commands, not ten.
  local extras = { K_GROUP_OF, K_FLOW_OF, K_RESULTS, K_ERRORS, K_LOGS, K_PROGRESS, hold_key('signals'), hold_key('delivered') }
  local left = redis.call('EXISTS', holds, unpack(extras))
  if left == 0 then return end
  for _, key in ipairs(extras) do
    if redis.call('EXISTS', key) == 1 then
      call_chunked('HDEL', key, ids)
      left = left - 1
      if left == 0 then return end
    end
  end
  -- Left over: `holds` exists (the count has every extra that does).
  -- Holds (_holds.lua): the job's hold, its dependencies, how they ended, its place in `held`.
  -- Its dependents, if any, were told by finish. A dependency that has not ended stops naming it
  -- in `dependents`: a job added later under the same id must not hear of that end.
  local deps_key = ROOT .. HOLD_KEY.deps
  local dependents = ROOT .. HOLD_KEY.dependents
  local deps, fields, gone = hmget(deps_key, ids), {}, {}
  for _, id in ipairs(ids) do gone[id] = true end
  for i, id in ipairs(ids) do
    for dep in string.gmatch(deps[i] or '', '[^\t]+') do
      fields[#fields + 1] = id .. '\t' .. dep
      local waiting = redis.call('HGET', dependents, dep)
      if waiting then
        local kept = {}
        for w in string.gmatch(waiting, '[^\t]+') do
          if not gone[w] then kept[#kept + 1] = w end
        end
        if #kept > 0 then redis.call('HSET', dependents, dep, table.concat(kept, '\t')) else redis.call('HDEL', dependents, dep) end
      end
    end
  end
  if #fields > 0 then call_chunked('HDEL', ROOT .. HOLD_KEY.results, fields) end
  call_chunked('HDEL', holds, ids)
  call_chunked('HDEL', deps_key, ids)
  call_chunked('ZREM', ROOT .. HOLD_KEY.held, ids)
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
-- A write of a hash with a field per job (jobs, runs, group-of, flow-of) or per group (groups)
-- also sets HT_FIELD (wire.ts HASHTABLE_FIELD), first in the same HSET: Redis reads every value
-- before it writes, so its long value makes the hash a hashtable (converting a listpack an older
-- version left) before the other fields go in, and a lookup no longer reads every field. In the
-- same call, as a call of its own cost a one-job claim 6%.
local function hset_pairs(key, items)
  local n = #items
  if n == 0 then return end
  if key ~= K_JOBS and key ~= K_RUNS and key ~= K_GROUP_OF and key ~= K_FLOW_OF and key ~= K_GROUPS then return call_chunked('HSET', key, items) end
  local first = math.min(CHUNK, n)
  redis.call('HSET', key, HT_FIELD, HT_VALUE, unpack(items, 1, first))
  if first < n then call_chunked('HSET', key, { unpack(items, first + 1, n) }) end
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
