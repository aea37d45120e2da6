--[[ _claim_direct: the claim of a plain queue in one pass, pulled in by claim.lua only (after
_claim.lua, whose writes and burials it shares). A plain queue: no groups, no rate limits, no
held jobs, no job with a cost or a debounce key, every scheduled member in the form that keeps
add order and no job ever added with a priority, and an empty ready set. Then the scheduled
set's order is the hand-out order, and the first `want` due members are the picks.
Its own pass, not the general one (_claim.lua's take_due, readable, hand_out_picked): that one
makes a table per candidate and calls a helper or two per job, which is most of what a job
costs a claim in Lua; this one keeps the jobs in arrays and calls none per job a claim hands
out for the first time. What it writes and answers is the general path's, job for job.
]]

-- Whether this claim may take the direct pass: the queue's flags (`f`, flow()) and the
-- scheduled set's order, and an empty ready set (one ZCARD, which the general pick then reuses:
-- `ready_empty`). Also whether the queue is plain but for jobs with a priority (`plain`: an
-- indexed one hands its jobs of priority 0 out in this pass, CLAIM.hand_out_ranked).
function CLAIM.direct(f)
  local ready_empty = redis.call('ZCARD', K_READY) == 0
  local plain = not ((f.grouped and LIVE.turns(f)) or f.rated or (f.flowed and LIVE.flows(f)) or f.holds)
  if not plain or not ready_empty then return false, ready_empty, plain end
  local order = SCHED.order()
  return order.complete and not order.prioritized, ready_empty, plain
end

