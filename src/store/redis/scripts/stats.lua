--[[ stats: counts by state, by the server's clock.
KEYS: base, workers
ARGV: base, window_ms
Returns: { now_ms, not_promoted, ready, due_in_scheduled, active, dead, earliest_due_ms, due_within_window, paused, stream_length, completed_total, earliest_ready_due_ms, kept_completed, live_workers, earliest_waiting_due_ms, concurrency, rate_max, rate_used, rate_held_until_ms, rate_next_refill_ms, groups_rate_held, groups_read, groups_complete, groups_paused, paused_waiting, groups_at_limit, at_limit_waiting, held }; held counts the jobs held for other jobs (docs/flows.md); paused is 1 or 0; stream_length is -1 when the stream is off; earliest_waiting_due_ms is -1 when no group has jobs in its line; concurrency and rate_max are -1 when the queue has no such limit; rate_used counts the tokens of the queue's limiter still in their window, rate_held_until_ms is when a RateLimitSignal's hold ends and rate_next_refill_ms when the oldest token comes back (-1: none); groups_rate_held counts the groups waiting for their rate limiter; the group figures are summed over the first groups_read group states (groups_complete 1 when that is all of them)
The ready set is ordered by priority, then due time: its first member is the oldest of the
highest priority only, and a starved low-priority job waits further down. So the earliest due
time is the least of each priority's first member, one step per priority present (at most
READY_LEVELS_MAX of them, the highest first: more distinct priorities than that waiting at once
is far past any real use, and the bound keeps this read O(levels log n)). Jobs of groups waiting
in their lines count as ready, and their earliest due time is read from K_WAITING_DUE (see
_groups.lua): its first entry is a lower bound of the due times of every line; while that entry's
line has nothing as early (jobs were taken), the entry is raised to its line's true earliest due
time (or dropped, the line being empty) and the next first entry looked at, until the first entry
is exact. Each raise is kept, so the work is paid once per line served, not per read; a read makes
at most REPAIRS_MAX of them and then answers the lower bound (an age that may be a little high for a
read or two after a burst, never 0 while jobs wait). A due job held by a paused queue stays in the
scheduled set, held by a paused or full group in its line: either way its due time counts here.
Why jobs are held: the group figures sum at most GROUPS_READ_MAX group states (one HSCAN walk),
so a read stays bounded with a million groups; groups_complete says whether that was all of them.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _rate.lua

local now = now_ms()
local head = head_score(K_SCHEDULED) or -1
local READY_LEVELS_MAX = 256
local first_ready_due = -1
local level = redis.call('ZRANGE', K_READY, 0, 0, 'WITHSCORES')
for _ = 1, READY_LEVELS_MAX do
  if not level[1] then break end
  local due = tonumber(string.sub(level[1], 1, 16))
  if first_ready_due < 0 or due < first_ready_due then first_ready_due = due end
  level = redis.call('ZRANGE', K_READY, '(' .. level[2], '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
end

-- The earliest due time of the groups' lines (see the header), -1 when none has jobs.
local REPAIRS_MAX = 64
local first_waiting_due = -1
local function line_earliest(g)
  local best = nil
  local from = '[' .. g .. '\0'
  for _ = 1, READY_LEVELS_MAX do
    local m = redis.call('ZRANGEBYLEX', K_WAITING, from, '(' .. g .. '\1', 'LIMIT', 0, 1)[1]
    if not m then break end
    local _, due = GL().waiting_parts(m)
    if due and (best == nil or due < best) then best = due end
    -- The next priority: past every member with this one's 7-digit key (':' follows '9').
    from = '[' .. string.sub(m, 1, #g + 8) .. ':'
  end
  return best
end
-- Why due jobs wait: the groups paused or at their limit, over at most GROUPS_READ_MAX states.
-- Measured on 100,000 groups: about 3 us a state read (and 1 us a line checked for an index
-- entry), so a read stays near a millisecond of Redis time.
local GROUPS_READ_MAX = 200
local g_read, g_paused, g_paused_waiting, g_full, g_full_waiting = 0, 0, 0, 0, 0
local g_complete = 1
local seeds = 0
if flow().grouped then
  local cursor = '0'
  repeat
    local step = redis.call('HSCAN', K_GROUPS, cursor, 'COUNT', GROUPS_READ_MAX)
    cursor = step[1]
    local lined = {}
    for i = 1, #step[2], 2 do
      -- HT_FIELD keeps the hash a hashtable (hset_pairs): no group.
      if step[2][i] ~= HT_FIELD then
        local s = GL().parse_group(step[2][i + 1])
        g_read = g_read + 1
        if s.w > 0 then lined[#lined + 1] = step[2][i] end
        if s.p then
          -- A paused group holds something only with jobs in its line (a sharded queue keeps a
          -- group's pause on shards where it has none: counted once, where its jobs are).
          if s.w > 0 then g_paused = g_paused + 1 end
          g_paused_waiting = g_paused_waiting + s.w
        elseif s.w > 0 and GL().group_room(s) <= 0 then
          g_full = g_full + 1
          g_full_waiting = g_full_waiting + s.w
        end
      end
    end
    -- A group with jobs in its line and no entry in K_WAITING_DUE (its jobs went in before this
    -- index existed) gets one, at most REPAIRS_MAX a read.
    if #lined > 0 and seeds < REPAIRS_MAX then
      local scores = redis.call('ZMSCORE', K_WAITING_DUE, unpack(lined))
      for i, g in ipairs(lined) do
        if not scores[i] and seeds < REPAIRS_MAX then
          local exact = line_earliest(g)
          if exact then redis.call('ZADD', K_WAITING_DUE, exact, g) end
          seeds = seeds + 1
        end
      end
    end
  until cursor == '0' or g_read >= GROUPS_READ_MAX
  if cursor ~= '0' then g_complete = 0 end
end

if flow().grouped then
  for repairs = 0, REPAIRS_MAX do
    local head = redis.call('ZRANGE', K_WAITING_DUE, 0, 0, 'WITHSCORES')
    if not head[1] then break end
    local low = tonumber(head[2])
    first_waiting_due = low
    if repairs == REPAIRS_MAX then break end
    local exact = line_earliest(head[1])
    if exact == nil then
      redis.call('ZREM', K_WAITING_DUE, head[1])
      first_waiting_due = -1
    elseif exact > low then
      redis.call('ZADD', K_WAITING_DUE, 'XX', exact, head[1])
    else
      first_waiting_due = exact
      break
    end
  end
end

-- The queue's own rate limiter now (as groups.lua reads it).
local rate_used, rate_held, rate_refill = 0, false, nil
if flow().rated then rate_used, rate_held, rate_refill = RL().peek(UNGROUPED, now) end

local meta = redis.call('HMGET', K_META, 'paused', 'events', 'completed')
return reply({
  now_ms = now,
  not_promoted = redis.call('ZCARD', K_SCHEDULED),
  ready = redis.call('ZCARD', K_READY) + redis.call('ZCARD', K_WAITING),
  due_in_scheduled = redis.call('ZCOUNT', K_SCHEDULED, '-inf', now),
  active = redis.call('ZCARD', K_ACTIVE),
  dead = redis.call('ZCARD', K_DEAD),
  earliest_due_ms = head,
  due_within_window = redis.call('ZCOUNT', K_SCHEDULED, '-inf', now + arg_int('window_ms')),
  paused = meta[1] == '1' and 1 or 0,
  stream_length = meta[2] and redis.call('XLEN', K_EVENTS) or -1,
  completed_total = as_int(meta[3]) or 0,
  earliest_ready_due_ms = first_ready_due,
  kept_completed = redis.call('ZCARD', K_COMPLETED),
  live_workers = redis.call('ZCOUNT', K_WORKERS, '(' .. now, '+inf'),
  earliest_waiting_due_ms = first_waiting_due,
  concurrency = flow().limit or -1,
  rate_max = flow().rate and flow().rate.max or -1,
  rate_used = rate_used,
  rate_held_until_ms = rate_held or -1,
  rate_next_refill_ms = rate_refill or -1,
  groups_rate_held = redis.call('ZCARD', K_RATE_WAKE),
  groups_read = g_read,
  groups_complete = g_complete,
  groups_paused = g_paused,
  paused_waiting = g_paused_waiting,
  groups_at_limit = g_full,
  at_limit_waiting = g_full_waiting,
  held = flow().holds and redis.call('ZCARD', hold_key('held')) or 0,
})
