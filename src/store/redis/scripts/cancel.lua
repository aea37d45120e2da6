--[[ cancel: removes a scheduled job (due or not). Active and dead jobs are left alone.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the job's key
ARGV: 1 job key prefix, 2 wake channel, 3 id
Returns: { code, state }: code 1 cancelled, 0 not cancelled (state says why), -1 no such job
]]
--@include _helpers.lua

local id, key = ARGV[3], KEYS[6]
local state = job_state(id, key)
if state == nil then
  if redis.call('EXISTS', key) == 1 then
    -- A body in no set is dangling; cancelling it is what the caller wants anyway.
    redis.call('DEL', key)
    return { 1, 'scheduled' }
  end
  return { -1, '' }
end
if state == 'active' or state == 'dead' then return { 0, state } end
unlink_waiting(id, key, state)
redis.call('DEL', key)
emit('cancelled', id)
return { 1, 'scheduled' }
