--[[ stats: counts by state, by the server's clock.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 window ms
Returns: { now ms, not-yet-promoted scheduled, ready, due in scheduled, active, dead,
           earliest due ms or -1, due within the window in scheduled, paused 1/0,
           event stream length or -1 when the stream is off, completed total,
           due time of the first ready member or -1 }
]]
--@include _helpers.lua

local now = now_ms()
local head = head_score(K_SCHEDULED) or -1
local first_ready = redis.call('ZRANGE', K_READY, 0, 0)[1]
local first_ready_due = first_ready and tonumber(string.sub(first_ready, 1, 16)) or -1
return {
  now,
  redis.call('ZCARD', K_SCHEDULED),
  redis.call('ZCARD', K_READY),
  redis.call('ZCOUNT', K_SCHEDULED, '-inf', now),
  redis.call('ZCARD', K_ACTIVE),
  redis.call('ZCARD', K_DEAD),
  head,
  redis.call('ZCOUNT', K_SCHEDULED, '-inf', now + arg_int(3, 'window ms')),
  redis.call('HGET', K_META, 'paused') == '1' and 1 or 0,
  redis.call('HGET', K_META, 'events') and redis.call('XLEN', K_EVENTS) or -1,
  as_int(redis.call('HGET', K_META, 'completed')) or 0,
  first_ready_due,
}
