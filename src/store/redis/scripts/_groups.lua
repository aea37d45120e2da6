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

-- The texts of n whole numbers from `first` on, as int() writes them, made by appending a digit:
-- one string.format per ten numbers (glibc's formatting is most of what int() costs). Out of
-- range, each is int()'s; a first number that is not a whole one gives the numbers themselves.
local function int_texts(first, n)
  local out = {}
  if first % 1 ~= 0 then
    for i = 1, n do out[i] = first + i - 1 end
    return out
  end
  -- A few: int() each costs less than the digits' table.
  if n < 4 or first < 0 or first + n > 2 ^ 53 then
    for i = 1, n do out[i] = int(first + i - 1) end
    return out
  end
  local DIGITS = { [0] = '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' }
  local hi = math.floor(first / 10)
  local lo = first - hi * 10
  local hi_s = hi > 0 and int(hi) or ''
  for i = 1, n do
    out[i] = hi_s .. DIGITS[lo]
    lo = lo + 1
    if lo == 10 then
      lo, hi = 0, hi + 1
      hi_s = int(hi)
    end
  end
  return out
end

-- A rate limit { max, per } from two stored numbers, or false.
local function rate_of(max, per)
  max, per = as_int(max), as_int(per)
  if max and per and max > 0 and per > 0 then return { max = max, per = per } end
  return false
end

-- The queue's flow settings (meta), read once per run. `rated` ('1' once a rate limit was set or
-- a RateLimitSignal held something back) and `flowed` ('1' once a job with a cost or a debounce
-- key was added) keep the rate and flow-of paths off for queues that never used them.
-- One HGETALL, not an HMGET of the sixteen names: Redis converts every name sent and every
-- answer, absent ones too, and a queue's meta holds a few short fields (an HMGET of sixteen cost
-- ~22k instructions, the HGETALL and the loop ~9k; a one-job claim 396k -> 375k).
local flow_cache = nil

-- Jobs of a group, and jobs with a cost or a debounce key, counted (below): one top-level name
-- for all its functions. A kind: its meta mark and count, and the fields flow() keeps them in;
-- LIVE.key, the hash whose entries are its jobs (an entry outlives its job's death, so a retry
-- counts it again).
local LIVE = {
  GROUP = { mark = 'grouped', field = 'groupJobs', f_mark = 'grouped', f_count = 'group_jobs' },
  FLOW = { mark = 'flowed', field = 'flowJobs', f_mark = 'flowed', f_count = 'flow_jobs' },
}

-- A count of jobs that have not ended, from meta as read: 0 on a queue never marked (`mark` not
-- '1'); nil (uncounted) on one marked without a count that reads.
function LIVE.of_meta(mark, count)
  if mark ~= '1' then return 0 end
  local n = as_int(count)
  if n and n >= 0 then return n end
  return nil
end

local function flow()
  if not flow_cache then
    local flat, m = redis.call('HGETALL', K_META), {}
    for i = 1, #flat, 2 do
      m[flat[i]] = flat[i + 1]
    end
    -- The scheduled set's order (SCHED) and the event stream's switch (events_on) from the same
    -- read: a call pays for one read of the meta hash, not one per thing it asks.
    SCHED.prime(m.ordered, m.prioritized, m.ranked, m.rankedSet)
    if events_max == nil then events_from(m.events) end
    flow_cache = {
      paused = m.paused == '1',
      grouped = m.grouped == '1',
      -- How many jobs of a group have not ended (meta `groupJobs`, LIVE below), or nil when not
      -- counted (a version before the count marked the queue, or the count does not read).
      group_jobs = m.grouped ~= '1' and 0 or LIVE.of_meta(m.grouped, m.groupJobs),
      limit = m.concurrency and as_int(m.concurrency),
      group_limit = m.groupConcurrency and as_int(m.groupConcurrency),
      rated = m.rated == '1',
      rate = (m.rateMax or m.ratePer) and rate_of(m.rateMax, m.ratePer) or false,
      group_rate = (m.groupRateMax or m.groupRatePer) and rate_of(m.groupRateMax, m.groupRatePer) or false,
      flowed = m.flowed == '1',
      -- The same for jobs with a cost or a debounce key (meta `flowJobs`).
      flow_jobs = m.flowed ~= '1' and 0 or LIVE.of_meta(m.flowed, m.flowJobs),
      holds = m.holds == '1',
      -- A retention rule for completed jobs (doneMax / doneMaxAge): acked jobs are kept.
      keeps_completed = m.doneMax ~= nil or m.doneMaxAge ~= nil,
    }
  end
  return flow_cache
end

