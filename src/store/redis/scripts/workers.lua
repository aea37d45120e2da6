--[[ workers: the live workers of a queue (those whose heartbeat has not run out).
KEYS: base, workers, worker_info
ARGV: base, limit
Returns: { now_ms, then per item: id, expires_ms, entry }; per live worker; entry is WORKER_ENTRY
At most `limit` workers, soonest to expire first.
]]
--@include _helpers.lua

local now = now_ms()
local live = redis.call('ZRANGEBYSCORE', K_WORKERS, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, arg_int('limit'))
local ids = {}
for i = 1, #live, 2 do ids[#ids + 1] = live[i] end
local infos = hmget(K_WORKER_INFO, ids)
local out = reply({ now_ms = now })
for i, id in ipairs(ids) do
  local n = #out
  out[n + RE.id] = id
  out[n + RE.expires_ms] = tonumber(live[2 * i])
  out[n + RE.entry] = infos[i] or ''
end
return out
