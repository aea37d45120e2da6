--[[ child-results: how the dependencies of a job added with them ended (docs/flows.md).
KEYS: base
ARGV: base, id
Returns: { found, hold, deadline_ms, then per item: dependency, outcome }; found is 0 when the job has no hold (never added with dependencies nor waited for a signal, or gone); hold is its HOLD_STATE; deadline_ms its deadline while it is held (-1: none, or not held); per dependency, in the order it was given, its CHILD_OUTCOME ('' while it has not ended)
What `job.childResults()` and `queue.holdOf()` read: one HGET of the job's hold and its
dependencies, a ZSCORE of its deadline, one HMGET of their outcomes. Only reads.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua

local id = arg('id')
local hold = redis.call('HGET', hold_key('holds'), id)
if not hold then return reply({ found = 0, hold = '', deadline_ms = -1 }) end
local deadline = tonumber(redis.call('ZSCORE', hold_key('held'), id))
if deadline == nil or deadline == math.huge then deadline = -1 end
local out = reply({ found = 1, hold = hold, deadline_ms = deadline })
local deps = HOLDS.split(redis.call('HGET', hold_key('deps'), id))
local fields = {}
for i, dep in ipairs(deps) do fields[i] = id .. '\t' .. dep end
local ended = hmget(hold_key('results'), fields)
for i, dep in ipairs(deps) do
  local n = #out
  out[n + RE.dependency] = dep
  out[n + RE.outcome] = ended[i] or ''
end
return out