-- Features a queue used once need not cost it for good. Meta `grouped` = '1' stays once a job of
-- a group was added (reads answer groups by it), `flowed` = '1' once a job with a cost or a
-- debounce key was; beside each, a count of such jobs that have not ended (scheduled, waiting,
-- held or active): `groupJobs`, `flowJobs`. While a count is 0 no job needs what the mark turns
-- on: with no job of a group left, claims take the path of a queue without groups (the one pass
-- when nothing else stands in the way) and acks give back no group's slot; with no job with a cost
-- or a debounce key left, claims read no job's cost or burst. Adds and dead-job retries count on,
-- `finish` counts off (reading the entries only while the count is above 0), a replaced job that
-- had not ended counts off. A queue marked by a version before the counts has none (nil): it
-- pays as before until a claim finds no such job at all (LIVE.settle), which starts the count at
-- 0. A count that would go below 0 was wrong: it is dropped (uncounted again), never read as 0.
-- Looked up as a call runs, not kept in the kind: the library makes these tables once, at load,
-- and points the key names at each call's keys as it enters.
function LIVE.key(kind)
  if kind == LIVE.GROUP then return K_GROUP_OF end
  return K_FLOW_OF
end

-- Whether claims take turns and acks give group slots back: a job of a group may be waiting or
-- running, or the queue has rate limits (a claim's turns also give groups their spent tokens
-- back, which rateStatus reads: such a queue never took the one pass anyway).
function LIVE.turns(f)
  return f.grouped and (f.group_jobs ~= 0 or f.rated)
end

-- Whether a claim reads its jobs' costs and bursts: one with a cost or a debounce key may be
-- waiting.
function LIVE.flows(f)
  return f.flowed and f.flow_jobs ~= 0
end

-- `n` more (or, below 0, fewer) jobs of `kind` that have not ended; the first marks the queue.
function LIVE.count(kind, n)
  if n == 0 then return end
  local f = flow()
  local c = f[kind.f_count]
  if c == nil then return end
  c = c + n
  if c < 0 then
    redis.call('HDEL', K_META, kind.field)
    f[kind.f_count] = nil
    return
  end
  f[kind.f_count] = c
  if f[kind.f_mark] then
    redis.call('HSET', K_META, kind.field, text(c))
  else
    redis.call('HSET', K_META, kind.mark, '1', kind.field, text(c))
    f[kind.f_mark] = true
  end
end

-- How many of `ids` have an entry in `kind`'s hash (`always`: whatever the count; else only while
-- it is above 0, so a queue with none pays nothing).
function LIVE.among(kind, ids, always)
  local f = flow()
  local c = f[kind.f_count]
  if #ids == 0 or not f[kind.f_mark] or c == nil or (c == 0 and not always) then return 0 end
  local vals = LIVE.read_again(kind, ids) or hmget(LIVE.key(kind), ids)
  local n = 0
  for i = 1, #ids do
    if vals[i] then n = n + 1 end
  end
  return n
end

-- The entries of `ids` in K_GROUP_OF as leave_active's groups_of kept them this call, when it
-- read these very ids (in this order) and `kind` is groups; else nil. Used once: an entry changes only where
-- a job is added or forgotten, which no call does between its leave_active and its finish's
-- count (the one use), and a read used up cannot be met again after its jobs were forgotten.
function LIVE.read_again(kind, ids)
  local f = flow()
  local r = f.group_of_read
  if kind ~= LIVE.GROUP or not r then return nil end
  f.group_of_read = nil
  if #r.ids ~= #ids then return nil end
  local seen = r.ids
  for i = 1, #ids do
    if seen[i] ~= ids[i] then return nil end
  end
  return r.vals
end

-- Ended jobs leave the counts (finish, before their entries go).
function LIVE.ended(ids)
  LIVE.count(LIVE.GROUP, -LIVE.among(LIVE.GROUP, ids))
  LIVE.count(LIVE.FLOW, -LIVE.among(LIVE.FLOW, ids))
end

