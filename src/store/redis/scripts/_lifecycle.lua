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

-- The answer to a call whose token is not the job's: lease lost while the job exists.
local function lost_or_missing(id)
  if redis.call('HEXISTS', K_JOBS, id) == 1 then return CODE.lease_lost end
  return CODE.not_found
end

-- The "is this a re-send?" prelude of every call made with a lease token: 'held' when `token`
-- holds the job's lease, 'resent' when the run state carries `resent_mark .. token` (this call
-- ran before and its reply was lost), else the code to answer (lease_lost or not_found).
-- `resent_mark` is nil for calls that leave no mark (extend, update).
local function lease_status(id, run, token, resent_mark)
  if not run then return lost_or_missing(id) end
  local held = held_token(run)
  if held == token then return 'held' end
  if resent_mark and held == resent_mark .. token then return 'resent' end
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
  local any = false
  for _, g in ipairs(groups) do
    if g ~= UNGROUPED then
      local s = GL().group_state(g)
      s.r = s.r + 1
      GL().touch_group(g)
      any = true
    end
  end
  if any then GL().save_groups() end
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
  if f.grouped then
    local groups = groups_of(ids)
    GL().load_groups(groups)
    local freed, order = {}, {}
    for _, g in ipairs(groups) do
      if g ~= UNGROUPED then
        if not freed[g] then
          freed[g] = 0
          order[#order + 1] = g
        end
        freed[g] = freed[g] + 1
      end
    end
    local joining = {}
    for _, g in ipairs(order) do
      local s = GL().GROUPS[g]
      local had_room = GL().group_room(s) > 0
      s.r = math.max(0, s.r - freed[g])
      GL().touch_group(g)
      if s.w > 0 and not had_room and GL().group_room(s) > 0 then joining[#joining + 1] = g end
    end
    GL().save_groups()
    GL().lanes_add(joining, false)
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
-- Events stay with the callers (each says why in its own fields). The next rule that must hear
-- of every end (flows: a parent told that its child finished) is written here, once.
local function finish(outcome, ids, now, kept)
  if #ids == 0 then return end
  if outcome == FINISH.completed then
    -- A running total, so monitors can show throughput without the event stream.
    redis.call('HINCRBY', K_META, 'completed', #ids)
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
