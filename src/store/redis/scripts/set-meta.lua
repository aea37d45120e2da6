--[[ set-meta: pauses or resumes a queue, turns its event stream on or off, or sets the dead
set's caps.
KEYS: base
ARGV: base, what, value
Returns: changed; 1 when the setting changed, 0 when it had that value
`what` is 'paused' ('1'/'0'), 'events' (the stream's MAXLEN, or '0' to turn it off),
'dead' or 'done' (the retention of dead or completed jobs) as '<max jobs>:<max age ms>', '0'
for no bound (both '0' for done: completed jobs are not kept; those kept stay until purged),
'moved' (value: the layout epoch; a shard of that epoch retired by a reshard, which add refuses
from then on; a shard of another epoch, or none, is left alone: it refuses adds of this one
anyway), 'shard' (value: the layout epoch; marks a live shard of that epoch, which add then
takes with that epoch; a shard marked for another epoch before, a name used again by a later
life of the queue, starts afresh: its `moved` goes).
Events: on resume, PUBLISH <wake> <earliest due ms> (now when jobs are ready) so sleeping
workers claim at once; emits 'paused' / 'resumed' to the event stream.
Safe to run twice: the second run finds the value set and returns 0 (a retention rule is
applied again).
]]
--@include _helpers.lua

local what, value = arg('what'), arg('value')
if what == 'paused' then
  local was = redis.call('HGET', K_META, 'paused') == '1'
  local want = value == '1'
  if was == want then return 0 end
  if want then
    redis.call('HSET', K_META, 'paused', '1')
    emit(EVENT.paused, '')
  else
    redis.call('HDEL', K_META, 'paused')
    emit(EVENT.resumed, '')
    local now = now_ms()
    local head = head_score(K_SCHEDULED)
    if redis.call('ZCARD', K_READY) > 0 or redis.call('ZCARD', K_LANES) > 0 then head = now end
    if head ~= nil then redis.call('PUBLISH', WAKE_CHANNEL, int(head)) end
  end
  return 1
end
if what == 'events' then
  local current = redis.call('HGET', K_META, 'events') or '0'
  if current == value then return 0 end
  if value == '0' then
    redis.call('HDEL', K_META, 'events')
    redis.call('DEL', K_EVENTS)
  else
    redis.call('HSET', K_META, 'events', value)
  end
  return 1
end
if what == 'dead' or what == 'done' then
  -- Both bounds at once, so no moment applies one new bound with one old one.
  local max, age = string.match(value, '^(%d+):(%d+)$')
  if not max then return redis.error_reply('set-meta: retention must be <max>:<max age ms>') end
  local fields = { what .. 'Max', what .. 'MaxAge' }
  local current = redis.call('HMGET', K_META, fields[1], fields[2])
  local changed = false
  for i, v in ipairs({ max, age }) do
    if (current[i] or '0') ~= v then
      changed = true
      if v == '0' then redis.call('HDEL', K_META, fields[i]) else redis.call('HSET', K_META, fields[i], v) end
    end
  end
  -- Apply the rule now (even unchanged: its age bound has moved on) rather than at the next
  -- death or completion.
  if what == 'dead' then trim_dead(now_ms()) else trim_completed(now_ms()) end
  if changed then return 1 end
  return 0
end
if what == 'moved' or what == 'shard' then
  if not string.find(value, '^[0-9a-f]+$') then return redis.error_reply('set-meta: ' .. what .. ' takes a layout epoch') end
  local held = redis.call('HGET', K_META, 'epoch')
  if what == 'moved' then
    if held ~= value then return 0 end
    return redis.call('HSETNX', K_META, 'moved', '1')
  end
  if held == value then return 0 end
  redis.call('HSET', K_META, 'epoch', value)
  redis.call('HDEL', K_META, 'moved')
  return 1
end
return redis.error_reply('set-meta: unknown setting ' .. tostring(what))
