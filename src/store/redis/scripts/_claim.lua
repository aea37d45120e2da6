--[[ _claim: the claim's own seams, pulled in by claim.lua only (after _lifecycle.lua): the
writes a claim decides as it goes, the recovery of expired leases, the candidates and how they
are read, and the pick of a queue without groups (one order over every due job). Turns between
groups are in _claim_turns.lua, rate limits in _claim_rates.lua; claim.lua drives them.
In the library these functions are made once, at load (the fields of CLAIM, so they take one
of the library's 200 top-level names, not one each); what one claim decides lives in CS, which
CLAIM.begin makes as the claim begins.
]]

-- The claim's functions (made once, at load, in the library).
local CLAIM = {}

-- What one claim decided so far (per call: set by CLAIM.begin): `now`; run states to write
-- (`run_writes`, HSET K_RUNS pairs), members whose body is gone (`dropped`: their run states go
-- too), jobs to bury (`buried`) and to reschedule (`rescheduled`), all written by flush_writes;
-- groups held back by their rate limit in this claim (`rate_blocked`: their turn ends, rate-wake
-- brings them back); the reply's lines naming the groups of the jobs handed out (`group_lines`,
-- wire.ts CLAIM_GROUPS); the passes of a claim that hands out in several (`hand`, made by
-- CLAIM.hand_out_ranked only: CLAIM.handed).
local CS = nil

function CLAIM.begin(now)
  -- `now_s`: the time as text, made once: the claim's ranges read up to it, its tokens and run
  -- states start with it (a Lua number passed to redis.call is written with %.17g: ~2.4k
  -- instructions each time).
  -- `ready_empty`: the pick found the ready set empty and put nothing in it (the wake then needs
  -- no second look at it). `next_due`: the scheduled set's head after the hand-out, when the
  -- hand-out read it (false: the set is empty; nil: CLAIM.wake reads it). `next_lease`: the active
  -- set's earliest deadline, when the recovery read it and the claim kept track since (false: no
  -- lease; nil: CLAIM.next_lease reads it).
  CS = { now = now, now_s = int(now), ready_empty = false, run_writes = {}, dropped = {}, buried = {}, rescheduled = {}, rate_blocked = {}, group_lines = {} }
end