-- A queue marked without a count whose hash of `kind` holds no job (only HT_FIELD, if anything):
-- none exists, so the count starts at 0. One HLEN a claim until then.
function LIVE.settle(kind, f)
  if not f[kind.f_mark] or f[kind.f_count] ~= nil then return end
  local key = LIVE.key(kind)
  local n = redis.call('HLEN', key)
  if n > 1 or (n == 1 and redis.call('HEXISTS', key, HT_FIELD) == 0) then return end
  redis.call('HSET', K_META, kind.field, '0')
  f[kind.f_count] = 0
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

  -- Counts as text and text as counts, each made once per call: a group's state is read and
  -- written once per claim or ack, and tonumber / string.format cost more than a table look-up
  -- (most groups share a few small counts).
  local numbers, texts = {}, {}
  function L.number(s)
    local n = numbers[s]
    if n == nil then
      n = tonumber(s)
      numbers[s] = n
    end
    return n
  end
  function L.text(n)
    local t = texts[n]
    if t == nil then
      t = int(n)
      texts[n] = t
    end
    return t
  end

  function L.parse_group(s)
    local g = { r = 0, w = 0, l = false, p = false, rate = false }
    if s then
      local r, w, l, p, rest = string.match(s, '^(%d+):(%d+):(%d*):(1?)(.*)$')
      -- A state that does not read starts from nothing (verify() reports the counts that disagree).
      if r and #r < 17 and #w < 17 and #l < 17 then
        g.r, g.w, g.p = L.number(r), L.number(w), p == '1'
        if l ~= '' then g.l = L.number(l) end
        -- The optional fifth field: its own rate limit, `<max>/<per ms>`.
        if rest ~= '' then
          local rm, rp = string.match(rest, '^:(%d+)/(%d+)$')
          if rm and #rm < 17 and #rp < 17 then g.rate = rate_of(rm, rp) end
        end
      end
    end
    -- Its waiting count as read: save_groups drops a line that this run emptied from K_WAITING_DUE.
    g.w0 = g.w
    return g
  end

  -- Loads the states of these groups (UNGROUPED and those loaded already are skipped).
  function L.load_groups(ids)
    local need, seen, states = {}, {}, L.GROUPS
    for i = 1, #ids do
      local g = ids[i]
      if g ~= UNGROUPED and states[g] == nil and not seen[g] then
        seen[g] = true
        need[#need + 1] = g
      end
    end
    local vals = hmget(K_GROUPS, need)
    for i = 1, #need do states[need[i]] = L.parse_group(vals[i]) end
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
    local sets, dels, states, dirty = {}, {}, L.GROUPS, L.dirty_list
    for i = 1, #dirty do
      local g = dirty[i]
      local s = states[g]
      if s.r <= 0 and s.w <= 0 and not s.l and not s.p and not s.rate then
        dels[#dels + 1] = g
      else
        sets[#sets + 1] = g
        local text = L.text(s.r > 0 and s.r or 0) .. ':' .. L.text(s.w > 0 and s.w or 0) .. ':' .. (s.l and L.text(s.l) or '') .. ':' .. (s.p and '1' or '')
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
    for i = 1, #dirty do
      local g = dirty[i]
      local s = states[g]
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
  -- The texts of the next n turns.
  function L.next_turns(n)
    if not L.last_turn then L.last_turn = head_score(K_LANES, -1) or 0 end
    local texts = int_texts(L.last_turn + 1, n)
    L.last_turn = L.last_turn + n
    return texts
  end

  -- Lanes join the rotation's tail in the order given (ZADD NX: those in keep their place), or
  -- (`to_tail`) move there.
  function L.lanes_add(list, to_tail)
    if #list == 0 then return end
    local adds, turns = {}, L.next_turns(#list)
    for i = 1, #list do
      adds[2 * i - 1] = turns[i]
      adds[2 * i] = list[i]
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
  -- Made once per priority and call (most jobs share one or two).
  local priority_keys = {}
  function L.priority_key(p)
    local k = priority_keys[p]
    if not k then
      k = string.format('%07d', math.max(0, math.min(2000000, 1000000 - p)))
      priority_keys[p] = k
    end
    return k
  end

  -- A job's member in its group's line, from the due time and seq as plain digits: the group,
  -- '\0', the priority key, then ready_member_text's (written out in one concatenation, the
  -- zeros that pad a number of each length made once per call).
  local pads = {}
  function L.waiting_member_text(g, priority, due_s, seq_s, id)
    local due_pad, seq_pad = pads[#due_s], pads[#seq_s]
    if not due_pad then
      due_pad = string.sub(ZEROS, #due_s + 1)
      pads[#due_s] = due_pad
    end
    if not seq_pad then
      seq_pad = string.sub(ZEROS, #seq_s + 1)
      pads[#seq_s] = seq_pad
    end
    return g .. '\0' .. (priority_keys[priority] or L.priority_key(priority)) .. due_pad .. due_s .. seq_pad .. seq_s .. id
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
  -- and `dues` (optional: read from the members when nil) their due times (aligned), counted as
  -- waiting there. The caller puts the groups in the rotation.
  function L.wait_in_line(members, groups, dues)
    if #members == 0 then return end
    local adds = {}
    for i = 1, #members do
      adds[2 * i - 1] = '0'
      adds[2 * i] = members[i]
    end
    call_chunked('ZADD', K_WAITING, adds)
    -- Each group's score in K_WAITING_DUE goes down to the earliest due time put in its line.
    local low, order = {}, {}
    for i = 1, #members do
      local g = groups[i]
      local due = dues and dues[i]
      if not due then
        local _, d = L.waiting_parts(members[i])
        due = d
      end
      if low[g] == nil then order[#order + 1] = g end
      if low[g] == nil or due < low[g] then low[g] = due end
    end
    local dues = {}
    for i = 1, #order do
      local g = order[i]
      dues[#dues + 1] = L.text(low[g])
      dues[#dues + 1] = g
    end
    for i = 1, #dues, CHUNK do
      redis.call('ZADD', K_WAITING_DUE, 'LT', unpack(dues, i, math.min(i + CHUNK - 1, #dues)))
    end
    L.load_groups(groups)
    local states = L.GROUPS
    for i = 1, #groups do
      local g = groups[i]
      local s = states[g]
      s.w = s.w + 1
      L.touch_group(g)
    end
  end
  return L
end

-- The group of each id (UNGROUPED for none), one HMGET for all; all UNGROUPED on a queue that
-- never had a job of a group. With `keep` (leave_active: its jobs are about to end) the read is
-- kept for the call (in flow()'s table, made afresh by each call: `group_of_read`, the ids as
-- they were and the entries as stored; not a top-level name of its own, as the library's are
-- counted) so that finish's count (LIVE.among) needs no second read. Claims and listings keep
-- nothing: their reads are not asked again, and a claim's promotion reads a thousand ids.
local function groups_of(ids, keep)
  local out = {}
  if not flow().grouped or #ids == 0 then
    for i = 1, #ids do out[i] = UNGROUPED end
    return out
  end
  local vals = hmget(K_GROUP_OF, ids)
  for i = 1, #ids do out[i] = vals[i] or UNGROUPED end
  if keep then
    local seen = {}
    for i = 1, #ids do seen[i] = ids[i] end
    flow().group_of_read = { ids = seen, vals = vals }
  end
  return out
end

-- Which set holds one job: 'scheduled', 'ready', 'waiting', 'active', 'dead', 'completed',
-- 'held', or nil; with its body and run state as stored (strings or false).
local function job_state(id)
  -- The field that keeps the hashes hashtables (hset_pairs) is no job: a foreign client that
  -- names it (ids cannot hold a control character; reads do not check) finds nothing.
  if id == HT_FIELD then return nil, false, false end
  local body = redis.call('HGET', K_JOBS, id)
  local run = redis.call('HGET', K_RUNS, id)
  if SCHED.score(id, body) then return PLACE.scheduled, body, run end
  if redis.call('ZSCORE', K_ACTIVE, id) then return PLACE.active, body, run end
  if redis.call('ZSCORE', K_DEAD, id) then return PLACE.dead, body, run end
  if redis.call('ZSCORE', K_COMPLETED, id) then return PLACE.completed, body, run end
  if flow().holds and redis.call('ZSCORE', ROOT .. HOLD_KEY.held, id) then return PLACE.held, body, run end
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

-- Takes a job that is not active out of its set (scheduled, ready, waiting, dead, completed or held).
-- A job leaving its group's line is no longer counted as waiting there; its group stays in the
-- rotation until a claim finds the line empty.
local function unlink_waiting(id, state, body, run)
  if state == PLACE.completed then
    redis.call('ZREM', K_COMPLETED, id)
  elseif state == PLACE.scheduled then
    SCHED.remove(id, body)
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
  elseif state == PLACE.held then
    redis.call('ZREM', ROOT .. HOLD_KEY.held, id)
  end
end

-- The public state: a ready or waiting job is a scheduled job whose time has come.
local function public_state(state)
  if state == PLACE.ready or state == PLACE.waiting then return PLACE.scheduled end
  return state
end

-- A job's due time now: its score while scheduled, else its run's due time (ready, waiting,
-- active, dead), else the time a held job was added to run at (its HOLD_STATE, _holds.lua: it
-- has no run state before it runs); nil when none is known. `body` as stored (read when nil).
local function current_due(id, run, body)
  local score = SCHED.score(id, body)
  if score then return tonumber(score) end
  local r = parse_run(run)
  if r and r.t then return r.t end
  if flow().holds then
    local due = string.match(redis.call('HGET', hold_key('holds'), id) or '', '^%d+:%d+:[fi]:(%d+):[hrtd]$')
    if due then return tonumber(due) end
  end
  return nil
end

-- Tells sleeping workers that a job may be handed out now (a slot freed, a group resumed): '0'
-- is a due time that has passed, so every worker with room claims at once.
local function wake_now()
  redis.call('PUBLISH', WAKE_CHANNEL, '0')
end
