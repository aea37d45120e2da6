--[[ snooze: ends an attempt without failing it: the job runs again after a delay, and the
attempt is not counted. Past the optional deadline the job goes to the dead set instead.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 id, 4 token, 5 delay ms, 6 deadline ms or ''
Returns: { code, due ms or -1 }: code 1 snoozed, 2 dead (deadline passed), 0 lease lost,
-1 no such job. A re-sent call finds its own given-up mark ('-' .. token) and answers as the
first did; a stale holder (its lease recovered: '~' .. token) gets lease lost and changes nothing.
Events: PUBLISH <wake> when the job became the queue's earliest due job.
]]
--@include _helpers.lua

local id, token = ARGV[3], ARGV[4]
local delay = arg_int(5, 'delay ms')
local deadline = nil
if ARGV[6] ~= '' then deadline = arg_int(6, 'deadline ms') end
local key = JOB_PREFIX .. id
local f = read_job(key, 'k', 'a', 't')
if not f then return { 0, -1 } end
if f[1] == '-' .. token then
  if redis.call('ZSCORE', K_DEAD, id) then return { 2, -1 } end
  return { 1, as_int(f[3]) or -1 }
end
if f[1] ~= token then
  if redis.call('EXISTS', key) == 0 then return { -1, -1 } end
  return { 0, -1 }
end

local now = now_ms()
local due = now + delay
redis.call('ZREM', K_ACTIVE, id)
if deadline and due > deadline then
  redis.call('HSET', key, 'k', '-' .. token, 'e', 'snooze deadline passed: next look at ' .. int(due) .. ' is after ' .. int(deadline))
  bury(id, now)
  emit('dead', id, 'attempt', as_int(f[2]) or 0, 'error', 'snooze deadline passed')
  return { 2, -1 }
end
redis.call('HSET', key, 'k', '-' .. token, 't', int(due), 'a', math.max(0, (as_int(f[2]) or 1) - 1))
schedule(id, due)
emit('snoozed', id, 'due', int(due))
return { 1, due }
