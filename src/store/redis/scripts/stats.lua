--[[ stats: counts by state, by the server's clock.
KEYS: base, workers
ARGV: base, window_ms
Returns: { now_ms, not_promoted, ready, due_in_scheduled, active, dead, earliest_due_ms, due_within_window, paused, stream_length, completed_total, earliest_ready_due_ms, kept_completed, live_workers }; paused is 1 or 0; stream_length is -1 when the stream is off
The ready set is ordered by priority, then due time: its first member is the oldest of the
highest priority only, and a starved low-priority job waits further down. So the earliest due
time is the least of each priority's first member, one step per priority present (at most
READY_LEVELS_MAX of them, the highest first: more distinct priorities than that waiting at once
is far past any real use, and the bound keeps this read O(levels log n)). Jobs of groups waiting
in their lines count as ready; the earliest due time is that of the ready set (jobs of no group).
]]
--@include _helpers.lua

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
})
