--[[ get: reads one job and the state it is in.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the job's key
ARGV: 1 job key prefix, 2 wake channel, 3 id
Returns: { internal state ('scheduled', 'ready', 'active', 'dead', or '' when in no set),
           lease deadline ms or -1, now ms, then the job hash as field, value pairs }
or an empty array when there is no such job. Never fails on stored data: a key of another type
comes back as the single field e with the reason.
]]
--@include _helpers.lua

local id, key = ARGV[3], KEYS[6]
local body = redis.pcall('HGETALL', key)
if body.err then body = { 'e', 'corrupt job: its key holds a ' .. redis.call('TYPE', key).ok .. ', not a hash' } end
if #body == 0 then return {} end
local state = job_state(id, key) or ''
local deadline = -1
if state == 'active' then deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, id)) end
local out = { state, int(deadline), now_ms() }
for i = 1, #body do out[#out + 1] = body[i] end
return out
