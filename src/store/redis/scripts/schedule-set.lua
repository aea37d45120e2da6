--[[ schedule-set: stores or removes a recurring schedule's definition, and tells schedulers.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 name, 4 definition JSON, or '' to remove
Returns: 1 when something changed, 0 when not (same definition, or no such schedule to remove)
Events: PUBLISH <wake> 's' so running schedulers re-read the definitions at once.
Removing a schedule also forgets its last occurrence, so a schedule made again under the same
name starts afresh. Jobs already enqueued for it are not touched.
]]
--@include _helpers.lua

local defs, last = QUEUE_ROOT .. 'schedules', QUEUE_ROOT .. 'schedule-last'
local name, def = ARGV[3], ARGV[4]
local changed = 0
if def == '' then
  changed = redis.call('HDEL', defs, name)
  redis.call('HDEL', last, name)
elseif redis.call('HGET', defs, name) ~= def then
  redis.call('HSET', defs, name, def)
  changed = 1
end
if changed == 1 then redis.call('PUBLISH', WAKE_CHANNEL, 's') end
return changed
