--[[ add: writes new jobs, or replaces existing ones on request, and schedules them.
KEYS: base, memo, schedule_last
ARGV: base, schedule, occurrence, request_id, memo_ms, epoch, item_fields, packed
EACH: id, data, delay_ms, run_at, priority, max_attempts, backoff, replace, dedup_key, dedup_ms, trace, name, timeout_ms, group, cost, debounce_key, debounce_ms, debounce_max_ms, debounce_first_ms, attempts_made, depends_on, deadline_ms, deadline_at, on_child_failure
Returns: { made, then per item: code, state, due_ms, holder } (with packed = 1 the same array as one MessagePack string: PACKED_REPLY); made is 1 when this add made the queue's keys (took the first sequence number of a life of the queue, take_seq), else 0; per job its CODE, public state (or finished), due time and holder: the dedup holder's id, or the burst job's id when debounced. A reply of one element is CODE.guard_refused (the schedule guard refused), CODE.moved (no guard given and the queue takes no add: a retired shard, meta moved; or not a live shard of the layout epoch given, meta epoch) or CODE.too_costly (a job's cost is above a rate limit's max; nothing was written)
A retired shard (its meta holds moved = '1', see sharded queues in docs/data-model.md) takes
no add without a schedule guard, and neither does a shard whose meta `epoch` is not the
`epoch` given (the layout the producer routed by is not this shard's: it was obliterated, or
made again for a later life of the queue): the producer reads the layout again and adds where
it says. `epoch` is '' for an add to a queue's own (unsharded) keys: then only `moved` counts.
The leading flag tells the producer that the queue's keys were made by this add (a new queue,
or one obliterated since), so it names the queue in the registry again (docs/data-model.md).
`schedule` and `occurrence` ('' unless a recurring schedule adds) guard the add: it happens only
if this occurrence is later than the schedule's last one, which it then becomes. Per job,
exactly one of delay_ms and run_at is set; max_attempts, backoff, dedup_key, dedup_ms, trace, name,
timeout_ms and group may be ''; replace is '1' or '0'. `name` ('': none) is the job's name, kept in its body
(wire.ts JOB_BODY). `item_fields` says where each item ends: 'base' at `timeout_ms`, 'controls'
at `attempts_made` (the flow-control fields `group`, `cost`, `debounce_key`, `debounce_ms`,
`debounce_max_ms`, `debounce_first_ms`, and `attempts_made`), 'holds' at `on_child_failure` (those
and the hold's fields): a call that uses none of them sends no argument per job for them.
'packed' ends items at `run_at`, and `data` holds the job's body from its priority on (wire.ts
PACKED_TAIL), packed by the producer: for jobs without replace, dedup, group, cost, debounce,
attempts made or hold, and no schedule guard (_add_packed.lua; the cheapest add).
`attempts_made` ('' or 0: none) is the attempts a job made before it was added (a job moved from
another queue): a job written with some gets a run state with that many attempts (RUN_STATE
'<attempts made>:<due ms>::::'), so its next hand-out is attempt attempts_made + 1; it must be
below `max_attempts` when that is given.
Holds (docs/flows.md, _holds.lua): an item with `depends_on` (ids separated by tabs) is held
until each of those jobs has ended — completed, or dead or cancelled, which under
`on_child_failure` 'fail' ('' is 'fail') buries it instead — or until its deadline
(`deadline_ms` after now, or `deadline_at`, at most one) passes; then it is scheduled at the later
of then and its own due time. Each dependency must be an earlier item of the call or a job that
exists and is not dead (one completed and kept counts as done, with its result); `depends_on` is
refused with `replace`, `dedup_key` or `debounce_key`. The state answered is 'held'. A job of a group has its group id in
K_GROUP_OF, and the queue is marked as having groups (meta grouped = '1'), so claims take turns
between them. `cost` ('' for 1) is the tokens of the rate limits the job takes when it starts; a
job with a cost above 1 or a debounce key has its JOB_FLOW in K_FLOW_OF (meta flowed = '1').
Debounce: an item with `debounce_key` ignores delay_ms and run_at and is due `debounce_ms` after
now, but no later than `debounce_max_ms` ('' for no bound) after its burst's first add. K_DEBOUNCE
maps the key to '<job id>:<first add ms>' of its pending burst; when that job still waits and carries the key
(scheduled, ready or waiting) and the bound has not passed, the add is folded into it (CODE
debounced: the job takes this add's data and options and its new due time, holder names it);
else the add starts a new burst with its own id, its first add now, or `debounce_first_ms` when
given (at most now: a sharded producer moving a burst off a retired shard keeps its bound). A
claim that hands the job out ends the burst, as does the job's cancel, drain, purge or burial.
Codes: added; exists (left alone); replaced; deduplicated (the dedup key is held within its
window, by another job's add or by this id's own add whose job has finished). The public state
is 'finished' when the job holding the key is gone.
Rules: an add that changes nothing (exists, deduplicated) takes no sequence number and no
dedup key. The dedup key holds '<due ms>:<id>' of the add that took it, and expires with its
window; meta `dedupUntil` keeps the latest end of any window taken here, so a reshard keeps a
retired shard (where the key's window holds) until it has passed. Every argument is checked before the first write; a bad one fails the call and writes
nothing. Bodies are read with one HMGET and written with one HSET, the scheduled set with one
ZADD, whatever the batch size (dedup keys and replaced jobs cost a few calls each).
Events: PUBLISH <wake> <due ms> when the queue's earliest due time moved earlier; 'added' to
the event stream.
Safe to re-send: with a request id, the first run's codes are remembered for memo_ms as
'<now>:<one code digit per job>:<made flag>[:<burst ids, one a line>]' (the burst job each debounced item went into), and a re-send answers them again (and the flag),
even after the job ran and was acked (without a request id, a re-send finds the jobs and
answers exists).
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _add_packed.lua

-- Items end at `timeout_ms` unless `item_fields` says they carry the flow-control fields, and the
-- hold's; packed items end at `run_at`. EACH_SIZE is the prologue's local, which each_count and
-- each_arg read.
local item_fields = arg('item_fields')
local with_flow = item_fields ~= 'base' and item_fields ~= 'packed'
local with_holds = item_fields == 'holds'
if item_fields == 'packed' then
  EACH_SIZE = E.run_at + 1
elseif not with_flow then
  EACH_SIZE = E.timeout_ms + 1
elseif not with_holds then
  EACH_SIZE = E.attempts_made + 1
end

local memo_key, memo_ms = '', 0
if arg('request_id') ~= '' then memo_key, memo_ms = K_MEMO, arg_int('memo_ms') end
-- Items whose body the producer packed: their own path (_add_packed.lua).
if item_fields == 'packed' then return ADD_PACKED.run(memo_key, memo_ms) end
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
  if with_holds then
    j.deps_s = each_arg(i, 'depends_on')
    local d_ms, d_at = each_valid(i, 'deadline_ms'), each_valid(i, 'deadline_at')
    j.policy = each_valid(i, 'on_child_failure') == 'ignore' and 'i' or 'f'
    if d_ms ~= '' and d_at ~= '' then error('delayq: arguments deadline_ms and deadline_at of item ' .. i .. ': at most one may be set') end
    if j.deps_s ~= '' then
      if j.replace or j.dedup or j.debounce then error('delayq: argument depends_on of item ' .. i .. ': not with replace, dedup_key or debounce_key') end
      j.deadline_ms, j.deadline_at = as_int(d_ms), as_int(d_at)
    elseif d_ms ~= '' or d_at ~= '' then
      error('delayq: arguments deadline_ms and deadline_at of item ' .. i .. ': only with depends_on')
    end
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
-- The state an earlier item of this call will be written in: held while dependencies it waits
-- for have not ended (HOLDS.plan gave it pending ones), else scheduled.
local function planned_state(j)
  return (j.pending and #j.pending > 0) and PLACE.held or PLACE.scheduled
end

-- A job's answer, and one that exists, written as the packed path writes them (_add_packed.lua).
local function answer(code, state, due, holder)
  ADD_PACKED.answer(out, code, state, due, holder)
end

-- The job holding a dedup key: its id and the due time it was added with, or nil.
local function dedup_holder(dkey)
  local held = redis.call('GET', dkey)
  if not held then return nil, nil end
  local held_due, holder = string.match(held, '^(%d+):(.*)$')
  return holder, tonumber(held_due)
end

local function answer_deduplicated(holder, held_due)
  local state, body, run = job_state(holder)
  answer(CODE.deduplicated, public_state(state) or 'finished', (state and current_due(holder, run, body)) or held_due, holder)
end

local function answer_exists(id)
  ADD_PACKED.answer_exists(out, id)
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
      -- An item with dependencies may still be held (or ended since: then it was scheduled).
      local state = j.deps_s and j.deps_s ~= '' and public_state(job_state(j.id)) or nil
      answer(code, state == PLACE.held and PLACE.held or PLACE.scheduled, due_of(j, m_now), '')
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
  local meta = redis.call('HMGET', K_META, 'moved', 'epoch', 'ordered', 'prioritized', 'events', 'ranked', 'rankedSet')
  if meta[1] == '1' or (arg('epoch') ~= '' and meta[2] ~= arg('epoch')) then return { CODE.moved } end
  -- The scheduled set's order (SCHED) and the event stream's switch (events_on) from the same read.
  SCHED.prime(meta[3], meta[4], meta[6], meta[7])
  events_from(meta[5])
end

-- Dependencies are checked before anything is written (an unknown or dead one refuses the call).
if with_holds then
  local first_at = {}
  for i, j in ipairs(jobs) do
    if not first_at[j.id] then first_at[j.id] = i end
  end
  for i, j in ipairs(jobs) do
    if j.deps_s ~= '' then j.deps = HOLDS.check(i, j.id, j.deps_s, first_at) end
  end
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
        if pending[holder] then answer(code, planned_state(pending[holder]), pending[holder].due, holder) else answer_deduplicated(holder, held_due) end
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
        answer(code, planned_state(prev), prev.due, '')
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
    elseif j.deps then
      -- Dependencies not ended yet hold it (an earlier item of this call has not ended).
      j.pending, j.done = HOLDS.plan(j.id, j.deps, pending)
      answer(code, #j.pending > 0 and PLACE.held or PLACE.scheduled, j.due, '')
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
  if made then
    out[R.made] = 1
    -- A queue made here keeps its scheduled members in add order from the start
    -- (SCHEDULED_MEMBER); one an older version made does so once `migrate` converts it.
    SCHED.made()
  end
end
local new_members = SCHED.order().writes
local dedup_until = 0
local bodies, scheduled, replaced, grouped, flows, burst_starts, made_runs = {}, {}, {}, {}, {}, {}, {}
local unfolded = {} -- replaced jobs not folded into their own burst: their bursts end
local ranked = 0 -- jobs with a priority written, less replaced ones that had not ended (SCHED.rank)
local ranked_at = {} -- the positions in `scheduled` of the pairs of jobs with a priority (schedule_many)
local group_jobs, flow_jobs = 0, 0 -- the same for jobs of a group, and with a cost or a debounce key (LIVE)
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

      local seq_s = int(seq)
      bodies[#bodies + 1] = j.id
      bodies[#bodies + 1] = encode_body(seq_s, now_s, j.priority_s, j.max and int(j.max), j.timeout and int(j.timeout), j.backoff, j.trace, j.name, j.data)
      -- A queue with a job with a priority orders its due jobs through the ready set while one
      -- is left (SCHED.rank): this one counts, and a replaced one that had not ended no more.
      if j.priority ~= 0 then ranked = ranked + 1 end
      local st = j.state
      if j.delete_stored and (st == PLACE.scheduled or st == PLACE.ready or st == PLACE.waiting or st == PLACE.held) then
        local _, old_priority = body_order(j.old_body)
        if old_priority and old_priority ~= 0 then ranked = ranked - 1 end
        -- So with a job of a group, or with a cost or a debounce key (LIVE), whose entries
        -- forget_extras deletes below.
        if flow().grouped and redis.call('HEXISTS', K_GROUP_OF, j.id) == 1 then group_jobs = group_jobs - 1 end
        if flow().flowed and redis.call('HEXISTS', K_FLOW_OF, j.id) == 1 then flow_jobs = flow_jobs - 1 end
      end
      if j.group ~= '' then group_jobs = group_jobs + 1 end
      if (j.cost and j.cost > 1) or j.debounce then flow_jobs = flow_jobs + 1 end
      -- Jobs of one add often share a due time: its text is made once.
      local due_s = due_text[j.due]
      if not due_s then
        due_s = int(j.due)
        due_text[j.due] = due_s
      end
      local held = false
      if j.deps then
        local deadline = j.deadline_at or (j.deadline_ms and now + j.deadline_ms)
        held = HOLDS.write(j.id, j.deps, j.pending, j.done, j.due, deadline, j.policy)
      end
      if not held then
        scheduled[#scheduled + 1] = due_s
        scheduled[#scheduled + 1] = new_members and SCHED.member(seq_s, j.id) or j.id
        if j.priority ~= 0 then ranked_at[#ranked_at + 1] = #scheduled / 2 end
        if not earliest or j.due < earliest then earliest = j.due end
      end
      -- Attempts made before it was added: a run state that counts on from them (RUN_STATE).
      if j.made and j.made > 0 then
        made_runs[#made_runs + 1] = j.id
        made_runs[#made_runs + 1] = int(j.made) .. ':' .. due_s .. '::::'
      end
      emit_added(j.id, due_s)
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
SCHED.rank(ranked)
if #flows > 0 then hset_pairs(K_FLOW_OF, flows) end
-- Counts them, and marks the queue `flowed` with its first (LIVE).
LIVE.count(LIVE.FLOW, flow_jobs)
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
if #grouped > 0 then hset_pairs(K_GROUP_OF, grouped) end
-- Counts them, and marks the queue `grouped` with its first (a queue marked without a count is
-- marked already).
LIVE.count(LIVE.GROUP, group_jobs)
schedule_many(scheduled, earliest, true, ranked_at)
local memo_into = ''
if #folded_into > 0 then memo_into = ':' .. table.concat(folded_into, '\n') end
memo_set(memo_key, int(now) .. ':' .. table.concat(codes) .. ':' .. out[R.made] .. memo_into, memo_ms)
return out
