--[[ _holds: jobs held for other jobs (docs/flows.md): a job added with dependencies waits in
`held` until each has ended, then is scheduled — or its deadline passes first, or a dependency
fails under onChildFailure 'fail' and it is buried. Pulled in after _rate.lua and before
_lifecycle.lua, whose `finish` calls HOLDS.settle for every end of a job (the one seam, so a hold
settles in the script that ended its last dependency, exactly once). The memory store's twin is
memory/holds.ts.
Keys (wire.ts HOLD_SUFFIXES, built from ROOT: no script declares them): `held` ZSET (deadline or
+inf -> id), `holds` HASH (id -> HOLD_STATE), `hold-deps` HASH (id -> dependency ids, tab-
separated), `dependents` HASH (id -> ids of the held jobs waiting for it), `child-results` HASH
('<held id>\t<dependency id>' -> CHILD_OUTCOME). Only a queue whose meta says `holds` = '1' (set by
the first add with dependencies) reads any of them: a queue without holds pays nothing. The mark
stays (reads answer holds by it); claims and ends look only while a hold exists (HOLDS.live), so
a queue whose flows all ended pays one EXISTS a call, not the hold path.
In the library these functions are made once, at load (the fields of HOLDS: one top-level name).
]]

local HOLDS = {}

-- Whether a job is held or waits for a signal (`held`, `holds`), or a held job waits for one
-- (`dependents`): every hold path (release, claim lines, settling an end, the next deadline)
-- reads only these keys, each written by the add or wait that made the hold and deleted once
-- its last entry goes. One EXISTS, on a queue marked `holds` only.
function HOLDS.live()
  return redis.call('EXISTS', hold_key('held'), hold_key('holds'), hold_key('dependents')) > 0
end

