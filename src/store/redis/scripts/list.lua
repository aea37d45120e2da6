--[[ list: one page of the jobs in a state, in that state's order or its reverse, from a cursor.
KEYS: base
ARGV: base, state, phase, score, member, limit, order
Returns: { now_ms, total, next_phase, next_score, next_member, then per item: id, state, score, body, run, due_ms, result, progress, logs, errors, group }; next_phase is empty on the last page; per job wire.ts JOB_ROW
States and their order: 'scheduled' (not yet due, by due time), 'ready' (due and waiting: the
ready set in hand-out order, then the groups' lines (K_WAITING: by group, then each line in
hand-out order), then the due members of the scheduled set by due time, which a claim merges by
priority), 'active' (by lease deadline), 'dead' (by time of death), 'completed'
(kept ones, by finish time). `order` 'desc' walks it backwards (newest first: the sets in
reverse, each from its end). The cursor is the (score, member) of the last job of the previous
page and `phase` the set it is in ('' to start): the page starts at the first member after it
in the walk's direction, whether or not that job is still there, so paging neither repeats nor
skips a job that stays put. Bounded: O(log n) to find the start (a binary search among members
of equal score), then `limit` members; no call walks a whole set. An empty next phase: no more.
]]
--@include _helpers.lua
--@include _groups.lua

local state, phase, c_score, c_member = arg('state'), arg('phase'), arg('score'), arg('member')
local limit = arg_int('limit')
if limit < 1 or limit > 1000 then error('delayq: list limit must be 1..1000') end
local order = arg('order')
if order ~= 'asc' and order ~= 'desc' then error('delayq: list order must be asc or desc') end
local desc = order == 'desc'
local now = now_ms()
-- A cursor in the scheduled set that names a job by its id (one made before members kept add
-- order, or by a sharded listing, which knows its jobs by id): the member that job's body makes
-- (SCHEDULED_MEMBER), so the page goes on after it, not after every member of its due time.
if phase == PLACE.scheduled and c_member ~= '' and string.byte(c_member, 1) ~= 1 then
  c_member = SCHED.member_of(c_member, redis.call('HGET', K_JOBS, c_member)) or c_member
end

-- The rank of the first member after (score, member), or (at_or_after) the first not before it.
local function rank_of(zset, score, member, at_or_after)
  local lo = redis.call('ZCOUNT', zset, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', zset, '-inf', score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', zset, mid, mid)[1]
    local before
    if at_or_after then before = lex_lt(m, member) else before = not lex_lt(member, m) end
    if before then lo = mid + 1 else hi = mid end
  end
  return lo
end

local SETS = { scheduled = K_SCHEDULED, ready = K_READY, active = K_ACTIVE, dead = K_DEAD, completed = K_COMPLETED }
if not SETS[state] then error('delayq: list state must be scheduled, ready, active, dead or completed') end

-- The sets a listing walks, in its state's order, each with the ranks it takes: [lo, hi).
local phases
local due = redis.call('ZCOUNT', K_SCHEDULED, '-inf', now)
if state == PLACE.ready then
  phases = {
    { name = PLACE.ready, key = K_READY, lo = 0, hi = redis.call('ZCARD', K_READY) },
    { name = PLACE.waiting, key = K_WAITING, lo = 0, hi = redis.call('ZCARD', K_WAITING) },
    { name = PLACE.scheduled, key = K_SCHEDULED, lo = 0, hi = due },
  }
elseif state == PLACE.scheduled then
  phases = { { name = PLACE.scheduled, key = K_SCHEDULED, lo = due, hi = redis.call('ZCARD', K_SCHEDULED) } }
else
  phases = { { name = state, key = SETS[state], lo = 0, hi = redis.call('ZCARD', SETS[state]) } }
end
local total = 0
for _, p in ipairs(phases) do total = total + p.hi - p.lo end
if desc and #phases == 3 then phases = { phases[3], phases[2], phases[1] } end

local picked = {} -- { member, score, phase, n }
local next_phase, next_score, next_member = '', '', ''
local started = phase == ''
for _, p in ipairs(phases) do
  if not started and p.name == phase then started = true end
  if started and #picked < limit then
    local want = limit - #picked
    local from, to
    if not desc then
      from = p.lo
      if phase == p.name then from = math.max(p.lo, rank_of(p.key, c_score, c_member, false)) end
      to = math.min(p.hi, from + want)
    else
      to = p.hi
      if phase == p.name then to = math.min(p.hi, rank_of(p.key, c_score, c_member, true)) end
      from = math.max(p.lo, to - want)
    end
    if to > from then
      local page = redis.call('ZRANGE', p.key, from, to - 1, 'WITHSCORES')
      local first, last, step = 1, #page - 1, 2
      if desc then first, last, step = #page - 1, 1, -2 end
      for i = first, last, step do
        picked[#picked + 1] = { member = page[i], score = page[i + 1], phase = p.name, n = tonumber(page[i + 1]) }
      end
    end
    if #picked >= limit then
      local lastp = picked[#picked]
      next_phase, next_score, next_member = lastp.phase, lastp.score, lastp.member
    end
    phase = ''
  end
end

local ids = {}
for i, p in ipairs(picked) do
  if p.phase == PLACE.ready and state == PLACE.ready then
    ids[i] = ready_id(p.member)
  elseif p.phase == PLACE.waiting then
    local _, due_ms, _, id = GL().waiting_parts(p.member)
    ids[i], p.due = id, due_ms
  elseif p.phase == PLACE.scheduled then
    ids[i] = SCHED.id(p.member)
  else
    ids[i] = p.member
  end
end
local bodies, runs = hmget(K_JOBS, ids), hmget(K_RUNS, ids)
local progress = hmget(K_PROGRESS, ids)
local groups = groups_of(ids)
local results = {}
if state == PLACE.completed then results = hmget(K_RESULTS, ids) end
local out = reply({ now_ms = now, total = total, next_phase = next_phase, next_score = next_score, next_member = next_member })
for i, p in ipairs(picked) do
  local internal, score, due = p.phase, -1, -1
  if state == PLACE.ready and p.phase == PLACE.ready then
    due = tonumber(string.sub(p.member, 1, 16))
  elseif p.phase == PLACE.waiting then
    due = p.due
  elseif p.phase == PLACE.scheduled then
    due = p.n
  else
    local r = parse_run(runs[i])
    due = (r and r.t) or -1
    score = p.n
  end
  -- Logs and error history stay out of listings (a page of 1,000 would carry megabytes): get has them.
  job_row(out, ids[i], internal, score, bodies[i], runs[i], due, results[i], progress[i], false, false, groups[i])
end
return out
