--[[ stats: counts by state, by the server's clock.
KEYS: base, workers
ARGV: base, window_ms
Returns: { now ms, scheduled not promoted, ready, due in scheduled, active, dead, earliest due ms or -1, due within window, paused 1/0, stream length or -1, completed total, earliest due ms in the ready set or -1, kept completed, live workers }
The ready set is ordered by priority, then due time: its first member is the oldest of the
highest priority only, and a starved low-priority job waits further down. So the earliest due
time is the least of each priority's first member, one step per priority present (at most
READY_LEVELS_MAX of them, the highest first: more distinct priorities than that waiting at once
is far past any real use, and the bound keeps this read O(levels log n)).
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
return {
  now,
  redis.call('ZCARD', K_SCHEDULED),
  redis.call('ZCARD', K_READY),
  redis.call('ZCOUNT', K_SCHEDULED, '-inf', now),
  redis.call('ZCARD', K_ACTIVE),
  redis.call('ZCARD', K_DEAD),
  head,
  redis.call('ZCOUNT', K_SCHEDULED, '-inf', now + arg_int('window_ms')),
  meta[1] == '1' and 1 or 0,
  meta[2] and redis.call('XLEN', K_EVENTS) or -1,
  as_int(meta[3]) or 0,
  first_ready_due,
  redis.call('ZCARD', K_COMPLETED),
  redis.call('ZCOUNT', K_WORKERS, '(' .. now, '+inf'),
}
