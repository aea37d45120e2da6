--[[ dead-list: a page of the dead set, oldest death first.
KEYS: base
ARGV: base, offset, limit
Returns: { total, then per item: id, died_ms, body, run }; run is RUN_STATE
Never fails on stored data: body and run state are passed on as stored (the caller reads what
it can).
]]
--@include _helpers.lua

local offset, limit = arg_int('offset'), arg_int('limit')
local out = reply({ total = redis.call('ZCARD', K_DEAD) })
if limit <= 0 then return out end
local page = redis.call('ZRANGE', K_DEAD, offset, offset + limit - 1, 'WITHSCORES')
local ids = {}
for i = 1, #page, 2 do ids[#ids + 1] = page[i] end
local bodies, runs = hmget(K_JOBS, ids), hmget(K_RUNS, ids)
for i, id in ipairs(ids) do
  local n = #out
  out[n + RE.id] = id
  out[n + RE.died_ms] = page[2 * i]
  out[n + RE.body] = bodies[i] or ''
  out[n + RE.run] = runs[i] or ''
end
return out
