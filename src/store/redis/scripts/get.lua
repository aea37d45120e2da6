--[[ get: reads one job and the state it is in.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the job's key
ARGV: 1 job key prefix, 2 wake channel, 3 id
Returns: { internal state ('scheduled', 'ready', 'active', 'dead', or '' when in no set),
           lease deadline ms or -1, now ms, then the job hash as field, value pairs }
or an empty array when there is no such job.
]]
--@include _helpers.lua

local id, key = ARGV[3], KEYS[6]
local body = redis.call('HGETALL', key)
if #body == 0 then return {} end
local state = job_state(id, key) or ''
local deadline = -1
if state == 'active' then deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, id)) end
local out = { state, deadline, now_ms() }
for i = 1, #body do out[#out + 1] = body[i] end
return out
