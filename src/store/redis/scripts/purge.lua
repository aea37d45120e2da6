--[[ purge: deletes dead or kept completed jobs for good.
KEYS: base
ARGV: base, set, mode, limit, age_ms
EACH: id
Returns: deleted; the number of jobs deleted
`set` is 'dead' or 'completed'; `mode` is 'ids' (the items), 'all' or 'older' (died or finished
more than age_ms ago); with 'all' and 'older', at most `limit` per call: call again until 0. A
fixed number of calls per batch.
]]
--@include _helpers.lua

local mode, limit = arg('mode'), arg_int('limit')
local zset = K_DEAD
if arg('set') == 'completed' then zset = K_COMPLETED elseif arg('set') ~= 'dead' then error('delayq: purge set must be dead or completed') end
local ids
if mode == 'all' then
  ids = redis.call('ZRANGE', zset, 0, limit - 1)
elseif mode == 'older' then
  ids = redis.call('ZRANGEBYSCORE', zset, '-inf', now_ms() - arg_int('age_ms'), 'LIMIT', 0, limit)
else
  ids = {}
  for i = 1, each_count() do ids[i] = each_arg(i, 'id') end
end
if #ids == 0 then return 0 end
local dead = members_of(zset, ids)
if #dead == 0 then return 0 end
call_chunked('ZREM', zset, dead)
forget(dead)
for _, id in ipairs(dead) do emit(EVENT.purged, id) end
return #dead
