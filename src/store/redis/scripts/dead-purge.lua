--[[ dead-purge: deletes dead jobs for good.
KEYS: base
ARGV: base, mode, limit, age_ms
EACH: id
Returns: the number of jobs deleted
`mode` is 'ids' (the items), 'all' or 'older' (died more than age_ms ago); with 'all' and
'older', at most `limit` per call: call again until 0. A fixed number of calls per batch.
]]
--@include _helpers.lua

local mode, limit = arg('mode'), arg_int('limit')
local ids
if mode == 'all' then
  ids = redis.call('ZRANGE', K_DEAD, 0, limit - 1)
elseif mode == 'older' then
  ids = redis.call('ZRANGEBYSCORE', K_DEAD, '-inf', now_ms() - arg_int('age_ms'), 'LIMIT', 0, limit)
else
  ids = {}
  for i = 1, each_count() do ids[i] = each_arg(i, 'id') end
end
if #ids == 0 then return 0 end
local dead = dead_members(ids)
if #dead == 0 then return 0 end
call_chunked('ZREM', K_DEAD, dead)
forget(dead)
for _, id in ipairs(dead) do emit('purged', id) end
return #dead
