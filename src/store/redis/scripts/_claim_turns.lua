--[[ _claim_turns: turns between groups (docs/groups.md), pulled in by claim.lua only (after
_claim.lua), on a queue that ever had a job of a group. The memory store's twin is
memory/turns.ts.
Lanes (groups, and the jobs of no group) take turns: each lane at the head of the rotation
gives one job per round, up to its room, until the hand-out is full; a lane served goes to the
tail while it has more due and room, and leaves the rotation when it has not. Within a lane,
priority, then due time, then add order. One call per lane served (at most `want` lanes),
whatever the number of groups.
]]

-- The functions of this seam (made once, at load, in the library: one top-level name).
local TURNS = {}

-- Whether candidate x came due before y (due time, then add order): the order lanes join in.
function TURNS.earlier(x, y)
  if x.due ~= y.due then return x.due < y.due end
  return x.seq < y.seq
end

-- Due jobs go to their lanes: those of no group to the ready set, those of a group to its line;
-- lanes that now have due jobs and room (and groups whose tokens came back) join the rotation.
-- Returns the number of jobs in the ready set after.
function TURNS.promote_to_lanes(promote_limit, f)
  local now = CS.now
  local due, due_ids = CLAIM.take_due(promote_limit)
  local good = CLAIM.readable(due, due_ids)
  local good_ids = {}
  for i, c in ipairs(good) do good_ids[i] = c.id end
  local groups = groups_of(good_ids)
  local ready_adds, members, member_groups = {}, {}, {}
  local first = {} -- lane -> its earliest candidate promoted here
  for i, c in ipairs(good) do
    local g = groups[i]
    CLAIM.promoted_run(c)
    if g == UNGROUPED then
      CLAIM.ready_add(ready_adds, c)
    elseif c.due_s then
      members[#members + 1] = GL().waiting_member_text(g, c.priority, c.due_s, c.seq_s, c.id)
      member_groups[#member_groups + 1] = g
    else
      members[#members + 1] = GL().waiting_member(g, c.priority, c.due, c.seq, c.id)
      member_groups[#member_groups + 1] = g
    end
    if not first[g] or TURNS.earlier(c, first[g]) then first[g] = c end
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
  table.sort(rest, function(x, y) return TURNS.earlier(x.c, y.c) end)
  for _, e in ipairs(rest) do joining[#joining + 1] = e.g end
  for _, g in ipairs(visited) do
    if not first[g] and GL().group_eligible(GL().GROUPS[g]) then joining[#joining + 1] = g end
  end
  GL().lanes_add(joining, false)
  return ready_count
end

-- The lanes at the head of the rotation and how many jobs each may give (its due jobs, its room,
-- its tokens); lanes with none leave (`gone`).
function TURNS.lanes_at_head(want, f, ready_count)
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
        local tokens = RL().tokens(lane, GL().group_rate(st), CS.now)
        if tokens < avail then avail = math.max(0, tokens) end
        if avail == 0 then CS.rate_blocked[lane] = true end
      end
    end
    if avail > 0 then lanes[#lanes + 1] = { id = lane, avail = avail, take = 0 } else gone[#gone + 1] = lane end
  end
  return lanes, gone
end

-- The pick of a queue with groups. Returns the candidates in hand-out order, the lanes served,
-- the lanes found empty or full, and the jobs left in the ready set.
function TURNS.pick(want, promote_limit, f)
  local ready_count = TURNS.promote_to_lanes(promote_limit, f)
  local lanes, gone = TURNS.lanes_at_head(want, f, ready_count)
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
      cands, ids = CLAIM.pop_ready(l.take)
      ready_count = ready_count - #ids
    else
      local line = redis.call('ZRANGEBYLEX', K_WAITING, '[' .. l.id .. '\0', '(' .. l.id .. '\1', 'LIMIT', 0, l.take)
      if #line > 0 then call_chunked('ZREM', K_WAITING, line) end
      for n, member in ipairs(line) do
        local _, due_ms, _, id = GL().waiting_parts(member)
        ids[n] = id
        cands[n] = CLAIM.candidate(id, due_ms, false)
      end
      local st = GL().GROUPS[l.id]
      st.w = st.w - #line
      GL().touch_group(l.id)
    end
    for _, c in ipairs(cands) do c.lane = l.id end
    taken[i] = CLAIM.readable(cands, ids, true)
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

-- After the hand-out: the lanes served go to the tail while they have more due and room; those
-- found empty or full leave the rotation (a slot freed or a job come due brings them back); one
-- whose picks were all put back for want of the queue's tokens (not in `lane_got`) keeps its
-- place, first in the next claim. Groups held back by their rate limit are booked in rate-wake.
function TURNS.rotate_lanes(served, gone, ready_left, f, lane_got)
  local tail = {}
  for _, l in ipairs(served) do
    local more
    if l.id == UNGROUPED then
      more = ready_left > 0
    else
      more = not CS.rate_blocked[l.id] and GL().group_eligible(GL().GROUPS[l.id])
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
  -- Looked at again when a token comes back or their hold ends (LT: an earlier booking stays;
  -- that look books the next).
  local looks = {}
  for _, g in ipairs(gone) do
    if CS.rate_blocked[g] then
      looks[#looks + 1] = RL().free_at(g) or (CS.now + 1000)
      looks[#looks + 1] = g
    end
  end
  if #looks > 0 then redis.call('ZADD', K_RATE_WAKE, 'LT', unpack(looks)) end
end
