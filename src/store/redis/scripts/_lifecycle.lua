--[[ _lifecycle: the one way into and out of the active set, what a lease token becomes when
its lease ends, and the one way a job's life ends (finish). Pulled in by `--@include
_lifecycle.lua` after _helpers.lua in every script that hands out, ends or renews a lease or
ends a job (after _groups.lua, whose group counts it keeps); the places, ends, events and marks
come from src/store/lifecycle.ts through the generated prologue (PLACE, FINISH, EVENT, MARK).
Every way into `active` is enter_active (a claim's hand-out); every way out is leave_active
(ack, fail, snooze, release, and a claim recovering an expired lease); renew_active moves a
deadline. A rule that spans every transition (a running count per group, a rate limit) goes
here, once; test/unit/lifecycle.test.ts fails when a script writes the active set otherwise.
In the run state a token becomes MARK.given_up .. token once its holder ended the attempt (fail,
snooze, release), MARK.recovered .. token once a claim took the lease back after it ran out,
and MARK.kept .. token once completed and kept. lease_status reads them: a re-sent call (ioredis
re-sends after a reconnect) finds its own mark and answers as its first run did, and a stale
holder answers lease lost.
]]

-- The lease token a run state holds ('' when none or unreadable).
local function held_token(run)
  if not run then return '' end
  return string.match(run, '^[^:]*:[^:]*:([^:]*):') or ''
end

-- The lease token a run state holds while its lease lives: nil once it ended (marked) and for an
-- empty token field (a job buried as corrupt, then retried). LIVE_TOKEN, from the prologue, is
-- held_token's pattern with a first character that is no MARK, so `live_token(run) == token` is
-- the one check that a token holds a lease: a caller sending the marked form of its token
-- (`-<token>` once it gave the job up) or '' does not pass for the holder (lifecycle.ts
-- mayHoldLease is the memory store's twin). One pattern, as held_token: the ack asks it once a job.
local function live_token(run)
  return string.match(run, LIVE_TOKEN)
end

-- The answer to a call whose token is not the job's: lease lost while the job exists, and while
-- a job cancelled as it ran is remembered in `revoked` (its holder is told lease lost, not "no
-- such job", which a re-sent ack also hears).
local function lost_or_missing(id)
  if redis.call('HEXISTS', K_JOBS, id) == 1 then return CODE.lease_lost end
  local kept_until = redis.call('ZSCORE', K_REVOKED, id)
  if kept_until and tonumber(kept_until) > now_ms() then return CODE.lease_lost end
  return CODE.not_found
end

-- The "is this a re-send?" prelude of every call made with a lease token: 'held' when `token`
-- holds the job's lease, 'resent' when the run state carries `resent_mark .. token` (this call
-- ran before and its reply was lost), else the code to answer (lease_lost or not_found).
-- `resent_mark` is nil for calls that leave no mark (extend, update).
local function lease_status(id, run, token, resent_mark)
  if not run then return lost_or_missing(id) end
  if live_token(run) == token then return 'held' end
  -- A live token is never marked or empty, so neither is one whose mark a re-send finds.
  if resent_mark and held_token(run) == resent_mark .. token then return 'resent' end
  return lost_or_missing(id)
end

-- The items of an `id, token` batch.
local function lease_items()
  local ids, tokens = {}, {}
  for i = 1, each_count() do
    ids[i], tokens[i] = each_arg(i, 'id'), each_arg(i, 'token')
  end
  return ids, tokens
end

-- Into active: { deadline, id, ... } pairs, each job handed out with a fresh lease; `groups`
-- (aligned with the jobs) are their groups, whose running counts take a slot each.
local function enter_active(pairs_, groups)
  if #pairs_ == 0 then return end
  call_chunked('ZADD', K_ACTIVE, pairs_)
  local L = nil
  for i = 1, #groups do
    local g = groups[i]
    if g ~= UNGROUPED then
      L = L or GL()
      local s = L.group_state(g)
      s.r = s.r + 1
      L.touch_group(g)
    end
  end
  if L then L.save_groups() end
end

-- Out of active: every way a lease ends goes through here, whatever happens to the job next.
-- Each job gives its group's slot back; a group that gets room for the due jobs it has waiting
-- joins the rotation, and sleeping workers are told (so are they when the queue's concurrency
-- limit was reached): a held-back job starts within milliseconds of its slot freeing.
local function leave_active(ids)
  if #ids == 0 then return end
  local f = flow()
  local wake = false
  if f.limit then wake = redis.call('ZCARD', K_ACTIVE) >= f.limit end
  call_chunked('ZREM', K_ACTIVE, ids)
  -- No job of a group running (LIVE): no slot to give back.
  if f.grouped and LIVE.turns(f) then
    -- Kept for finish's count of the jobs of a group that end (groups_of).
    local groups = groups_of(ids, true)
    local L = GL()
    L.load_groups(groups)
    local freed, order = {}, {}
    for i = 1, #groups do
      local g = groups[i]
      if g ~= UNGROUPED then
        if not freed[g] then
          freed[g] = 0
          order[#order + 1] = g
        end
        freed[g] = freed[g] + 1
      end
    end
    local joining, states = {}, L.GROUPS
    for i = 1, #order do
      local g = order[i]
      local s = states[g]
      local had_room = L.group_room(s) > 0
      s.r = math.max(0, s.r - freed[g])
      L.touch_group(g)
      if s.w > 0 and not had_room and L.group_room(s) > 0 then joining[#joining + 1] = g end
    end
    L.save_groups()
    L.lanes_add(joining, false)
    if #joining > 0 then wake = true end
  end
  if wake then wake_now() end
end

-- New deadlines for leases still held ({ deadline, id, ... }). XX: a lease recovered meanwhile
-- (gone from active) is not put back.
local function renew_active(pairs_)
  for i = 1, #pairs_, CHUNK do
    redis.call('ZADD', K_ACTIVE, 'XX', unpack(pairs_, i, math.min(i + CHUNK - 1, #pairs_)))
  end
end

-- Ends a running job's lease from outside (cancel running, fail now): the job leaves active with
-- its group's slot, and the holder hears at once on the wake channel (wire.ts REVOKED_MESSAGE)
-- to abort its handler. `why` is cancelled, failed or dead. A cancelled job is about to be
-- deleted: it is remembered in `revoked` so its holder's later calls answer lease lost; a failed
-- one keeps its run state, which the caller marks MARK.revoked .. token to the same end.
-- Returns the token it ended.
local function revoke(id, run, why, now)
  local token = held_token(run)
  local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, id)) or now
  leave_active({ id })
  if why == 'cancelled' then
    redis.call('ZREMRANGEBYSCORE', K_REVOKED, '-inf', now)
    redis.call('ZADD', K_REVOKED, math.max(deadline, now) + LIMIT.revoked_keep_ms, id)
  end
  if token ~= '' then redis.call('PUBLISH', WAKE_CHANNEL, 'r:' .. why .. ':' .. token) end
  return token
end

-- The token as the run state keeps it once its holder ended the attempt.
local function given_up(token)
  return MARK.given_up .. token
end

-- Every end of a job goes through here, whatever ended it (lifecycle.ts FINISHES):
--   FINISH.completed: acked (its lease ended in leave_active): counted in meta `completed`, then
--     kept by the retention rule, with `kept` = { runs = { id, run state, ... }, results = { id,
--     result JSON, ... } } to write, or deleted (`kept` nil; `now` is then not read).
--   FINISH.dead: into the dead set at `now`; its run state, which holds the reason, is the
--     caller's to write. Its debounce burst ends.
--   FINISH.cancelled: cancelled or drained before it ran: deleted, and its debounce burst ends.
-- Jobs someone waits for (watch.lua, Queue.waitFor) hear of their end on the wake channel
-- (wire.ts FINISHED_MESSAGE): a completed job with its result (`told`, aligned with `ids`), a
-- dead one with its reason (its run state's last error), a cancelled one with `told` (the reason
-- given, or ''). One EXISTS per call when no one waits.
-- Events stay with the callers (each says why in its own fields). The next rule that must hear
-- of every end (flows: a parent told that its child finished) is written here, once.
local function tell_waiters(outcome, ids, told)
  if redis.call('EXISTS', K_WAITERS) == 0 then return end
  for i, id in ipairs(ids) do
    if redis.call('ZSCORE', K_WAITERS, id) then
      local payload = told and told[i] or ''
      if outcome == FINISH.dead then
        local r = parse_run(redis.call('HGET', K_RUNS, id))
        payload = r and r.e or ''
      end
      redis.call('PUBLISH', WAKE_CHANNEL, 'f:' .. outcome .. ':' .. #id .. ':' .. id .. payload)
      redis.call('ZREM', K_WAITERS, id)
    end
  end
end

-- The queue's history (wire.ts HISTORY_SUFFIX, HISTORY_MINUTE): adds this call's counts to its
-- minute's field, one HGET and one HSET a call whatever its jobs. A field that holds another
-- minute (a day older: the field is the minute's number modulo history_minutes) starts afresh,
-- and so does one that does not read (stored data is never trusted), so the hash keeps at most
-- a day of minutes and a bad field costs nothing but its own counts.
local function note_history(now, completed, failed, dead, late_n, late_sum, late_max)
  local minute = math.floor(now / 60000)
  -- As text once: the HGET and the HSET name it (a number would be written with %.17g twice).
  local field = text(minute % LIMIT.history_minutes)
  local minute_s = int(minute)
  local m, c, f, d, n, s, x = string.match(redis.call('HGET', K_HISTORY, field) or '', '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
  if m ~= minute_s or #c > 15 or #f > 15 or #d > 15 or #n > 15 or #s > 15 or #x > 15 then c, f, d, n, s, x = '0', '0', '0', '0', '0', '0' end
  -- A count this call leaves as it was keeps its text: a claim adds no completions, an ack no
  -- lateness (each number made into text costs ~2.6k instructions).
  if completed ~= 0 then c = text(c + completed) end
  if failed ~= 0 then f = text(f + failed) end
  if dead ~= 0 then d = text(d + dead) end
  if late_n ~= 0 then n = text(n + late_n) end
  if late_sum ~= 0 then s = text(s + late_sum) end
  if late_max > tonumber(x) then x = text(late_max) end
  -- With HT_FIELD (hset_pairs): up to 512 minutes of a day would be a listpack, read field by
  -- field by this HGET and HSET on every claim and ack.
  redis.call('HSET', K_HISTORY, field, minute_s .. ':' .. c .. ':' .. f .. ':' .. d .. ':' .. n .. ':' .. s .. ':' .. x, HT_FIELD, HT_VALUE)
end

-- The writes of a job's end (finish, below), by outcome.
local function finish_writes(outcome, ids, now, kept)
  if outcome == FINISH.completed then
    -- A running total, so monitors can show throughput without the event stream.
    redis.call('HINCRBY', K_META, 'completed', text(#ids))
    note_history(now or now_ms(), #ids, 0, 0, 0, 0, 0)
    if not kept then return forget(ids, true) end
    local finished = {}
    for _, id in ipairs(ids) do
      finished[#finished + 1] = now
      finished[#finished + 1] = id
    end
    call_chunked('ZADD', K_COMPLETED, finished)
    hset_pairs(K_RUNS, kept.runs)
    hset_pairs(K_RESULTS, kept.results)
    trim_completed(now, #ids)
  elseif outcome == FINISH.dead then
    note_history(now or now_ms(), 0, 0, #ids, 0, 0, 0)
    end_bursts(ids)
    local adds = {}
    for _, id in ipairs(ids) do
      adds[#adds + 1] = now
      adds[#adds + 1] = id
    end
    call_chunked('ZADD', K_DEAD, adds)
    trim_dead(now, #ids)
  elseif outcome == FINISH.cancelled then
    forget(ids)
  else
    error('delayq: no such end of a job: ' .. tostring(outcome))
  end
end

local function finish(outcome, ids, now, kept, told)
  if #ids == 0 then return end
  -- Ended jobs with a priority leave the count (their bodies read only while it counts some):
  -- the last one takes the queue's mark off (SCHED.rank). flow() first: its meta read primes it.
  -- Each asked here first: a queue that counts none (most) makes no call for them.
  local f = flow()
  local ranked = SCHED.order().ranked
  if ranked and ranked > 0 then SCHED.rank(-SCHED.ranked_of(ids)) end
  if (f.group_jobs or 0) > 0 or (f.flow_jobs or 0) > 0 then LIVE.ended(ids) end
  tell_waiters(outcome, ids, told)
  -- Held jobs waiting for these are told first (_holds.lua), while the ended jobs' run states
  -- still hold their reasons; what it decides to end next ends after this call's own writes.
  local after = nil
  if f.holds and HOLDS.live() then after = HOLDS.settle(outcome, ids, told, now or now_ms()) end
  finish_writes(outcome, ids, now, kept)
  if after then
    finish(FINISH.dead, after.bury, now or now_ms())
    local orphans = HOLDS.take_orphans(after.orphans)
    local reasons = {}
    for i = 1, #orphans do reasons[i] = 'the job waiting for it was cancelled' end
    finish(FINISH.cancelled, orphans, nil, nil, reasons)
  end
end

-- One entry of the error history, built by hand: integers through %d (cjson would write them
-- with 14 significant digits) and keys always in the documented order.
local function error_entry(attempt, at, text)
  return '{"attempt":' .. int(attempt) .. ',"atMs":' .. int(at) .. ',"error":' .. cjson.encode(text) .. '}'
end

-- The job's error history (K_ERRORS, the last `history` entries) with this failure appended, as
-- JSON, or nil when none is kept. Entries that are not { whole attempt, whole atMs, string error }
-- are dropped, and a value that is not a JSON array is started afresh: a corrupt history must not
-- cost the job its failure being recorded.
local function errors_with(id, history, attempt, at, text)
  if history < 1 then return nil end
  local kept = {}
  local stored = redis.call('HGET', K_ERRORS, id)
  if stored then
    local ok, decoded = pcall(cjson.decode, stored)
    if ok and type(decoded) == 'table' then
      for _, e in ipairs(decoded) do
        -- Numbers must be JSON numbers (as_int alone would take the string "1").
        if type(e) == 'table' and type(e.attempt) == 'number' and type(e.atMs) == 'number' then
          local a, t = as_int(e.attempt), as_int(e.atMs)
          if a and t and type(e.error) == 'string' then kept[#kept + 1] = error_entry(a, t, e.error) end
        end
      end
    end
  end
  kept[#kept + 1] = error_entry(attempt, at, text)
  local first = math.max(1, #kept - history + 1)
  return '[' .. table.concat(kept, ',', first, #kept) .. ']'
end
