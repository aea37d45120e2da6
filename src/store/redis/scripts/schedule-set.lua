--[[ schedule-set: stores or removes a recurring schedule's definition, and tells schedulers.
KEYS: base, schedules, schedule_last
ARGV: base, name, definition
Returns: changed; 1 when something changed, else 0
`definition` is the JSON text, or '' to remove (0 then means: no such schedule).
Events: PUBLISH <wake> 's' so running schedulers re-read the definitions at once.
Removing a schedule also forgets its last occurrence, so a schedule made again under the same
name starts afresh. Jobs already enqueued for it are not touched.
]]
--@include _helpers.lua

local defs, last = K_SCHEDULES, K_SCHEDULE_LAST
local name, def = arg('name'), arg('definition')
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
