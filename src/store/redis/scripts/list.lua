--[[ list: one page of the jobs in a state, in that state's order, from a cursor.
KEYS: base
ARGV: base, state, phase, score, member, limit
Returns: { now ms, total, next phase or empty, next score, next member, then per job: JOB_ROW }
States and their order: 'scheduled' (not yet due, by due time), 'ready' (due and waiting: the
ready set in hand-out order, then the due members of the scheduled set by due time, which a
claim merges by priority), 'active' (by lease deadline), 'dead' (by time of death), 'completed'
(kept ones, by finish time). The cursor is the (score, member) of the last job of the previous
page and `phase` the set it is in ('' to start): the page starts at the first member after it
in the set's order, whether or not that job is still there, so paging neither repeats nor skips
a job that stays put. Bounded: O(log n) to find the start (a binary search among members of
equal score), then `limit` members; no call walks a whole set. An empty next phase: no more.
]]
--@include _helpers.lua

local state, phase, c_score, c_member = arg('state'), arg('phase'), arg('score'), arg('member')
local limit = arg_int('limit')
if limit < 1 or limit > 1000 then error('delayq: list limit must be 1..1000') end
local now = now_ms()

-- Byte order, as ZSETs order members of equal score (Lua's < uses the locale's collation).
local function lex_le(a, b)
  if a == b then return true end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The rank of the first member after (score, member).
local function rank_after(zset, score, member)
  local lo = redis.call('ZCOUNT', zset, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', zset, '-inf', score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', zset, mid, mid)[1]
    if lex_le(m, member) then lo = mid + 1 else hi = mid end
  end
  return lo
end

local SETS = { scheduled = K_SCHEDULED, ready = K_READY, active = K_ACTIVE, dead = K_DEAD, completed = K_COMPLETED }
local total
if state == 'scheduled' then
  total = redis.call('ZCOUNT', K_SCHEDULED, '(' .. now, '+inf')
elseif state == 'ready' then
  total = redis.call('ZCARD', K_READY) + redis.call('ZCOUNT', K_SCHEDULED, '-inf', now)
elseif SETS[state] then
  total = redis.call('ZCARD', SETS[state])
else
  error('delayq: list state must be scheduled, ready, active, dead or completed')
end

-- The sets a listing walks, in order: `key`, and `max` (the last score it takes) when bounded.
local phases
if state == 'ready' then
  phases = { { name = 'ready', key = K_READY }, { name = 'scheduled', key = K_SCHEDULED, max = now } }
else
  phases = { { name = state, key = SETS[state] } }
end

local picked = {} -- { id, member, score, phase }
local next_phase, next_score, next_member = '', '', ''
local started = phase == ''
for _, p in ipairs(phases) do
  if not started and p.name == phase then started = true end
  if started and #picked < limit then
    local from
    if phase == p.name then
      from = rank_after(p.key, c_score, c_member)
    elseif state == 'scheduled' then
      from = redis.call('ZCOUNT', K_SCHEDULED, '-inf', now)
    else
      from = 0
    end
    local want = limit - #picked
    local page = redis.call('ZRANGE', p.key, from, from + want - 1, 'WITHSCORES')
    for i = 1, #page, 2 do
      local score = tonumber(page[i + 1])
      if p.max and score > p.max then break end
      picked[#picked + 1] = { member = page[i], score = page[i + 1], phase = p.name, n = score }
    end
    if #picked >= limit then
      local last = picked[#picked]
      next_phase, next_score, next_member = last.phase, last.score, last.member
    end
    phase = ''
  end
end

local ids = {}
for i, p in ipairs(picked) do
  if p.phase == 'ready' and state == 'ready' then ids[i] = ready_id(p.member) else ids[i] = p.member end
end
local bodies, runs = hmget(K_JOBS, ids), hmget(K_RUNS, ids)
local progress = hmget(K_PROGRESS, ids)
local results = {}
if state == 'completed' then results = hmget(K_RESULTS, ids) end
local out = { now, total, next_phase, next_score, next_member }
for i, p in ipairs(picked) do
  local internal, score, due = p.phase, -1, -1
  if state == 'ready' and p.phase == 'ready' then
    due = tonumber(string.sub(p.member, 1, 16))
  elseif p.phase == 'scheduled' then
    due = p.n
  else
    local r = parse_run(runs[i])
    due = (r and r.t) or -1
    score = p.n
  end
  -- Logs and error history stay out of listings (a page of 1,000 would carry megabytes): get has them.
  job_row(out, ids[i], internal, score, bodies[i], runs[i], due, results[i], progress[i], false, false)
end
return out