-- Hands out up to `want` due jobs in the scheduled set's order with fresh lease tokens `<now>-<n>`:
-- run states, the active set (one deadline for the batch), the reply `out`, the memo a re-sent
-- claim answers from, and how late they start in the queue's history (with `memo_key` false, one
-- pass of several: CLAIM.handed notes them). A body or run state it cannot read goes to the dead
-- set, a member whose body is gone is dropped (CLAIM.flush_writes writes both). Returns how many
-- it handed out, and whether it took the last due job of the set.
function CLAIM.hand_out_direct(out, want, deadline, worker, memo_key, lease_ms)
  local now, now_s = CS.now, CS.now_s
  CS.ready_empty = true
  -- The set's first two members first: a worker that keeps up finds none or one due, and then
  -- they are the hand-out and the head left after it, which CLAIM.wake need not read (a ZRANGE
  -- and its score: ~11k instructions). With both due, one member more than it takes: when that
  -- many are due, the one left is the head once these are gone.
  local flat = redis.call('ZRANGE', K_SCHEDULED, '0', '1', 'WITHSCORES')
  local first, second = tonumber(flat[2]), tonumber(flat[4])
  if first == nil or first > now then
    CS.next_due = first or false
    return 0, true
  end
  local last = true
  if second == nil or second > now or want == 1 then
    CS.next_due = second or false
    last = second == nil or second > now
    flat[3], flat[4] = nil, nil
  else
    flat = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', now_s, 'WITHSCORES', 'LIMIT', '0', text(want + 1))
  end
  local due_n = #flat / 2
  if due_n > want then
    due_n = want
    CS.next_due = tonumber(flat[2 * want + 2])
    last = false
  end
  -- The set's first members: one removal by rank (cheaper than a ZREM, which looks each one up).
  redis.call('ZREMRANGEBYRANK', K_SCHEDULED, '0', text(due_n - 1))
  local byte, sub, find = string.byte, string.sub, string.find
  -- Ids out of the members (SCHED.id written out: '\1', the seq's length as 48 + n, seq, id).
  local ids = {}
  for i = 1, due_n do
    local member = flat[2 * i - 1]
    local b1, b2 = byte(member, 1, 2)
    if b1 == 1 then ids[i] = sub(member, b2 - 45) else ids[i] = member end
  end
  local bodies, runs = hmget(K_JOBS, ids), hmget(K_RUNS, ids)
  -- Seq numbers for every due job: the tokens go to those handed out, in order (a buried job
  -- leaves a number unused, which costs nothing: seqs need only be unique and increasing).
  local token_base = take_seq(due_n)
  local token_texts = int_texts(token_base + 1, due_n)
  local token_prefix = now_s .. '-'
  -- ':<now>:<worker>:', the tail of every first hand-out's run state.
  local run_tail = ':' .. now_s .. ':' .. worker .. ':'
  local deadline_s = int(deadline)
  local run_writes, dropped, actives = CS.run_writes, CS.dropped, {}
  local at_id, at_body, at_attempt, at_due, at_token = RE.id, RE.body, RE.attempt, RE.due_ms, RE.token_number
  local events = events_on()
  local w, a, n, k = #run_writes, 0, #out, 0
  local late_sum, late_max = 0, 0
  -- Jobs of a backlog share their due ms in runs (all of them, for jobs added due now in one
  -- call): a score's text read as the one before it (interned strings: one compare) is that
  -- number, so strtod (~1.3k instructions) runs once a run. (Not `last`: that name says whether
  -- this pass took the set's last due job, and is returned below.)
  local run_s, run_ms = nil, nil
  for i = 1, due_n do
    local id, body, run = ids[i], bodies[i], runs[i]
    local due_s = flat[2 * i]
    if due_s ~= run_s then run_s, run_ms = due_s, tonumber(due_s) end
    local due = run_ms
    if not body then
      if run then dropped[#dropped + 1] = id end
    else
      -- A job never run (no run state) is the common case: no call to parse_run for it.
      local r, bad_run = NEVER_RUN, nil
      if run then r, bad_run = parse_run(run) end
      -- The body's header must read as body_order reads it (seq of at most 16 digits, priority
      -- of at most 17 characters). Its seq and priority are not needed (the set's order is the
      -- hand-out order): body_order's pattern with positions for captures (the first ':' and the
      -- priority's bounds), not captured text, so no string is made (~3k a job).
      local _, _, seq_end, p_start, p_end = find(body, '^%d+():%d+:()%-?%d+():')
      local bad_body = nil
      if not seq_end or seq_end > 17 or p_end - p_start > 17 then _, _, bad_body = body_order(body) end
      if not r or r.bad or bad_body then
        CLAIM.bury_corrupt(id, bad_run or (r and r.bad) or bad_body, r and r.a, due)
        -- The burial wrote its run state at the end of run_writes: go on after it.
        w = #run_writes
      else
        -- From here on, CLAIM.hand_out_picked's lines for one job, written out: a call per job
        -- is what this pass saves.
        k = k + 1
        local late = now - due
        if late > 0 then
          late_sum = late_sum + late
          if late > late_max then late_max = late end
        end
        local attempt = r.a + 1
        run_writes[w + 1] = id
        -- A first hand-out of a job due at a whole ms (the score's text is int()'s then: Redis
        -- writes scores with %.17g, which writes those plainly): its run state from text at hand.
        if attempt == 1 and not r.s and not r.e and due >= 1 and due < 1e16 and due % 1 == 0 then
          run_writes[w + 2] = '1:' .. due_s .. ':' .. token_prefix .. token_texts[k] .. run_tail
        else
          run_writes[w + 2] = encode_run(attempt, due, token_prefix .. token_texts[k], r.e, r.s or now, worker)
        end
        w = w + 2
        actives[a + 1], actives[a + 2] = deadline_s, id
        a = a + 2
        out[n + at_id] = id
        out[n + at_body] = body
        out[n + at_attempt] = attempt
        out[n + at_due] = due
        out[n + at_token] = token_base + k
        n = n + R_EACH_SIZE
        if events then emit(EVENT.claimed, id, 'attempt', attempt, 'due', int(due)) end
      end
    end
  end
  if k == 0 then return 0, last end
  -- No job here has a group: the active set alone (enter_active counts groups' slots).
  enter_active(actives, {})
  if memo_key == false then
    CLAIM.handed(token_base, k, k, late_sum, late_max, deadline_s)
  else
    note_history(now, 0, 0, 0, k, late_sum, late_max)
    memo_set(memo_key, now_s .. ':' .. deadline_s .. ':' .. int(token_base) .. ':' .. text(k), lease_ms)
  end
  return k, last
end

-- The hand-out of a queue plain but for its jobs with a priority, all indexed (CLAIM.pick_ranked):
-- the ready set's jobs of a higher priority (`higher`, picked), then up to `rest` due jobs of
-- the scheduled set (all of priority 0) in the one pass, then, once none is left due there, the
-- ready set's jobs of a lower priority for what is left; one memo and one history note for all.
-- Returns how many it handed out.
function CLAIM.hand_out_ranked(out, higher, rest, deadline, worker, memo_key, lease_ms)
  CS.hand = { n = 0, base = 0, last = 0, sum = 0, max = 0, deadline_s = '' }
  local handed = #higher
  if handed > 0 then CLAIM.hand_out_picked(out, higher, deadline, worker, false) end
  if rest > 0 then
    handed = handed + CLAIM.hand_out_ranked_rest(out, rest, deadline, worker)
  end
  CLAIM.note_handed(memo_key, lease_ms)
  return handed
end

-- hand_out_ranked's jobs of priority 0 and lower: how many it handed out.
function CLAIM.hand_out_ranked_rest(out, rest, deadline, worker)
  local k, last = CLAIM.hand_out_direct(out, rest, deadline, worker, false)
  -- Jobs of a lower priority may still wait in the ready set (CLAIM.wake looks).
  CS.ready_empty = false
  if k >= rest or not last then return k end
  local lower, ids = CLAIM.pop_ready(rest - k)
  local picks = CLAIM.readable(lower, ids, true)
  if #picks > 0 then CLAIM.hand_out_picked(out, picks, deadline, worker, false) end
  return k + #picks
end
