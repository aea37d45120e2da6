--[[ stats: counts by state, by the server's clock.
KEYS: base, workers
ARGV: base, window_ms
Returns: { now ms, scheduled not promoted, ready, due in scheduled, active, dead, earliest due ms or -1, due within window, paused 1/0, stream length or -1, completed total, due ms of the first ready member or -1, kept completed, live workers }
]]
--@include _helpers.lua

local now = now_ms()
local head = head_score(K_SCHEDULED) or -1
local first_ready = redis.call('ZRANGE', K_READY, 0, 0)[1]
local first_ready_due = first_ready and tonumber(string.sub(first_ready, 1, 16)) or -1
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
