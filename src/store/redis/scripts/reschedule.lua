--[[ reschedule: gives a scheduled job a new due time (promote = due now). Active and dead
jobs are left alone.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the job's key
ARGV: 1 job key prefix, 2 wake channel, 3 id, 4 delay ms or '', 5 runAt ms or ''
Returns: { code, state, due ms or -1 }: code 1 rescheduled, 0 not (state says why), -1 no such job
Events: PUBLISH <wake> when the job became the queue's earliest due job.
]]
--@include _helpers.lua

local id, key = ARGV[3], KEYS[6]
local state = job_state(id, key)
if state == nil then return { -1, '', -1 } end
if state == 'active' or state == 'dead' then
  return { 0, state, tonumber(redis.call('HGET', key, 't')) or -1 }
end
local due
if ARGV[4] ~= '' then due = now_ms() + tonumber(ARGV[4]) else due = tonumber(ARGV[5]) end
unlink_waiting(id, key, state)
redis.call('HSET', key, 't', int(due))
schedule(id, due)
emit('rescheduled', id, 'due', int(due))
return { 1, 'scheduled', due }
