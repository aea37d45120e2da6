--[[ extend: renews the leases of running jobs, each only with its current token.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 lease ms (from the server's now), then 2 per job: id, token
Returns: one value per job: the new lease deadline ms, 0 lease lost, -1 no such job
Safe to run twice: a re-sent call sets the same kind of deadline again.
]]
--@include _helpers.lua

local now = now_ms()
local deadline = now + arg_int(3, 'lease ms')
local out = {}
local renewed = {}
for i = 4, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = JOB_PREFIX .. id
  local current = (read_job(key, 'k') or {})[1]
  if current == token then
    renewed[#renewed + 1] = deadline
    renewed[#renewed + 1] = id
    out[#out + 1] = deadline
  elseif not current and redis.call('EXISTS', key) == 0 then
    out[#out + 1] = -1
  else
    out[#out + 1] = 0
  end
end
if #renewed > 0 then
  local args = { 'XX' }
  for i = 1, #renewed do args[#args + 1] = renewed[i] end
  call_chunked('ZADD', K_ACTIVE, args)
end
return out
