--[[ release: hands running jobs back without counting the attempt (a worker shutting down);
they are due at once, so another worker picks them up without waiting for the lease to run out.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, then 2 per job: id, token
Returns: one code per job: 1 released, 0 lease lost, -1 no such job.
A re-sent call finds its own given-up mark ('-' .. token) and answers 1 again; a stale
holder (its lease recovered: '~' .. token) gets lease lost and changes nothing.
Events: PUBLISH <wake> when a released job became the queue's earliest due job.
]]
--@include _helpers.lua

local now = now_ms()
local out = {}
for i = 3, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = JOB_PREFIX .. id
  local f = read_job(key, 'k', 'a') or {}
  if f[1] == token then
    redis.call('ZREM', K_ACTIVE, id)
    redis.call('HSET', key, 'k', '-' .. token, 'a', math.max(0, (as_int(f[2]) or 1) - 1), 't', int(now))
    schedule(id, now)
    emit('released', id)
    out[#out + 1] = 1
  elseif f[1] == '-' .. token then
    out[#out + 1] = 1
  elseif not f[1] and redis.call('EXISTS', key) == 0 then
    out[#out + 1] = -1
  else
    out[#out + 1] = 0
  end
end
return out