-- Ids separated by tabs (ids never hold a control character).
function HOLDS.split(s)
  local out = {}
  for id in string.gmatch(s or '', '[^\t]+') do out[#out + 1] = id end
  return out
end

-- HOLD_STATE as { pending, failed, policy, due, phase, signal }, or nil when it does not read.
-- `signal` is the name of the signal a job waits for (job.waitForSignal), else false: a hold for
-- dependencies.
function HOLDS.parse(v)
  if not v then return nil end
  local p, f, policy, due, phase, rest = string.match(v, '^(%d+):(%d+):([fi]):(%d+):([hrtd])(.*)$')
  if not p or #p > 15 or #f > 15 or #due > 16 then return nil end
  local signal = false
  if rest ~= '' then
    signal = string.match(rest, '^:(.+)$')
    if not signal then return nil end
  end
  return { pending = tonumber(p), failed = tonumber(f), policy = policy, due = tonumber(due), phase = phase, signal = signal }
end

function HOLDS.encode(h)
  return int(h.pending) .. ':' .. int(h.failed) .. ':' .. h.policy .. ':' .. int(h.due) .. ':' .. h.phase .. (h.signal and (':' .. h.signal) or '')
end

-- An add's item with dependencies, checked before anything is written: `deps_s` its ids
-- (tab-separated), `first_at` the position of each id's first item in the call. Each must be an
-- id, not the job's own, named once, and either an earlier item of this call or a job that
-- exists and is not dead. Returns the ids in order.
function HOLDS.check(i, id, deps_s, first_at)
  local deps, seen = {}, {}
  for dep in string.gmatch(deps_s, '[^\t]+') do
    local ok, err = pcall(check, 'id', dep, i)
    if not ok then error((string.gsub(tostring(err), '^.-delayq: argument id', 'delayq: argument depends_on', 1)), 0) end
    if dep == id then refuse('depends_on', i, 'must not name the job itself', dep) end
    if seen[dep] then refuse('depends_on', i, 'names a job twice', dep) end
    seen[dep] = true
    deps[#deps + 1] = dep
  end
  if #deps == 0 then refuse('depends_on', i, "must name at least one job (or be '')", deps_s) end
  if #deps > LIMIT.ids_per_run then refuse('depends_on', i, 'must name at most ' .. LIMIT.ids_per_run .. ' jobs', #deps) end
  for _, dep in ipairs(deps) do
    local at = first_at[dep]
    if not (at and at < i) then
      local state = job_state(dep)
      if state == PLACE.dead then refuse('depends_on', i, 'names a dead job', dep) end
      if state == nil then
        if at then refuse('depends_on', i, 'names a job that comes later in the call (list dependencies first)', dep) end
        refuse('depends_on', i, 'names no job (not added, or ended and not kept)', dep)
      end
    end
  end
  return deps
end

-- Which of an added job's dependencies have not ended: `written` are the jobs this call writes
-- (by id). A completed one counts as done, with its result. Returns the pending ids and the
-- done ones' outcomes as CHILD_OUTCOME pairs for `child-results`.
function HOLDS.plan(id, deps, written)
  local pending, done = {}, {}
  for _, dep in ipairs(deps) do
    local state = nil
    if not written[dep] then state = job_state(dep) end
    if state == nil and not written[dep] then
      -- An earlier item of this call that was not written (deduplicated): nothing to wait for.
      refuse('depends_on', nil, 'of job ' .. id .. ' names a job this call did not add (deduplicated)', dep)
    elseif state == PLACE.completed then
      done[#done + 1] = id .. '\t' .. dep
      done[#done + 1] = 'c' .. (redis.call('HGET', K_RESULTS, dep) or '')
    elseif state == PLACE.dead then
      -- Died since the check (an item of this call could not do that): counted as a failure below.
      done[#done + 1] = id .. '\t' .. dep
      done[#done + 1] = 'd' .. ((parse_run(redis.call('HGET', K_RUNS, dep)) or {}).e or '')
    else
      pending[#pending + 1] = dep
    end
  end
  return pending, done
end

-- Writes a new job's hold: `pending` from HOLDS.plan (none: it is scheduled as usual, its hold
-- 'r' so its runs read what it waited for), its deadline (nil: none), its policy ('f' or 'i').
-- Returns true when the job is held (the caller then does not schedule it).
function HOLDS.write(id, deps, pending, done, due, deadline, policy)
  local h = { pending = #pending, failed = 0, policy = policy, due = due, phase = 'h' }
  if #pending == 0 then h.phase = 'r' end
  redis.call('HSET', hold_key('holds'), id, HOLDS.encode(h))
  redis.call('HSET', hold_key('deps'), id, table.concat(deps, '\t'))
  if #done > 0 then hset_pairs(hold_key('results'), done) end
  if not flow().holds then redis.call('HSET', K_META, 'holds', '1') end
  if #pending == 0 then return false end
  local key = hold_key('dependents')
  for _, dep in ipairs(pending) do
    local waiting = redis.call('HGET', key, dep)
    redis.call('HSET', key, dep, waiting and (waiting .. '\t' .. id) or id)
  end
  redis.call('ZADD', hold_key('held'), deadline and int(deadline) or '+inf', id)
  if deadline then wake_if_earlier(head_score(K_SCHEDULED), deadline) end
  return true
end

-- Every end of a job, from finish (before it writes the end): the held jobs waiting for those
-- that ended are told, in this script. A completed dependency counts down its dependents' pending
-- count; a dead or cancelled one too under policy 'i' (counted as failed), or buries them under
-- 'f'. A dependent whose count reaches 0 is released: scheduled at the later of now and the time
-- it was added to run at. `told` as finish's (results, or the reasons of a cancel).
-- Returns what finish does after its own writes: the held jobs to bury (their run states written
-- here, with the reason) and the dependencies of cancelled held jobs that are now nobody's.
function HOLDS.settle(outcome, ids, told, now)
  local after = { bury = {}, orphans = {} }
  local K_HOLDS = hold_key('holds')
  if outcome == FINISH.dead then
    -- A held job buried itself (Queue.fail with dead): its hold ends, so no later end of a
    -- dependency releases it; those still record how they ended.
    local recs, states = hmget(K_HOLDS, ids), {}
    for i, id in ipairs(ids) do
      local h = HOLDS.parse(recs[i])
      if h and h.phase == 'h' then
        h.phase = 'd'
        states[#states + 1] = id
        states[#states + 1] = HOLDS.encode(h)
      end
    end
    hset_pairs(K_HOLDS, states)
  elseif outcome == FINISH.cancelled then
    -- A cancelled held job takes with it its waiting dependencies that no one else waits for.
    local recs = hmget(K_HOLDS, ids)
    for i, id in ipairs(ids) do
      local h = HOLDS.parse(recs[i])
      if h and h.phase == 'h' then
        for _, dep in ipairs(HOLDS.split(redis.call('HGET', hold_key('deps'), id))) do after.orphans[#after.orphans + 1] = dep end
      end
    end
  end
  -- Held jobs ending in this same call (a drain, a cancel of several) are not told: they are
  -- deleted too. Jobs buried together (dead: one failure burying a held job and the one waiting
  -- for it) stay in the dead set with their holds, and hear of each other as if buried one by one.
  local ending = {}
  if outcome ~= FINISH.dead then
    for _, id in ipairs(ids) do ending[id] = true end
  end
  local key = hold_key('dependents')
  local lists = hmget(key, ids)
  local ended, results, changed, order, release = {}, {}, {}, {}, {}
  for i, id in ipairs(ids) do
    if lists[i] then
      ended[#ended + 1] = id
      local told_i = told and told[i] or ''
      local text
      if outcome == FINISH.completed then
        text = 'c' .. told_i
      elseif outcome == FINISH.dead then
        told_i = (parse_run(redis.call('HGET', K_RUNS, id)) or {}).e or ''
        text = 'd' .. told_i
      else
        text = 'x' .. told_i
      end
      for _, parent in ipairs(HOLDS.split(lists[i])) do
        local h = changed[parent]
        if not h and not ending[parent] then
          h = HOLDS.parse(redis.call('HGET', K_HOLDS, parent))
          if h then
            changed[parent] = h
            order[#order + 1] = parent
          end
        end
        if h then
          results[#results + 1] = parent .. '\t' .. id
          results[#results + 1] = text
          -- A job waiting for a signal now (it ran after its deadline) is not released by a late dependency.
          if h.phase == 'h' and not h.signal then
            h.pending = math.max(0, h.pending - 1)
            if outcome ~= FINISH.completed then
              if h.policy == 'f' then
                h.phase = 'd'
                local why = 'dependency ' .. id .. (outcome == FINISH.dead and ' died' or ' was cancelled') .. (told_i ~= '' and (': ' .. told_i) or '')
                after.bury[#after.bury + 1] = parent
                redis.call('HSET', K_RUNS, parent, encode_run(0, h.due, '', why, nil, ''))
                emit(EVENT.dead, parent, 'error', why)
              else
                h.failed = h.failed + 1
              end
            end
            if h.phase == 'h' and h.pending == 0 then
              h.phase = 'r'
              release[#release + 1] = parent
            end
          end
        end
      end
    end
  end
  if #ended == 0 then return after end
  call_chunked('HDEL', key, ended)
  hset_pairs(hold_key('results'), results)
  local states = {}
  for _, parent in ipairs(order) do
    states[#states + 1] = parent
    states[#states + 1] = HOLDS.encode(changed[parent])
  end
  hset_pairs(K_HOLDS, states)
  local gone = {}
  for _, p in ipairs(release) do gone[#gone + 1] = p end
  for _, p in ipairs(after.bury) do gone[#gone + 1] = p end
  if #gone > 0 then call_chunked('ZREM', hold_key('held'), gone) end
  local due = {}
  for _, p in ipairs(release) do
    due[#due + 1] = math.max(now, changed[p].due)
    due[#due + 1] = p
  end
  schedule_many(due)
  return after
end

-- Releases held jobs whose deadline has passed (at most `limit`, from the claim): each is
-- scheduled at the later of now and the time it was added to run at, its hold marked 't' (its
-- runs see `timedOut`). Dependencies that end later still record how they ended.
function HOLDS.release_expired(now, limit)
  local key = hold_key('held')
  local expired = redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, limit)
  if #expired == 0 then return end
  call_chunked('ZREM', key, expired)
  local K_HOLDS = hold_key('holds')
  local recs = hmget(K_HOLDS, expired)
  local states, due = {}, {}
  for i, id in ipairs(expired) do
    local h = HOLDS.parse(recs[i])
    if h and h.phase == 'h' then
      h.phase = 't'
      states[#states + 1] = id
      states[#states + 1] = HOLDS.encode(h)
      -- A wait for a signal that timed out: its next run sees { name, timedOut }.
      if h.signal then redis.call('HSET', hold_key('delivered'), id, h.signal .. '\t1\t') end
      due[#due + 1] = math.max(now, h.due)
      due[#due + 1] = id
    elseif not h and redis.call('HEXISTS', K_JOBS, id) == 1 then
      -- A held job whose hold does not read runs rather than waiting forever (verify() reports it).
      due[#due + 1] = now
      due[#due + 1] = id
    end
  end
  hset_pairs(K_HOLDS, states)
  schedule_many(due)
end

-- The earliest deadline of a held job, or nil.
function HOLDS.next_deadline()
  local t = head_score(hold_key('held'))
  if t and t < math.huge then return t end
  return nil
end

-- The claim reply's holds field (wire.ts CLAIM_HOLDS, JSON) for jobs handed out: `ids` and their
-- positions in the reply. Jobs never held have no entry; '' when none was.
function HOLDS.claim_lines(ids, positions)
  if #ids == 0 then return '' end
  local recs = hmget(hold_key('holds'), ids)
  local entries = {}
  local delivered = nil
  for i, id in ipairs(ids) do
    local h = HOLDS.parse(recs[i])
    if h then
      local e = { at = positions[i], timedOut = h.phase == 't' and not h.signal }
      if e.timedOut then
        local deps = HOLDS.split(redis.call('HGET', hold_key('deps'), id))
        local fields = {}
        for k, dep in ipairs(deps) do fields[k] = id .. '\t' .. dep end
        local ended = hmget(hold_key('results'), fields)
        local pending = {}
        for k, dep in ipairs(deps) do
          if not ended[k] then pending[#pending + 1] = dep end
        end
        if #pending > 0 then e.pending = pending end
      end
      if h.signal then
        delivered = delivered or hold_key('delivered')
        local name, timed_out, data = string.match(redis.call('HGET', delivered, id) or '', '^([^\t]*)\t([01])\t(.*)$')
        if name then e.signal = { name, tonumber(timed_out), data } end
      end
      entries[#entries + 1] = e
    end
  end
  if #entries == 0 then return '' end
  return cjson.encode(entries)
end

-- The dependencies of cancelled held jobs (`deps`, after their holds were forgotten) that no
-- held job waits for any more and that have not started: taken out of their sets, for finish to
-- cancel (a running one runs on; an ended one is gone).
function HOLDS.take_orphans(deps)
  local out, seen = {}, {}
  local K_HOLDS = hold_key('holds')
  for _, dep in ipairs(deps) do
    if not seen[dep] then
      seen[dep] = true
      local waiting = HOLDS.split(redis.call('HGET', hold_key('dependents'), dep))
      local needed = false
      for _, h in ipairs(#waiting > 0 and hmget(K_HOLDS, waiting) or {}) do
        local parsed = HOLDS.parse(h)
        if parsed and parsed.phase == 'h' then needed = true end
      end
      if not needed then
        local state, body, run = job_state(dep)
        if state == PLACE.scheduled or state == PLACE.ready or state == PLACE.waiting or state == PLACE.held then
          unlink_waiting(dep, state, body, run)
          emit(EVENT.cancelled, dep, 'reason', 'the job waiting for it was cancelled')
          out[#out + 1] = dep
        end
      end
    end
  end
  return out
end

-- Pending signals kept for a job that was not waiting (`signals`: a JSON object name -> data),
-- as a table; a value that does not read is started afresh.
function HOLDS.kept_signals(id)
  local stored = redis.call('HGET', hold_key('signals'), id)
  if not stored then return {} end
  local ok, kept = pcall(cjson.decode, stored)
  if ok and type(kept) == 'table' then return kept end
  return {}
end

-- Writes a job's kept signals back (none: the field goes).
function HOLDS.keep_signals(id, kept)
  if next(kept) == nil then
    redis.call('HDEL', hold_key('signals'), id)
    return true
  end
  local text = cjson.encode(kept)
  if #text > LIMIT.signals_kept_bytes then return false end
  redis.call('HSET', hold_key('signals'), id, text)
  return true
end
