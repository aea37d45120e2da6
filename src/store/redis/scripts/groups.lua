--[[ groups: reads groups' states and the queue's concurrency limits.
KEYS: base
ARGV: base, cursor, count
EACH: id
Returns: { cursor, concurrency, group_concurrency, then per item: id, state }; cursor is '0' when a listing is over, '' when none was asked for; limits are -1 when not set; per group its GROUP_STATE, '' when it has none (nothing running or waiting, no limit of its own, no pause)
With ids: those groups' states. Without: one step of a walk over every group that has a state
(HSCAN from `cursor`, about `count` groups a step; a group there from start to end is listed at
least once), or with cursor '' only the limits. Read only.
]]
--@include _helpers.lua

local count = arg_int('count')
local meta = redis.call('HMGET', K_META, 'concurrency', 'groupConcurrency')
local out = reply({ cursor = '', concurrency = as_int(meta[1]) or -1, group_concurrency = as_int(meta[2]) or -1 })
local function row(id, state)
  local n = #out
  out[n + RE.id] = id
  out[n + RE.state] = state or ''
end
if each_count() > 0 then
  local ids = {}
  for i = 1, each_count() do ids[i] = each_arg(i, 'id') end
  local states = hmget(K_GROUPS, ids)
  for i, id in ipairs(ids) do row(id, states[i]) end
  return out
end
if arg('cursor') == '' then return out end
if count < 1 or count > 1000 then error('delayq: groups count must be 1..1000') end
local step = redis.call('HSCAN', K_GROUPS, arg('cursor'), 'COUNT', count)
out[R.cursor] = step[1]
for i = 1, #step[2], 2 do row(step[2][i], step[2][i + 1]) end
return out
