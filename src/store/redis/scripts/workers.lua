--[[ workers: the live workers of a queue (those whose heartbeat has not run out).
KEYS: base, workers, worker_info
ARGV: base, limit
Returns: { now ms, then per live worker: id, expires at ms, WORKER_ENTRY }
At most `limit` workers, soonest to expire first.
]]
--@include _helpers.lua

local now = now_ms()
local live = redis.call('ZRANGEBYSCORE', K_WORKERS, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, arg_int('limit'))
local ids = {}
for i = 1, #live, 2 do ids[#ids + 1] = live[i] end
local infos = hmget(K_WORKER_INFO, ids)
local out = { now }
for i, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = tonumber(live[2 * i])
  out[#out + 1] = infos[i] or ''
end
return out
