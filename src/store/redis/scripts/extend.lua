--[[ extend: renews the leases of running jobs, each only with its current token, and carries
the worker's heartbeat (so a busy worker pays no round trip of its own to stay listed).
KEYS: base, workers, worker_info
ARGV: base, lease_ms, worker, info, ttl_ms
EACH: id, token
Returns: per job: the new lease deadline ms, or CODE.lease_lost / CODE.not_found
The deadline is measured from the server's now. `worker` is '' for no heartbeat; else `info`
(WorkerInfo JSON) is stored for `ttl_ms` (see worker_beat). Safe to run twice: a re-sent call
sets the same kind of deadline again.
]]
--@include _helpers.lua

local now = now_ms()
local deadline = now + arg_int('lease_ms')
if arg('worker') ~= '' then worker_beat(now, arg('worker'), arg('info'), arg_int('ttl_ms')) end
local ids, tokens = lease_items()
local runs = hmget(K_RUNS, ids)
local out, renewed = {}, {}
for i, id in ipairs(ids) do
  if runs[i] and held_token(runs[i]) == tokens[i] then
    renewed[#renewed + 1] = deadline
    renewed[#renewed + 1] = id
    out[i] = deadline
  else
    out[i] = lost_or_missing(id)
  end
end
-- XX: a lease recovered meanwhile (gone from active) is not put back.
for i = 1, #renewed, CHUNK do
  redis.call('ZADD', K_ACTIVE, 'XX', unpack(renewed, i, math.min(i + CHUNK - 1, #renewed)))
end
return out
