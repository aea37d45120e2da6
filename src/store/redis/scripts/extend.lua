--[[ extend: renews the leases of running jobs, each only with its current token, and carries
the worker's heartbeat (so a busy worker pays no round trip of its own to stay listed).
KEYS: base, workers, worker_info
ARGV: base, lease_ms, worker, info, ttl_ms
EACH: id, token
Returns: { then per item: deadline_ms }; CODE.lease_lost or CODE.not_found instead of a deadline when the lease is not held
The deadline is measured from the server's now. `worker` is '' for no heartbeat; else `info`
(WorkerInfo JSON) is stored for `ttl_ms` (see worker_beat). Safe to run twice: a re-sent call
sets the same kind of deadline again.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local now = now_ms()
local deadline = now + arg_int('lease_ms')
if arg('worker') ~= '' then worker_beat(now, arg('worker'), arg('info'), arg_int('ttl_ms')) end
local ids, tokens = lease_items()
local runs = hmget(K_RUNS, ids)
local out, renewed = {}, {}
for i, id in ipairs(ids) do
  local status = lease_status(id, runs[i], tokens[i], nil)
  if status == 'held' then
    renewed[#renewed + 1] = deadline
    renewed[#renewed + 1] = id
    out[i] = deadline
  else
    out[i] = status
  end
end
renew_active(renewed)
return out
