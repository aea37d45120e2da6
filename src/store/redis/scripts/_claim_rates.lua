--[[ _claim_rates: what the rate limits do to a claim's picks (docs/rate-limits.md), pulled in by
claim.lua only (after _claim.lua), on a queue that ever had a rate limit or a hold. The memory
store's twin is memory/rates.ts; the limiters themselves are _rate.lua's.
]]

-- The functions of this seam (made once, at load, in the library: one top-level name).
local RATES = {}

-- Puts candidates a claim took out but does not hand out (their tokens ran short) back where
-- they wait: the ready set, or their group's line (counted as waiting again), with the run
-- state of a promoted job. Returns how many went to the ready set.
function RATES.put_back(cands)
  local ready_adds, members, member_groups, to_ready = {}, {}, {}, 0
  for _, c in ipairs(cands) do
    local b = parse_body(c.body)
    local r = c.r
    CS.run_writes[#CS.run_writes + 1] = c.id
    if c.ran and (r.a > 0 or r.e or r.s or (r.k and r.k ~= '')) then
      CS.run_writes[#CS.run_writes + 1] = encode_run(r.a, c.due, r.k, r.e, r.s, r.w)
    else
      CS.run_writes[#CS.run_writes + 1] = int(c.due)
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

-- In hand-out order, each job takes its cost from the queue's tokens (`q_left`) and its group's.
-- The first that does not fit the queue's stops the hand-out; one that does not fit its group's
-- stops that group's (both keep their order: they wait for their tokens, put back). A job whose
-- cost is above a limit's max can never start: it goes to the dead set. `costs` and
-- `debounce_keys` (by position) are kept in step with the picks kept.
-- Returns the picks kept and what they took: { kept, q_taken, g_taken, g_rate, lane_got,
-- to_ready (put back in the ready set), exhausted (the queue's tokens ran out) }; lane_got: the
-- lanes that kept a job (a lane whose picks were all put back was not served and keeps its place).
function RATES.charge(picked, costs, debounce_keys, f, q_left)
  local now = CS.now
  local q_taken, g_taken, g_rate, lane_got = 0, {}, {}, {}
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
      CLAIM.bury_corrupt(c.id, 'cost ' .. int(cost) .. ' is above the rate limit max ' .. int(too_big), c.r.a, c.due, nil, c.r.s, c.r.w)
    elseif stopped or cost > q_left or (lane ~= UNGROUPED and (CS.rate_blocked[lane] or cost > g_left[lane])) then
      if not stopped and cost > q_left then stopped = true end
      if lane ~= UNGROUPED and not stopped then CS.rate_blocked[lane] = true end
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
  local to_ready = 0
  if #back > 0 then to_ready = RATES.put_back(back) end
  if to_ready > 0 then CS.ready_empty = false end
  return { kept = kept, q_taken = q_taken, g_taken = g_taken, g_rate = g_rate, lane_got = lane_got, to_ready = to_ready, exhausted = q_left <= 0 or stopped }
end

-- The tokens the hand-out took, one log entry per limiter, back one window from now. A group
-- that took tokens is booked in rate-wake for when they come back (NX: an earlier booking
-- stays), so a claim gives them back even once the group has nothing left to run.
function RATES.log(picked, f, charged, token_base)
  local now = CS.now
  if f.rate and charged.q_taken > 0 then RL().take(UNGROUPED, charged.q_taken, now + f.rate.per, token_base, now) end
  local g_taken, g_rate, looks = charged.g_taken, charged.g_rate, {}
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
