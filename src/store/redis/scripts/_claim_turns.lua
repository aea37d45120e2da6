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

-- TURNS.earlier of two { g = lane, c = its earliest candidate }.
function TURNS.entry_earlier(x, y)
  return TURNS.earlier(x.c, y.c)
end

-- Due jobs go to their lanes: those of no group to the ready set, those of a group to its line;
-- lanes that now have due jobs and room (and groups whose tokens came back) join the rotation.
-- Returns the number of jobs in the ready set after.
function TURNS.promote_to_lanes(promote_limit, f)
  local now = CS.now
  -- The lane of no group joins by the earlier of its first job waiting from before this claim and
  -- its earliest job promoted here: where a due job waited (the ready set, or the scheduled set,
  -- where a claim of a queue without groups leaves the due jobs it does not take) must not change
  -- its turn. The memory store keeps every due job in its ready heap (test/model/differential.test.ts).
  local ready_head = redis.call('ZRANGE', K_READY, '0', '0')[1]
  local due, due_ids = CLAIM.take_due(promote_limit)
  local good = CLAIM.readable(due, due_ids)
  local good_ids = {}
  for i = 1, #good do good_ids[i] = good[i].id end
  local groups = groups_of(good_ids)
  local ready_adds, members, member_groups, member_dues = {}, {}, {}, {}
  local L = GL()
  local run_writes = CS.run_writes
  -- Each lane's earliest candidate promoted here, and the lanes in the order they first appear.
  local first, first_order = {}, {}
  for i = 1, #good do
    local c, g = good[i], groups[i]
    -- CLAIM.promoted_run, written out (this loop runs for every job of a backlog).
    run_writes[#run_writes + 1] = c.id
    if c.ran then run_writes[#run_writes + 1] = encode_run(c.r.a, c.due, c.r.k, c.r.e, c.r.s, c.r.w) else run_writes[#run_writes + 1] = c.due_s or int(c.due) end
    if g == UNGROUPED then
      CLAIM.ready_add(ready_adds, c)
    else
      local n = #members + 1
      if c.due_s then
        members[n] = L.waiting_member_text(g, c.priority, c.due_s, c.seq_s, c.id)
      else
        members[n] = L.waiting_member(g, c.priority, c.due, c.seq, c.id)
      end
      member_groups[n], member_dues[n] = g, math.max(0, c.due or 0)
    end
    local e = first[g]
    if not e then
      first[g] = c
      first_order[#first_order + 1] = g
    elseif c.due < e.due or (c.due == e.due and c.seq < e.seq) then
      first[g] = c
    end
  end
  if #ready_adds > 0 then call_chunked('ZADD', K_READY, ready_adds) end
  L.wait_in_line(members, member_groups, member_dues)
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
  -- An empty ready set (no head before this claim) holds just what this claim put there.
  local ready_count = 0
  if ready_head or #ready_adds > 0 then ready_count = redis.call('ZCARD', K_READY) end
  -- Lanes that now have due jobs and room join the rotation's tail, in the order of their
  -- earliest job promoted here (the lane of no group: or its first job from before, if earlier).
  local joining = {}
  if ready_head then
    -- A ready member is 16 digits of due time, 16 of seq, then the id (ready_member_text); one
    -- that does not read (stored data is never trusted) puts the lane first.
    local waited = { due = as_int(string.sub(ready_head, 1, 16)), seq = as_int(string.sub(ready_head, 17, 32)) }
    if not (waited.due and waited.seq) then waited = { due = -HUGE, seq = -1 } end
    local e = first[UNGROUPED]
    if not e then
      first[UNGROUPED] = waited
      table.insert(first_order, 1, UNGROUPED)
    elseif TURNS.earlier(waited, e) then
      first[UNGROUPED] = waited
    end
  end
  -- Due jobs come in due order (and add order within a millisecond on a queue whose scheduled set
  -- keeps it), so the lanes usually appear in that order already: one pass checks it, and only a
  -- lane out of order costs a sort.
  local rest, sorted = {}, true
  for _, g in ipairs(first_order) do
    if g == UNGROUPED or L.group_room(L.group_state(g)) > 0 then
      local n = #rest + 1
      rest[n] = g
      if n > 1 and sorted and TURNS.earlier(first[g], first[rest[n - 1]]) then sorted = false end
    end
  end
  if not sorted then
    local entries = {}
    for i, g in ipairs(rest) do entries[i] = { g = g, c = first[g] } end
    table.sort(entries, TURNS.entry_earlier)
    for i, e in ipairs(entries) do rest[i] = e.g end
  end
  for _, g in ipairs(rest) do joining[#joining + 1] = g end
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
  local L = GL()
  L.load_groups(heads)
  if f.rated then RL().load(heads) end
  local lanes, gone, states = {}, {}, L.GROUPS
  for i = 1, #heads do
    local lane = heads[i]
    local avail = 0
    if lane == UNGROUPED then
      avail = ready_count
    else
      local st = states[lane]
      avail = L.group_room(st)
      if avail > st.w then avail = st.w end
      if avail < 0 then avail = 0 end
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
    for i = 1, #lanes do
      local l = lanes[i]
      if total < want and l.avail >= round then
        l.take = l.take + 1
        total = total + 1
        turns[#turns + 1] = i
        any = true
      end
    end
    if not any then break end
  end
  -- Take each lane's jobs from its line, in its order: one range read a lane (a line is a range
  -- of K_WAITING), then one removal and one read of bodies and run states for all the lanes.
  local cands, ids, taken_members = {}, {}, {}
  local L = GL()
  local states = L.GROUPS
  for i = 1, #lanes do
    local l = lanes[i]
    local first = #ids + 1
    if l.id == UNGROUPED then
      local ready_cands, ready_ids = CLAIM.pop_ready(l.take)
      ready_count = ready_count - #ready_ids
      for n, c in ipairs(ready_cands) do
        c.lane = l.id
        cands[#cands + 1] = c
        ids[#ids + 1] = ready_ids[n]
      end
    else
      local line = redis.call('ZRANGEBYLEX', K_WAITING, '[' .. l.id .. '\0', '(' .. l.id .. '\1', 'LIMIT', '0', L.text(l.take))
      -- A member is '<group>\0', 7 digits of priority, 16 of due time, 16 of seq, then the id
      -- (GL().waiting_parts, read here with the group known).
      local at = #l.id + 9
      for n = 1, #line do
        local member = line[n]
        taken_members[#taken_members + 1] = member
        local id = string.sub(member, at + 32)
        local c = CLAIM.candidate(id, tonumber(string.sub(member, at, at + 15)), false)
        c.lane = l.id
        cands[#cands + 1] = c
        ids[#ids + 1] = id
      end
      local st = states[l.id]
      st.w = st.w - #line
      L.touch_group(l.id)
    end
    l.got = #ids - first + 1
  end
  if #taken_members > 0 then call_chunked('ZREM', K_WAITING, taken_members) end
  -- Each lane's readable jobs, in its order (corrupt ones are buried, those whose body is gone dropped).
  local taken, lane_at = {}, {}
  for i = 1, #lanes do
    taken[i] = {}
    lane_at[lanes[i].id] = i
  end
  local readable = CLAIM.readable(cands, ids, true)
  for n = 1, #readable do
    local c = readable[n]
    local t = taken[lane_at[c.lane]]
    t[#t + 1] = c
  end
  -- The hand-out in turn order: a lane's k-th job in its k-th round.
  local picked, next_of = {}, {}
  for n = 1, #turns do
    local i = turns[n]
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
  local L = GL()
  local states, blocked = L.GROUPS, CS.rate_blocked
  for i = 1, #served do
    local l = served[i]
    local more
    if l.id == UNGROUPED then
      more = ready_left > 0
    else
      more = not blocked[l.id] and L.group_eligible(states[l.id])
    end
    if not more then
      gone[#gone + 1] = l.id
    elseif not f.rated or lane_got[l.id] then
      tail[#tail + 1] = l.id
    end
  end
  L.lanes_remove(gone)
  L.lanes_add(tail, true)
  L.save_groups()
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