-- One hand-out: wire.ts CLAIM_JOB, five reply elements; a job of a group is named in the
-- `groups` field (CLAIM_GROUPS), so a queue without groups pays nothing per job for them. The
-- body goes out as stored and the numbers as integers: no string is built per job.
function CLAIM.hand_out(out, id, body, attempt, due, token_number, group)
  local n = #out
  if group ~= UNGROUPED then CS.group_lines[#CS.group_lines + 1] = ((n - R_EACH_FIRST + 1) / R_EACH_SIZE + 1) .. '\t' .. group .. '\n' end
  out[n + RE.id] = id
  out[n + RE.body] = body
  out[n + RE.attempt] = attempt
  out[n + RE.due_ms] = due
  out[n + RE.token_number] = token_number
end

-- A re-sent claim's answer: the batch the first run handed out (memo
-- '<now>:<deadline>:<first token number>:<count>'), those of its jobs still held by its tokens.
function CLAIM.resent(memo)
  local m_now, m_deadline, m_base, m_count = string.match(memo, '^(%d+):(%d+):(%d+):(%d+)$')
  m_now, m_deadline, m_base, m_count = tonumber(m_now), tonumber(m_deadline), tonumber(m_base), tonumber(m_count)
  local prefix = int(m_now) .. '-'
  local out = reply({ now_ms = m_now, next_wake_ms = -1, more = 1, deadline_ms = m_deadline, token_prefix = prefix, groups = '', holds = '' })
  -- The batch's jobs share its deadline (their holder never got the reply, so none was extended).
  local held = redis.call('ZRANGEBYSCORE', K_ACTIVE, m_deadline, m_deadline)
  local runs, bodies, groups = hmget(K_RUNS, held), hmget(K_JOBS, held), groups_of(held)
  for i, id in ipairs(held) do
    local r = parse_run(runs[i])
    if r and bodies[i] and string.sub(r.k, 1, #prefix) == prefix then
      local k = as_int(string.sub(r.k, #prefix + 1))
      if k and k > m_base and k <= m_base + m_count then CLAIM.hand_out(out, id, bodies[i], r.a, r.t or m_now, k, groups[i]) end
    end
  end
  out[R.groups] = table.concat(CS.group_lines)
  if flow().holds then
    local ids, positions = {}, {}
    for i = R_EACH_FIRST, #out, R_EACH_SIZE do
      ids[#ids + 1] = out[i + RE.id - 1]
      positions[#positions + 1] = (i - R_EACH_FIRST) / R_EACH_SIZE + 1
    end
    out[R.holds] = HOLDS.claim_lines(ids, positions)
  end
  return out
end

-- Hands the picks out with fresh lease tokens `<now>-<n>` (n from the queue's seq): their run
-- states, the active set (one deadline for the batch), the reply, the memo a re-sent claim
-- answers from, and how late they start in the queue's history (with `memo_key` false, one pass
-- of several: CLAIM.handed notes them). Returns the first token number less one.
function CLAIM.hand_out_picked(out, picked, deadline, worker, memo_key, lease_ms)
  local now = CS.now
  local now_s = CS.now_s
  local token_prefix = now_s .. '-'
  local token_base = take_seq(#picked)
  local token_texts = int_texts(token_base + 1, #picked)
  local actives, groups, run_writes, group_lines = {}, {}, CS.run_writes, CS.group_lines
  -- The reply's positions read once (locals, not a table lookup per job and field).
  local at_id, at_body, at_attempt, at_due, at_token = RE.id, RE.body, RE.attempt, RE.due_ms, RE.token_number
  -- Scores as text: Redis turns a Lua number into text anyway, once per member.
  local deadline_s = int(deadline)
  -- How late the jobs start, for the queue's history.
  local late_sum, late_max = 0, 0
  -- Counts kept, not asked of the tables (`#t` searches for the table's end each time), and the
  -- stream's switch asked once: this loop runs once per handed-out job.
  local events = events_on()
  local w, a, n = #run_writes, 0, #out
  -- ':<now>:<worker>:', the tail of every first hand-out's run state.
  local run_tail = ':' .. now_s .. ':' .. worker .. ':'
  for i = 1, #picked do
    local c = picked[i]
    local id, due = c.id, c.due
    local late = now - due
    if late > 0 then
      late_sum = late_sum + late
      if late > late_max then late_max = late end
    end
    local group = c.lane or UNGROUPED
    groups[i] = group
    local r = c.r
    local attempt = r.a + 1
    run_writes[w + 1] = id
    if attempt == 1 and c.due_s and not r.s and not r.e then
      -- A first hand-out, the common case: encode_run's text, from text already at hand (the
      -- token made within it, not as a string of its own).
      run_writes[w + 2] = '1:' .. c.due_s .. ':' .. token_prefix .. token_texts[i] .. run_tail
    else
      run_writes[w + 2] = encode_run(attempt, due, token_prefix .. token_texts[i], r.e, r.s or now, worker)
    end
    w = w + 2
    actives[a + 1], actives[a + 2] = deadline_s, id
    a = a + 2
    -- The job's position in the reply is i (int: `..` would write the number with %.14g).
    if group ~= UNGROUPED then group_lines[#group_lines + 1] = int(i) .. '\t' .. group .. '\n' end
    out[n + at_id] = id
    out[n + at_body] = c.body
    out[n + at_attempt] = attempt
    out[n + at_due] = due
    out[n + at_token] = token_base + i
    n = n + R_EACH_SIZE
    if events then emit(EVENT.claimed, id, 'attempt', attempt, 'due', int(due)) end
  end
  enter_active(actives, groups)
  out[R.groups] = table.concat(group_lines)
  if memo_key == false then
    CLAIM.handed(token_base, #picked, #picked, late_sum, late_max, deadline_s)
  else
    note_history(now, 0, 0, 0, #picked, late_sum, late_max)
    memo_set(memo_key, now_s .. ':' .. deadline_s .. ':' .. int(token_base) .. ':' .. text(#picked), lease_ms)
  end
  return token_base
end

-- Notes a pass of a claim's hand-out in several (CLAIM.hand_out_ranked): it took the token
-- numbers after `token_base` up to `token_base + span` and handed out `n` jobs, `late_sum` /
-- `late_max` ms late, with leases to `deadline_s` (as text); CLAIM.note_handed writes them once.
-- Kept in CS.hand, which only such a claim makes: a claim of one pass writes its own memo and
-- history (through this seam, with a table and two calls more, it cost a one-job claim ~4k
-- instructions).
function CLAIM.handed(token_base, span, n, late_sum, late_max, deadline_s)
  local h = CS.hand
  if h.n == 0 then h.base, h.deadline_s = token_base, deadline_s end
  h.last = token_base + span
  h.n, h.sum = h.n + n, h.sum + late_sum
  if late_max > h.max then h.max = late_max end
end

-- The claim's hand-out in the queue's history (how late its jobs start) and the memo a re-sent
-- claim answers from: '<now>:<deadline>:<first token number less one>:<span>', the span covering
-- every number its passes took (one a buried job left unused included: the re-sent claim answers
-- with the jobs still held by tokens in it).
function CLAIM.note_handed(memo_key, lease_ms)
  local h = CS.hand
  if h.n == 0 then return end
  note_history(CS.now, 0, 0, 0, h.n, h.sum, h.max)
  memo_set(memo_key, CS.now_s .. ':' .. h.deadline_s .. ':' .. int(h.base) .. ':' .. text(h.last - h.base), lease_ms)
end

-- A debounced job that starts ends its burst: the next add with its key starts a new one.
-- `debounce_keys` by position in `picked`.
function CLAIM.end_started_bursts(picked, debounce_keys)
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

-- When the claiming workers should look again, and whether due jobs are left (`more`), in the
-- reply `out`: at the queue's concurrency limit, when a slot frees (its next lease deadline);
-- with its tokens gone, when they come back; else the next due time or lease deadline (or a
-- group's tokens coming back).
function CLAIM.wake(out, full, exhausted, grouped, f)
  local now = CS.now
  -- The scheduled set's head, unless the hand-out saw it (CLAIM.hand_out_direct).
  local next_due = CS.next_due
  if next_due == nil then
    next_due = head_score(K_SCHEDULED)
  elseif next_due == false then
    next_due = nil
  end
  local next_lease = CLAIM.next_lease()
  if full then
    if next_lease ~= nil then out[R.next_wake_ms] = next_lease end
    return out
  end
  if exhausted then
    -- Due jobs wait for the oldest tokens to come back (or the hold to end).
    local wake = RL().free_at(UNGROUPED)
    if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
    if wake ~= nil then out[R.next_wake_ms] = wake end
    return out
  end
  local waiting_now
  if grouped then
    waiting_now = redis.call('ZCARD', K_LANES) > 0
  else
    waiting_now = not CS.ready_empty and redis.call('ZCARD', K_READY) > 0
  end
  if waiting_now or (next_due ~= nil and next_due <= now) then out[R.more] = 1 end
  local wake = next_due
  if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
  -- A held job runs when its deadline passes.
  if f.holds then
    local deadline = HOLDS.next_deadline()
    if deadline ~= nil and (wake == nil or deadline < wake) then wake = deadline end
  end
  -- A group held back by its rate limit is looked at when its tokens come back.
  if f.rated and grouped then
    local look = head_score(K_RATE_WAKE)
    if look ~= nil and (wake == nil or look < wake) then wake = look end
  end
  if wake ~= nil then out[R.next_wake_ms] = wake end
  return out
end

-- `token` is the recovered lease's mark (MARK.recovered .. token), so its holder's later calls are stale.
function CLAIM.bury_corrupt(id, reason, attempts, due, token, started, worker)
  CS.run_writes[#CS.run_writes + 1] = id
  CS.run_writes[#CS.run_writes + 1] = encode_run(attempts or 0, due, token or '', reason, started, worker)
  CS.buried[#CS.buried + 1] = id
  emit(EVENT.dead, id, 'error', reason)
end

-- Writes what was decided so far: run states, dropped members, burials, reschedules.
function CLAIM.flush_writes()
  hset_pairs(K_RUNS, CS.run_writes)
  if #CS.dropped > 0 then call_chunked('HDEL', K_RUNS, CS.dropped) end
  finish(FINISH.dead, CS.buried, CS.now)
  schedule_many(CS.rescheduled, nil, true)
  CS.run_writes, CS.dropped, CS.buried, CS.rescheduled = {}, {}, {}, {}
end

-- The active set's earliest lease deadline (nil: no lease), read once a claim: the recovery's
-- look at the set's head serves the wake as well, while the claim keeps it (CLAIM.leased).
function CLAIM.next_lease()
  local n = CS.next_lease
  if n == nil then return head_score(K_ACTIVE) end
  return n or nil
end

-- The claim handed out leases up to `deadline`: the earliest deadline, if known, is kept known.
function CLAIM.leased(deadline)
  local n = CS.next_lease
  if n == false or (n and deadline < n) then CS.next_lease = deadline end
end

-- Recovers up to `reap_limit` expired leases: back to scheduled (due now), or dead when no
-- attempts are left. Decided here, written by the next flush_writes. The set's head first: a
-- claim mostly finds no lease run out, and that one read then also tells the wake the next
-- deadline (one call a claim fewer than a range read here and a head read there).
function CLAIM.recover_expired(reap_limit, default_max)
  local now = CS.now
  local first = head_score(K_ACTIVE)
  if first == nil or first > now then
    CS.next_lease = first or false
    return
  end
  local expired = redis.call('ZRANGEBYSCORE', K_ACTIVE, '-inf', CS.now_s, 'LIMIT', '0', text(reap_limit))
  if #expired == 0 then return end
  leave_active(expired)
  local runs, bodies = hmget(K_RUNS, expired), hmget(K_JOBS, expired)
  for i, id in ipairs(expired) do
    local r, bad_run = parse_run(runs[i])
    local b, bad_body = parse_body(bodies[i])
    if not bodies[i] then
      CS.dropped[#CS.dropped + 1] = id
    elseif not r or r.bad or not b then
      CLAIM.bury_corrupt(id, bad_run or (r and r.bad) or bad_body, r and r.a, r and r.t, r and (MARK.recovered .. r.k), r and r.s, r and r.w)
    else
      local max = b.max or default_max
      local recovered = MARK.recovered .. r.k
      local why = 'lease expired during attempt ' .. r.a .. ' of ' .. max
      CS.run_writes[#CS.run_writes + 1] = id
      -- Out of attempts: the max that applied is kept in the run state (the reads show it).
      CS.run_writes[#CS.run_writes + 1] = encode_run(r.a, r.t, recovered, why, r.s, r.w, r.a >= max and max or nil)
      emit(EVENT.leaseExpired, id, 'attempt', r.a)
      if r.a >= max then
        CS.buried[#CS.buried + 1] = id
        emit(EVENT.dead, id, 'attempt', r.a, 'error', why)
      else
        CS.rescheduled[#CS.rescheduled + 1] = now
        CS.rescheduled[#CS.rescheduled + 1] = SCHED.at(id, bodies[i])
      end
    end
  end
end

-- A candidate with every field CLAIM.readable() sets, so the table is sized once (growing a Lua
-- table's hash part rehashes it, which showed in the claim's profile).
-- `due_s` is the due time as stored text when it is a plain whole number (a score or a short
-- run state), so a first hand-out writes it back without formatting it again; false otherwise.
function CLAIM.candidate(id, due, due_s)
  return { id = id, due = due, due_s = due_s, seq = false, seq_s = false, priority = false, r = false, body = false, ran = false }
end

-- Plain digits, at most 16: the text of a whole-number due time as int() would write it.
function CLAIM.plain_ms(s)
  if #s < 17 and string.find(s, '^[1-9]%d*$') then return s end
  return false
end

-- Reads candidates { id, due } (and `ids`, their ids in order) in one HMGET each of bodies and
-- run states: those that can be handed out come back with { seq, priority, r = run state,
-- body = packed body, ran = whether a run state was stored }; corrupt ones are buried, members
-- whose body is gone are dropped. With `ordered` the candidates come from the ready set, whose
-- members already hold the order: their bodies are not read for it (the body was read when it
-- was promoted, and the worker buries one it cannot read).
function CLAIM.readable(cands, ids, ordered, in_set_order)
  local bodies, runs = hmget(K_JOBS, ids), hmget(K_RUNS, ids)
  local out = {}
  for i = 1, #cands do
    local c, run, body = cands[i], runs[i], bodies[i]
    -- A job never run (no run state) is the common case: no call to parse_run for it.
    local r, bad_run = NEVER_RUN, nil
    if run then r, bad_run = parse_run(run) end
    local seq_s, priority, bad_body = true, 0, nil
    if not ordered then seq_s, priority, bad_body = body_order(body) end
    if not body then
      if run then CS.dropped[#CS.dropped + 1] = c.id end
    elseif not r or r.bad or not seq_s then
      CLAIM.bury_corrupt(c.id, bad_run or (r and r.bad) or bad_body, r and r.a, c.due)
    else
      c.priority, c.r, c.body, c.ran = priority, r, body, run ~= false
      -- `in_set_order`: the scheduled set's order is the hand-out order, so nothing compares seqs.
      if not ordered then
        c.seq_s = seq_s
        if not in_set_order then c.seq = tonumber(seq_s) end
      end
      -- A ready job's short run state is its due time as int() wrote it when it was promoted; the
      -- member's due time decides (this claim's promotions are not written yet, so the run state
      -- read here may be one a reschedule left behind).
      if ordered and r.t == c.due and r.a == 0 and not string.find(run, ':', 1, true) then c.due_s = CLAIM.plain_ms(run) end
      out[#out + 1] = c
    end
  end
  return out
end

-- The hand-out order: priority, then due time, then add order.
function CLAIM.before(x, y)
  if x.priority ~= y.priority then return x.priority > y.priority end
  if x.due ~= y.due then return x.due < y.due end
  return x.seq < y.seq
end

-- A promoted job's run state: a job never run gets the short form (its due time alone), cheaper
-- to write and to read.
function CLAIM.promoted_run(c)
  local run_writes = CS.run_writes
  run_writes[#run_writes + 1] = c.id
  if c.ran then run_writes[#run_writes + 1] = encode_run(c.r.a, c.due, c.r.k, c.r.e, c.r.s, c.r.w) else run_writes[#run_writes + 1] = c.due_s or int(c.due) end
end

-- A candidate's ready-set entry, appended to ZADD's score/member pairs.
function CLAIM.ready_add(adds, c)
  adds[#adds + 1] = -c.priority
  if c.due_s then adds[#adds + 1] = ready_member_text(c.due_s, c.seq_s, c.id) else adds[#adds + 1] = ready_member(c.due, c.seq, c.id) end
end

-- Reads due members of the scheduled set (at most `limit`, in the set's order) as candidates and
-- takes them out. They are the set's first members, so one range removal by rank takes them
-- (cheaper than a ZREM, which looks each member up). Those indexed go out of the index
-- (SCHED.unindex), unless the caller took every due indexed job out first (`unindexed`).
function CLAIM.take_due(limit, unindexed)
  local flat = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', CS.now_s, 'WITHSCORES', 'LIMIT', '0', text(limit))
  local due, due_ids = {}, {}
  local n = 0
  if not unindexed and #flat > 0 and SCHED.order().prioritized then
    local members = {}
    for i = 1, #flat, 2 do members[#members + 1] = flat[i] end
    SCHED.unindex(members)
  end
  for i = 1, #flat, 2 do
    n = n + 1
    local id, score = SCHED.id(flat[i]), flat[i + 1]
    due_ids[n] = id
    -- The score's text is int()'s when it is a whole number of at most 16 digits (Redis writes
    -- scores with %.17g, which writes those plainly): CLAIM.plain_ms's verdict, by arithmetic on
    -- the number the claim reads anyway, not a pattern.
    local due_ms = tonumber(score)
    local due_s = false
    if due_ms >= 1 and due_ms < 1e16 and due_ms % 1 == 0 then due_s = score end
    due[n] = CLAIM.candidate(id, due_ms, due_s)
  end
  if #due_ids > 0 then redis.call('ZREMRANGEBYRANK', K_SCHEDULED, '0', text(#due_ids - 1)) end
  return due, due_ids
end

-- Pops the best `n` of the ready set as candidates (with `higher`, only of those with a priority
-- above 0: a score below 0). ZRANGE + ZREMRANGEBYRANK, not ZPOPMIN: on Redis 7.0 ZPOPMIN removes
-- each member by its score and member (~2.4 µs a member measured), the range removal walks the
-- head once (~1.5).
function CLAIM.pop_ready(n, higher)
  local popped = {}
  if n > 0 then
    if higher then
      popped = redis.call('ZRANGEBYSCORE', K_READY, '-inf', '(0', 'LIMIT', '0', text(n))
    else
      popped = redis.call('ZRANGE', K_READY, '0', text(n - 1))
    end
  end
  if #popped > 0 then redis.call('ZREMRANGEBYRANK', K_READY, '0', text(#popped - 1)) end
  local cands, ids = {}, {}
  for i, member in ipairs(popped) do
    ids[i] = ready_id(member)
    cands[i] = CLAIM.candidate(ids[i], tonumber(string.sub(member, 1, 16)), false)
  end
  return cands, ids
end

-- The pick of a queue without groups: one order over all its due jobs, `want` at most (and, from
-- CLAIM.pick_ranked, how many more CLAIM.hand_out_ranked hands out after them).
-- `ready_empty`: whether the ready set is empty (CLAIM.direct asked); `plain`: the queue has no
-- groups taking turns, rate limit, held job or job with a cost or a debounce key, so the jobs of
-- priority 0 of an indexed queue may go out in the one pass (CLAIM.pick_ranked).
function CLAIM.pick_in_order(want, promote_limit, ready_empty, plain)
  -- A queue whose scheduled members all keep add order (SCHEDULED_MEMBER) and that never had a
  -- job with a priority: the set's order is the hand-out order (due time, then add order), so
  -- the first `want` due members are the picks, however many are due. No ready set, and each
  -- job's body and run state are read once.
  local order = SCHED.order()
  if ready_empty and order.complete and not order.prioritized then
    CS.ready_empty = true
    local due, due_ids = CLAIM.take_due(want)
    return CLAIM.readable(due, due_ids, false, true)
  end
  -- Such a queue with jobs with a priority, each of them in the index (SCHED): only those go
  -- through the ready set.
  if order.complete and order.indexed then
    local picked, rest = CLAIM.pick_ranked(want, promote_limit, plain)
    if picked then return picked, rest end
    ready_empty = redis.call('ZCARD', K_READY) == 0
  end
  -- One read of the due members decides the path and feeds it: when the ready set is empty it
  -- reads one more than a hand-out takes, to see whether all fit.
  local limit = promote_limit
  if ready_empty then limit = math.max(promote_limit, want + 1) end
  local due, due_ids = CLAIM.take_due(limit)
  if ready_empty and #due <= want then
    CS.ready_empty = true
    -- Fast path: everything due fits in this hand-out, so order it here and skip the ready set.
    local picked = CLAIM.readable(due, due_ids)
    -- Due jobs come in due order, usually already the hand-out order: one pass checks it, which
    -- costs a tenth of a sort (Lua calls the comparison for each of n log n pairs).
    local sorted = true
    for i = 2, #picked do
      if CLAIM.before(picked[i], picked[i - 1]) then
        sorted = false
        break
      end
    end
    if not sorted then table.sort(picked, CLAIM.before) end
    return picked
  end
  -- More is due than one hand-out takes: move due jobs into the ready set, which keeps them in
  -- priority order, and take the best from there. A ready job's run state holds its due time,
  -- so its ready member can be found again by id.
  CLAIM.promote(due, due_ids)
  local cands, ids = CLAIM.pop_ready(want)
  return CLAIM.readable(cands, ids, true)
end

-- Moves candidates taken out of the scheduled set into the ready set, in priority order, with
-- the run state that keeps a ready job's due time.
function CLAIM.promote(due, due_ids)
  local adds = {}
  local run_writes = CS.run_writes
  -- Written out here, not through ready_add / promoted_run: this loop runs for every job of a
  -- backlog, and two calls a job cost it 3% (callgrind, bench:scripts).
  for _, c in ipairs(CLAIM.readable(due, due_ids)) do
    adds[#adds + 1] = -c.priority
    if c.due_s then adds[#adds + 1] = ready_member_text(c.due_s, c.seq_s, c.id) else adds[#adds + 1] = ready_member(c.due, c.seq, c.id) end
    run_writes[#run_writes + 1] = c.id
    if c.ran then run_writes[#run_writes + 1] = encode_run(c.r.a, c.due, c.r.k, c.r.e, c.r.s, c.r.w) else run_writes[#run_writes + 1] = c.due_s or int(c.due) end
  end
  if #adds > 0 then call_chunked('ZADD', K_READY, adds) end
end

-- The pick of a queue whose scheduled members keep add order and whose jobs with a priority are
-- all in the index (K_RANKED, SCHED order.indexed). The due ones of those go into the ready set;
-- every other due job is of priority 0 and stays in the scheduled set, whose order is its
-- hand-out order. So the hand-out is the ready set's jobs of a higher priority, then the
-- scheduled set's due jobs, then the ready set's jobs of a lower priority: the order of the
-- general path, with only the jobs with a priority moved twice.
-- More jobs with a priority due than one claim promotes (`promote_limit`, in due order): this
-- claim hands out only the ready set's jobs of a higher priority, as a job of priority 0 may not
-- pass one not promoted yet; the claims after it promote the rest.
-- Returns nil when this claim must take the general path: the ready set holds jobs of priority 0
-- (the general path, a rate limit's put-back or an older version left them; that path moves them
-- on), or jobs with a priority are left to promote and the ready set has none of a higher one
-- (the general path then hands out the best of the due jobs it promotes, so no claim comes back
-- empty while jobs are due). On a `plain` queue it returns the higher priorities alone and how
-- many more the claim may hand out, which CLAIM.hand_out_ranked hands out in the one pass.
function CLAIM.pick_ranked(want, promote_limit, plain)
  local flat = redis.call('ZRANGEBYSCORE', K_RANKED, '-inf', CS.now_s, 'LIMIT', '0', text(promote_limit + 1))
  local more_ranked = #flat > promote_limit
  if more_ranked then flat[#flat] = nil end
  if #flat > 0 then
    -- The scheduled set decides: a member it no longer holds (an older version's claim took the
    -- job) is dropped from the index, one not due there stays in it at its score there.
    local scores = {}
    for i = 1, #flat, CHUNK do
      for _, score in ipairs(redis.call('ZMSCORE', K_SCHEDULED, unpack(flat, i, math.min(i + CHUNK - 1, #flat)))) do scores[#scores + 1] = score end
    end
    -- `unindexed`: the entries that leave the index (gone from the scheduled set, or taken now).
    local due, due_ids, taken, unindexed, kept = {}, {}, {}, {}, {}
    for i, member in ipairs(flat) do
      local score = scores[i]
      local due_ms = score and tonumber(score)
      if not due_ms then
        unindexed[#unindexed + 1] = member
      elseif due_ms > CS.now then
        kept[#kept + 1] = score
        kept[#kept + 1] = member
      else
        local id = SCHED.id(member)
        taken[#taken + 1] = member
        unindexed[#unindexed + 1] = member
        due_ids[#due_ids + 1] = id
        local due_s = false
        if due_ms >= 1 and due_ms < 1e16 and due_ms % 1 == 0 then due_s = score end
        due[#due + 1] = CLAIM.candidate(id, due_ms, due_s)
      end
    end
    if #unindexed > 0 then call_chunked('ZREM', K_RANKED, unindexed) end
    if #kept > 0 then call_chunked('ZADD', K_RANKED, kept) end
    if #taken > 0 then
      call_chunked('ZREM', K_SCHEDULED, taken)
      CLAIM.promote(due, due_ids)
    end
  end
  if redis.call('ZCOUNT', K_READY, '0', '0') > 0 then return nil end
  -- The ready set's jobs of a higher priority (score below 0) lead it.
  local cands, ids = CLAIM.pop_ready(want, true)
  local picked = CLAIM.readable(cands, ids, true)
  if more_ranked then
    if #ids == 0 then return nil end
    return picked
  end
  if plain then return picked, want - #ids end
  -- Then the due jobs of the scheduled set (every one due with a priority is in the ready set
  -- now), then the ready set's rest: only jobs of a lower priority are left in it.
  if #ids < want then
    local due, due_ids = CLAIM.take_due(want - #ids, true)
    for _, c in ipairs(CLAIM.readable(due, due_ids, false, true)) do picked[#picked + 1] = c end
    if #due < want - #ids then
      local lower, lower_ids = CLAIM.pop_ready(want - #ids - #due)
      for _, c in ipairs(CLAIM.readable(lower, lower_ids, true)) do picked[#picked + 1] = c end
    end
  end
  return picked
end
