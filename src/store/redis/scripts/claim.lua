--[[ claim: hands out up to `count` due jobs, highest priority first, then earliest due, then
first added; recovers jobs whose lease ran out on the way. When no more than `count` jobs are
due, they are ordered here and handed out directly; otherwise due jobs pass through the ready set.
KEYS: base, memo
ARGV: base, count, lease_ms, default_max, promote_limit, reap_limit, request_id, worker
Returns: { now_ms, next_wake_ms, more, deadline_ms, token_prefix, groups, then per item: id, body, attempt, due_ms, token_number }; more is 1 when due jobs are left; groups names the groups of the jobs that have one, as CLAIM_GROUPS ('' when none has); per job wire.ts CLAIM_JOB
`worker` is the claiming worker's id, kept in each job's run state as its lease holder.
`promote_limit` bounds the due jobs moved into the ready set per call (at least one more than
`count` are read when the ready set is empty), `reap_limit` the expired
leases recovered per call; memo is `req:<request id>` (any key when request_id is '').
While the queue is paused (meta paused = '1') it only recovers expired leases and hands out
nothing; its next wake is then the earliest lease deadline.
Next wake is the earliest of the next due time and the next lease deadline, so a sleeping
worker also wakes to recover expired leases and no separate reaper has to poll.
A fixed number of Redis calls per batch: the sets are read and written once each, bodies and
run states with one HMGET and one HSET.
A claim reads only the seq and priority of a body (it orders by them); a body or run state it
cannot read goes to the dead set with the reason (kept as the run's last error) and costs no
other job; the worker reads the rest of the body and buries a job whose body it cannot read.
Members whose body is gone are dropped.
Safe to re-send: with a request id, a batch is remembered for the lease's length as
'<now>:<deadline>:<first token number>:<count>'; a re-sent claim returns the same jobs (those
still held by those tokens) instead of handing out a second batch.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _rate.lua
--@include _lifecycle.lua

local want = arg_int('count')
local lease_ms = arg_int('lease_ms')
local default_max = arg_int('default_max')
local promote_limit = arg_int('promote_limit')
local reap_limit = arg_int('reap_limit')
-- A ':' would break the run state's fields; the library never sends one.
local worker = (string.gsub(arg('worker'), ':', '_'))
local memo_key = ''
if arg('request_id') ~= '' then memo_key = K_MEMO end

-- One hand-out: wire.ts CLAIM_JOB, five reply elements; a job of a group is named in the
-- `groups` field (CLAIM_GROUPS), so a queue without groups pays nothing per job for them. The body goes out as stored and the
-- numbers as integers: no string is built per job. The positions are read once (locals, not a
-- table lookup per job and field).
local AT_ID, AT_BODY, AT_ATTEMPT, AT_DUE, AT_TOKEN = RE.id, RE.body, RE.attempt, RE.due_ms, RE.token_number
local group_lines = {}
local function hand_out(out, id, body, attempt, due, token_number, group)
  local n = #out
  if group ~= UNGROUPED then group_lines[#group_lines + 1] = ((n - R_EACH_FIRST + 1) / R_EACH_SIZE + 1) .. '\t' .. group .. '\n' end
  out[n + AT_ID] = id
  out[n + AT_BODY] = body
  out[n + AT_ATTEMPT] = attempt
  out[n + AT_DUE] = due
  out[n + AT_TOKEN] = token_number
end

-- 0. A re-sent claim: answer with the batch the first run handed out.
local memo = memo_get(memo_key)
if memo then
  local m_now, m_deadline, m_base, m_count = string.match(memo, '^(%d+):(%d+):(%d+):(%d+)$')
  m_now, m_deadline, m_base, m_count = tonumber(m_now), tonumber(m_deadline), tonumber(m_base), tonumber(m_count)
  local prefix = int(m_now) .. '-'
  local out = reply({ now_ms = m_now, next_wake_ms = -1, more = 1, deadline_ms = m_deadline, token_prefix = prefix, groups = '' })
  -- The batch's jobs share its deadline (their holder never got the reply, so none was extended).
  local held = redis.call('ZRANGEBYSCORE', K_ACTIVE, m_deadline, m_deadline)
  local runs, bodies, groups = hmget(K_RUNS, held), hmget(K_JOBS, held), groups_of(held)
  for i, id in ipairs(held) do
    local r = parse_run(runs[i])
    if r and bodies[i] and string.sub(r.k, 1, #prefix) == prefix then
      local k = as_int(string.sub(r.k, #prefix + 1))
      if k and k > m_base and k <= m_base + m_count then hand_out(out, id, bodies[i], r.a, r.t or m_now, k, groups[i]) end
    end
  end
  out[R.groups] = table.concat(group_lines)
  return out
end

local now = now_ms()
local run_writes = {} -- HSET K_RUNS pairs
local buried = {}
local dropped = {} -- members whose body is gone: their run states go too

-- `token` is the recovered lease's mark (MARK.recovered .. token), so its holder's later calls are stale.
local function bury_corrupt(id, reason, attempts, due, token, started, worker)
  run_writes[#run_writes + 1] = id
  run_writes[#run_writes + 1] = encode_run(attempts or 0, due, token or '', reason, started, worker)
  buried[#buried + 1] = id
  emit(EVENT.dead, id, 'error', reason)
end

-- 1. Recover expired leases: back to scheduled (due now), or dead when no attempts are left.
local expired = redis.call('ZRANGEBYSCORE', K_ACTIVE, '-inf', now, 'LIMIT', 0, reap_limit)
local rescheduled = {}
if #expired > 0 then
  leave_active(expired)
  local runs, bodies = hmget(K_RUNS, expired), hmget(K_JOBS, expired)
  for i, id in ipairs(expired) do
    local r, bad_run = parse_run(runs[i])
    local b, bad_body = parse_body(bodies[i])
    if not bodies[i] then
      dropped[#dropped + 1] = id
    elseif not r or r.bad or not b then
      bury_corrupt(id, bad_run or (r and r.bad) or bad_body, r and r.a, r and r.t, r and (MARK.recovered .. r.k), r and r.s, r and r.w)
    else
      local max = b.max or default_max
      local recovered = MARK.recovered .. r.k
      local why = 'lease expired during attempt ' .. r.a .. ' of ' .. max
      run_writes[#run_writes + 1] = id
      emit(EVENT.leaseExpired, id, 'attempt', r.a)
      if r.a >= max then
        run_writes[#run_writes + 1] = encode_run(r.a, r.t, recovered, why, r.s, r.w)
        buried[#buried + 1] = id
        emit(EVENT.dead, id, 'attempt', r.a, 'error', why)
      else
        run_writes[#run_writes + 1] = encode_run(r.a, r.t, recovered, why, r.s, r.w)
        rescheduled[#rescheduled + 1] = now
        rescheduled[#rescheduled + 1] = id
      end
    end
  end
end

-- Writes what was decided so far: run states, dropped members, burials, reschedules.
local function flush_writes()
  hset_pairs(K_RUNS, run_writes)
  if #dropped > 0 then call_chunked('HDEL', K_RUNS, dropped) end
  finish(FINISH.dead, buried, now)
  schedule_many(rescheduled)
  run_writes, dropped, buried, rescheduled = {}, {}, {}, {}
end
-- Recovered jobs are due now: written before the pick, so this claim can hand them out.
flush_writes()

-- A paused queue hands out nothing, nor does one at its concurrency limit; workers sleep until a
-- lease needs recovering or the resume signal comes (or, at the limit, until a slot frees:
-- leave_active tells them).
local f = flow()
local at_limit = false
if f.limit and not f.paused then
  local room = f.limit - redis.call('ZCARD', K_ACTIVE)
  if room <= want then want, at_limit = math.max(0, room), true end
end
if f.paused or want == 0 then
  local next_lease = head_score(K_ACTIVE)
  return reply({ now_ms = now, next_wake_ms = next_lease or -1, more = 0, deadline_ms = 0, token_prefix = '', groups = '' })
end

-- The queue's rate limiter (and a hold a RateLimitSignal put on it): a claim takes no more jobs
-- than it has tokens (each job costs at least one); with none left it hands out nothing and its
-- workers sleep until the oldest tokens come back or the hold ends.
local q_left = HUGE
if f.rated then
  q_left = RL().tokens('', f.rate, now)
  if q_left <= 0 then
    RL().save()
    local wake = RL().free_at('')
    local next_lease = head_score(K_ACTIVE)
    if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
    return reply({ now_ms = now, next_wake_ms = wake or -1, more = 0, deadline_ms = 0, token_prefix = '', groups = '' })
  end
  if q_left < want then want, at_limit = q_left, false end
end

-- A candidate with every field readable() sets, so the table is sized once (growing a Lua
-- table's hash part rehashes it, which showed in the claim's profile).
-- `due_s` is the due time as stored text when it is a plain whole number (a score or a short
-- run state), so a first hand-out writes it back without formatting it again; false otherwise.
local function candidate(id, due, due_s)
  return { id = id, due = due, due_s = due_s, seq = false, seq_s = false, priority = false, r = false, body = false, ran = false }
end

-- Plain digits, at most 16: the text of a whole-number due time as int() would write it.
local function plain_ms(s)
  if #s < 17 and string.find(s, '^[1-9]%d*$') then return s end
  return false
end

-- Reads candidates { id, due } (and `ids`, their ids in order) in one HMGET each of bodies and
-- run states: those that can be handed out come back with { seq, priority, r = run state,
-- body = packed body, ran = whether a run state was stored }; corrupt ones are buried, members
-- whose body is gone are dropped. With `ordered` the candidates come from the ready set, whose
-- members already hold the order: their bodies are not read for it (the body was read when it
-- was promoted, and the worker buries one it cannot read).
local function readable(cands, ids, ordered)
  local bodies, runs = hmget(K_JOBS, ids), hmget(K_RUNS, ids)
  local out = {}
  for i, c in ipairs(cands) do
    local run, body = runs[i], bodies[i]
    local r, bad_run = parse_run(run)
    local seq_s, priority, bad_body = true, 0, nil
    if not ordered then seq_s, priority, bad_body = body_order(body) end
    if not body then
      if run then dropped[#dropped + 1] = c.id end
    elseif not r or r.bad or not seq_s then
      bury_corrupt(c.id, bad_run or (r and r.bad) or bad_body, r and r.a, c.due)
    else
      c.priority, c.r, c.body, c.ran = priority, r, body, run ~= false
      if not ordered then c.seq, c.seq_s = tonumber(seq_s), seq_s end
      -- A ready job's short run state is its due time as int() wrote it when it was promoted; the
      -- member's due time decides (this claim's promotions are not written yet, so the run state
      -- read here may be one a reschedule left behind).
      if ordered and r.t == c.due and r.a == 0 and not string.find(run, ':', 1, true) then c.due_s = plain_ms(run) end
      out[#out + 1] = c
    end
  end
  return out
end

local function before(x, y)
  if x.priority ~= y.priority then return x.priority > y.priority end
  if x.due ~= y.due then return x.due < y.due end
  return x.seq < y.seq
end

-- Groups held back by their rate limit in this claim (their turn ends; rate-wake brings them
-- back), and whether the queue's own tokens ran out.
local rate_blocked, q_exhausted = {}, false

-- Puts candidates a claim took out but does not hand out (their tokens ran short) back where
-- they wait: the ready set, or their group's line (counted as waiting again), with the run
-- state of a promoted job. Returns how many went to the ready set. Made only on a queue with rate
-- limits (a closure costs every call).
local put_back = f.rated and function(cands)
  local ready_adds, members, member_groups, to_ready = {}, {}, {}, 0
  for _, c in ipairs(cands) do
    local b = parse_body(c.body)
    local r = c.r
    run_writes[#run_writes + 1] = c.id
    if c.ran and (r.a > 0 or r.e or r.s or (r.k and r.k ~= '')) then
      run_writes[#run_writes + 1] = encode_run(r.a, c.due, r.k, r.e, r.s, r.w)
    else
      run_writes[#run_writes + 1] = int(c.due)
    end
    if (c.lane or UNGROUPED) == UNGROUPED then
      ready_adds[#ready_adds + 1] = -b.priority
      ready_adds[#ready_adds + 1] = ready_member(c.due, b.seq, c.id)
      to_ready = to_ready + 1
    else
      members[#members + 1] = GL().waiting_member(c.lane, b.priority, c.due, b.seq, c.id)
      member_groups[#member_groups + 1] = c.lane
    end
  end
  if #ready_adds > 0 then call_chunked('ZADD', K_READY, ready_adds) end
  if #members > 0 then GL().wait_in_line(members, member_groups) end
  return to_ready
end

-- 2. Pick the jobs to hand out. A queue with groups takes turns between its lanes
-- (pick_in_turns); one without keeps one order over all its due jobs (pick_in_order).

-- Reads due members of the scheduled set (at most `limit`) as candidates and takes them out.
local function take_due(limit)
  local flat = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  local due, due_ids = {}, {}
  for i = 1, #flat, 2 do
    local n = #due_ids + 1
    due_ids[n] = flat[i]
    due[n] = candidate(flat[i], tonumber(flat[i + 1]), plain_ms(flat[i + 1]))
  end
  if #due_ids > 0 then call_chunked('ZREM', K_SCHEDULED, due_ids) end
  return due, due_ids
end

-- Pops the best `n` of the ready set as candidates. ZRANGE + ZREMRANGEBYRANK, not ZPOPMIN: on
-- Redis 7.0 ZPOPMIN removes each member by its score and member (~2.4 µs a member measured), the
-- range removal walks the head once (~1.5).
local function pop_ready(n)
  local popped = {}
  if n > 0 then popped = redis.call('ZRANGE', K_READY, 0, n - 1) end
  if #popped > 0 then redis.call('ZREMRANGEBYRANK', K_READY, 0, #popped - 1) end
  local cands, ids = {}, {}
  for i, member in ipairs(popped) do
    ids[i] = ready_id(member)
    cands[i] = candidate(ids[i], tonumber(string.sub(member, 1, 16)), false)
  end
  return cands, ids
end

local function pick_in_order()
  -- One read of the due members decides the path and feeds it: when the ready set is empty it
  -- reads one more than a hand-out takes, to see whether all fit.
  local ready_empty = redis.call('ZCARD', K_READY) == 0
  local limit = promote_limit
  if ready_empty then limit = math.max(promote_limit, want + 1) end
  local due, due_ids = take_due(limit)
  if ready_empty and #due <= want then
    -- Fast path: everything due fits in this hand-out, so order it here and skip the ready set.
    local picked = readable(due, due_ids)
    -- Due jobs come in due order, usually already the hand-out order: one pass checks it, which
    -- costs a tenth of a sort (Lua calls the comparison for each of n log n pairs).
    local sorted = true
    for i = 2, #picked do
      if before(picked[i], picked[i - 1]) then
        sorted = false
        break
      end
    end
    if not sorted then table.sort(picked, before) end
    return picked
  end
  -- More is due than one hand-out takes: move due jobs into the ready set, which keeps them in
  -- priority order, and take the best from there. A ready job's run state holds its due time,
  -- so its ready member can be found again by id.
  -- Written out here, not through pick_in_turns' ready_add / promoted_run: this loop runs for
  -- every job of a backlog, and two calls a job cost it 3% (callgrind, bench:scripts).
  local adds = {}
  for _, c in ipairs(readable(due, due_ids)) do
    adds[#adds + 1] = -c.priority
    if c.due_s then adds[#adds + 1] = ready_member_text(c.due_s, c.seq_s, c.id) else adds[#adds + 1] = ready_member(c.due, c.seq, c.id) end
    run_writes[#run_writes + 1] = c.id
    if c.ran then run_writes[#run_writes + 1] = encode_run(c.r.a, c.due, c.r.k, c.r.e, c.r.s, c.r.w) else run_writes[#run_writes + 1] = c.due_s or int(c.due) end
  end
  if #adds > 0 then call_chunked('ZADD', K_READY, adds) end
  local cands, ids = pop_ready(want)
  return readable(cands, ids, true)
end

-- Lanes (groups, and the jobs of no group) take turns: each lane at the head of the rotation
-- gives one job per round, up to its room, until the hand-out is full; a lane served goes to the
-- tail while it has more due and room, and leaves the rotation when it has not. Within a lane,
-- priority, then due time, then add order. One call per lane served (at most `want` lanes),
-- whatever the number of groups. Made only on a queue with groups (a closure costs every call).
local pick_in_turns = f.grouped and function()
  -- Whether candidate x came due before y (due time, then add order): the order lanes join in.
  local function earlier(x, y)
    if x.due ~= y.due then return x.due < y.due end
    return x.seq < y.seq
  end

  -- A promoted job's run state: a job never run gets the short form (its due time alone), cheaper
  -- to write and to read.
  local function promoted_run(c)
    run_writes[#run_writes + 1] = c.id
    if c.ran then run_writes[#run_writes + 1] = encode_run(c.r.a, c.due, c.r.k, c.r.e, c.r.s, c.r.w) else run_writes[#run_writes + 1] = c.due_s or int(c.due) end
  end

  local function ready_add(adds, c)
    adds[#adds + 1] = -c.priority
    if c.due_s then adds[#adds + 1] = ready_member_text(c.due_s, c.seq_s, c.id) else adds[#adds + 1] = ready_member(c.due, c.seq, c.id) end
  end
  -- Due jobs go to their lanes: those of no group to the ready set, those of a group to its line.
  local due, due_ids = take_due(promote_limit)
  local good = readable(due, due_ids)
  local good_ids = {}
  for i, c in ipairs(good) do good_ids[i] = c.id end
  local groups = groups_of(good_ids)
  local ready_adds, members, member_groups = {}, {}, {}
  local first = {} -- lane -> its earliest candidate promoted here
  for i, c in ipairs(good) do
    local g = groups[i]
    promoted_run(c)
    if g == UNGROUPED then
      ready_add(ready_adds, c)
    elseif c.due_s then
      members[#members + 1] = GL().waiting_member_text(g, c.priority, c.due_s, c.seq_s, c.id)
      member_groups[#member_groups + 1] = g
    else
      members[#members + 1] = GL().waiting_member(g, c.priority, c.due, c.seq, c.id)
      member_groups[#member_groups + 1] = g
    end
    if not first[g] or earlier(c, first[g]) then first[g] = c end
  end
  if #ready_adds > 0 then call_chunked('ZADD', K_READY, ready_adds) end
  GL().wait_in_line(members, member_groups)
  -- Groups whose tokens come back or whose hold ends now (rate-wake): their expired tokens are
  -- given back, the next look is booked while they hold tokens or a hold, and those with due jobs
  -- and room join the rotation after the lanes that got jobs here.
  local visited = {}
  if f.rated then
    visited = redis.call('ZRANGEBYSCORE', K_RATE_WAKE, '-inf', now, 'LIMIT', 0, LIMIT.rate_visits)
    if #visited > 0 then
      call_chunked('ZREM', K_RATE_WAKE, visited)
      RL().load(visited)
      GL().load_groups(visited)
      local again = {}
      for _, g in ipairs(visited) do
        RL().trim(g, now)
        local at = RL().free_at(g)
        if at then
          again[#again + 1] = at
          again[#again + 1] = g
        end
      end
      if #again > 0 then call_chunked('ZADD', K_RATE_WAKE, again) end
    end
  end
  local ready_count = redis.call('ZCARD', K_READY)
  -- Lanes that now have due jobs and room join the rotation's tail, in the order of their
  -- earliest job promoted here (the lane of no group, when it has ready jobs none of which came
  -- due here, first).
  local joining = {}
  if ready_count > 0 and not first[UNGROUPED] then joining[1] = UNGROUPED end
  local rest = {}
  for g, c in pairs(first) do
    if g == UNGROUPED or GL().group_room(GL().group_state(g)) > 0 then rest[#rest + 1] = { g = g, c = c } end
  end
  table.sort(rest, function(x, y) return earlier(x.c, y.c) end)
  for _, e in ipairs(rest) do joining[#joining + 1] = e.g end
  for _, g in ipairs(visited) do
    if not first[g] and GL().group_eligible(GL().GROUPS[g]) then joining[#joining + 1] = g end
  end
  GL().lanes_add(joining, false)

  -- The lanes at the head of the rotation, and how many jobs each may give.
  local heads = redis.call('ZRANGE', K_LANES, 0, want - 1)
  GL().load_groups(heads)
  if f.rated then RL().load(heads) end
  local lanes, gone = {}, {}
  for _, lane in ipairs(heads) do
    local avail = 0
    if lane == UNGROUPED then
      avail = ready_count
    else
      local st = GL().GROUPS[lane]
      avail = math.min(math.max(0, GL().group_room(st)), st.w)
      -- A group's tokens (one job takes at least one): a group with none leaves the rotation and
      -- is looked at again when they come back or its hold ends.
      if f.rated and avail > 0 then
        local tokens = RL().tokens(lane, GL().group_rate(st), now)
        if tokens < avail then avail = math.max(0, tokens) end
        if avail == 0 then rate_blocked[lane] = true end
      end
    end
    if avail > 0 then lanes[#lanes + 1] = { id = lane, avail = avail, take = 0 } else gone[#gone + 1] = lane end
  end
  -- Rounds: each lane one job per round while it has more, until the hand-out is full.
  local turns, total, round = {}, 0, 0
  while total < want do
    round = round + 1
    local any = false
    for i, l in ipairs(lanes) do
      if total < want and l.avail >= round then
        l.take = l.take + 1
        total = total + 1
        turns[#turns + 1] = i
        any = true
      end
    end
    if not any then break end
  end
  -- Take each lane's jobs from its line, in its order.
  local taken = {}
  for i, l in ipairs(lanes) do
    local cands, ids = {}, {}
    if l.id == UNGROUPED then
      cands, ids = pop_ready(l.take)
      ready_count = ready_count - #ids
    else
      local line = redis.call('ZRANGEBYLEX', K_WAITING, '[' .. l.id .. '\0', '(' .. l.id .. '\1', 'LIMIT', 0, l.take)
      if #line > 0 then call_chunked('ZREM', K_WAITING, line) end
      for n, member in ipairs(line) do
        local _, due_ms, _, id = GL().waiting_parts(member)
        ids[n] = id
        cands[n] = candidate(id, due_ms, false)
      end
      local st = GL().GROUPS[l.id]
      st.w = st.w - #line
      GL().touch_group(l.id)
    end
    for _, c in ipairs(cands) do c.lane = l.id end
    local ok = readable(cands, ids, true)
    taken[i] = ok
    l.got = #ids
  end
  -- The hand-out in turn order: a lane's k-th job in its k-th round.
  local picked, next_of = {}, {}
  for _, i in ipairs(turns) do
    local k = (next_of[i] or 0) + 1
    next_of[i] = k
    local c = taken[i][k]
    if c then picked[#picked + 1] = c end
  end
  return picked, lanes, gone, ready_count
end

local picked, served, gone, ready_left
if f.grouped then picked, served, gone, ready_left = pick_in_turns() else picked = pick_in_order() end

-- Each job's cost and debounce key (JOB_FLOW), on a queue that ever had a job with either.
local costs, debounce_keys = {}, {}
if f.flowed and #picked > 0 then
  local ids = {}
  for i, c in ipairs(picked) do ids[i] = c.id end
  for i, v in ipairs(hmget(K_FLOW_OF, ids)) do
    if v then
      local cost, key = string.match(v, '^(%d*):(.*)$')
      if cost and cost ~= '' and #cost < 17 then costs[i] = tonumber(cost) end
      if key and key ~= '' then debounce_keys[i] = key end
    end
  end
end

-- Rate limits: in hand-out order, each job takes its cost from the queue's tokens and its
-- group's. The first that does not fit the queue's stops the hand-out; one that does not fit its
-- group's stops that group's (both keep their order: they wait for their tokens). A job whose
-- cost is above a limit's max can never start: it goes to the dead set.
-- lane_got: the lanes that kept a job (the rotation below: a lane whose picks were all put back
-- for want of the queue's tokens was not served and keeps its place).
local q_taken, g_taken, g_rate, lane_got = 0, {}, {}, {}
if f.rated and #picked > 0 then
  local kept, back, stopped = {}, {}, false
  local g_left = {}
  for i, c in ipairs(picked) do
    local cost = costs[i] or 1
    local lane = c.lane or UNGROUPED
    local g_limit = false
    if lane ~= UNGROUPED then
      g_limit = GL().group_rate(GL().group_state(lane))
      if g_left[lane] == nil then g_left[lane] = RL().tokens(lane, g_limit, now) end
    end
    local too_big = (f.rate and cost > f.rate.max and f.rate.max) or (g_limit and cost > g_limit.max and g_limit.max)
    if too_big then
      bury_corrupt(c.id, 'cost ' .. int(cost) .. ' is above the rate limit max ' .. int(too_big), c.r.a, c.due, nil, c.r.s, c.r.w)
    elseif stopped or cost > q_left or (lane ~= UNGROUPED and (rate_blocked[lane] or cost > g_left[lane])) then
      if not stopped and cost > q_left then stopped = true end
      if lane ~= UNGROUPED and not stopped then rate_blocked[lane] = true end
      back[#back + 1] = c
    else
      q_left = q_left - cost
      q_taken = q_taken + cost
      lane_got[lane] = true
      if lane ~= UNGROUPED then
        g_left[lane] = g_left[lane] - cost
        g_taken[lane] = (g_taken[lane] or 0) + cost
        g_rate[lane] = g_limit
      end
      kept[#kept + 1] = c
      costs[#kept], debounce_keys[#kept] = costs[i], debounce_keys[i]
    end
  end
  for i = #kept + 1, #picked do costs[i], debounce_keys[i] = nil, nil end
  if #back > 0 then ready_left = (ready_left or 0) + put_back(back) end
  picked = kept
  if q_left <= 0 or stopped then q_exhausted = true end
end

-- 3. Hand them out with fresh lease tokens.
local deadline = now + lease_ms
local now_s = int(now)
local token_prefix = now_s .. '-'
local out = reply({ now_ms = now, next_wake_ms = -1, more = 0, deadline_ms = deadline, token_prefix = token_prefix, groups = '' })
if #picked > 0 then
  local token_base = take_seq(#picked)
  local actives, groups = {}, {}
  -- Scores as text: Redis turns a Lua number into text anyway, once per member.
  local deadline_s = int(deadline)
  for i, c in ipairs(picked) do
    groups[i] = c.lane or UNGROUPED
    local r = c.r
    local attempt = r.a + 1
    local token = token_prefix .. int(token_base + i)
    run_writes[#run_writes + 1] = c.id
    if attempt == 1 and c.due_s and not r.s and not r.e then
      -- A first hand-out, the common case: encode_run's text, from text already at hand.
      run_writes[#run_writes + 1] = '1:' .. c.due_s .. ':' .. token .. ':' .. now_s .. ':' .. worker .. ':'
    else
      run_writes[#run_writes + 1] = encode_run(attempt, c.due, token, r.e, r.s or now, worker)
    end
    actives[#actives + 1] = deadline_s
    actives[#actives + 1] = c.id
    hand_out(out, c.id, c.body, attempt, c.due, token_base + i, groups[i])
    if events_on() then emit(EVENT.claimed, c.id, 'attempt', attempt, 'due', int(c.due)) end
  end
  enter_active(actives, groups)
  out[R.groups] = table.concat(group_lines)
  memo_set(memo_key, int(now) .. ':' .. int(deadline) .. ':' .. int(token_base) .. ':' .. #picked, lease_ms)
  -- The tokens taken, one log entry per limiter, back one window from now. A group that took
  -- tokens is booked in rate-wake for when they come back (NX: an earlier booking stays), so a
  -- claim gives them back even once the group has nothing left to run.
  if f.rated then
    if f.rate and q_taken > 0 then RL().take(UNGROUPED, q_taken, now + f.rate.per, token_base, now) end
    local looks = {}
    for _, c in ipairs(picked) do
      local lane = c.lane
      if lane and g_taken[lane] and g_rate[lane] then
        RL().take(lane, g_taken[lane], now + g_rate[lane].per, token_base, now)
        looks[#looks + 1] = now + g_rate[lane].per
        looks[#looks + 1] = lane
        g_taken[lane] = nil
      end
    end
    if #looks > 0 then redis.call('ZADD', K_RATE_WAKE, 'NX', unpack(looks)) end
  end
  -- A debounced job that starts ends its burst: the next add with its key starts a new one.
  if f.flowed then
    local ended = {}
    for i, c in ipairs(picked) do
      local key = debounce_keys[i]
      if key then
        local held = redis.call('HGET', K_DEBOUNCE, key)
        if held and string.sub(held, 1, #c.id + 1) == c.id .. ':' and not string.find(held, ':', #c.id + 2, true) then ended[#ended + 1] = key end
      end
    end
    if #ended > 0 then call_chunked('HDEL', K_DEBOUNCE, ended) end
  end
end
flush_writes()

-- The lanes served go to the tail while they have more due and room; those found empty or
-- full leave the rotation (a slot freed or a job come due brings them back); one whose picks were
-- all put back for want of the queue's tokens keeps its place, first in the next claim.
if served then
  local tail = {}
  for _, l in ipairs(served) do
    local more
    if l.id == UNGROUPED then
      more = ready_left > 0
    else
      more = not rate_blocked[l.id] and GL().group_eligible(GL().GROUPS[l.id])
    end
    if not more then
      gone[#gone + 1] = l.id
    elseif not f.rated or lane_got[l.id] then
      tail[#tail + 1] = l.id
    end
  end
  GL().lanes_remove(gone)
  GL().lanes_add(tail, true)
  GL().save_groups()
  -- Groups held back by their rate limit: looked at again when a token comes back or their hold
  -- ends (LT: an earlier booking stays; that look books the next).
  local looks = {}
  for _, g in ipairs(gone) do
    if rate_blocked[g] then
      looks[#looks + 1] = RL().free_at(g) or (now + 1000)
      looks[#looks + 1] = g
    end
  end
  if #looks > 0 then redis.call('ZADD', K_RATE_WAKE, 'LT', unpack(looks)) end
end
if f.rated then RL().save() end

local next_due = head_score(K_SCHEDULED)
local next_lease = head_score(K_ACTIVE)
if at_limit and #picked >= want then
  -- The queue is at its concurrency limit: nothing more until a slot frees, which wakes workers.
  if next_lease ~= nil then out[R.next_wake_ms] = next_lease end
  return out
end
if q_exhausted then
  -- The queue's tokens ran out: due jobs wait for the oldest to come back (or the hold to end).
  local wake = RL().free_at(UNGROUPED)
  if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
  if wake ~= nil then out[R.next_wake_ms] = wake end
  return out
end
local waiting_now
if served then waiting_now = redis.call('ZCARD', K_LANES) > 0 else waiting_now = redis.call('ZCARD', K_READY) > 0 end
if waiting_now or (next_due ~= nil and next_due <= now) then out[R.more] = 1 end
local wake = next_due
if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
-- A group held back by its rate limit is looked at when its tokens come back.
if f.rated and served then
  local look = head_score(K_RATE_WAKE)
  if look ~= nil and (wake == nil or look < wake) then wake = look end
end
if wake ~= nil then out[R.next_wake_ms] = wake end
return out
