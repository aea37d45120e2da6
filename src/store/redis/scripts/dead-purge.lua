--[[ dead-purge: deletes dead jobs for good.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 mode ('ids', 'all' or 'older'),
      4 limit per call (for 'all' and 'older'), 5 age ms (for 'older'), then ids (for 'ids')
Returns: the number of jobs deleted. With 'all'/'older', at most `limit` per call: call again until 0.
]]
--@include _helpers.lua

local mode, limit = ARGV[3], arg_int(4, 'limit')
local ids
if mode == 'all' then
  ids = redis.call('ZRANGE', K_DEAD, 0, limit - 1)
elseif mode == 'older' then
  ids = redis.call('ZRANGEBYSCORE', K_DEAD, '-inf', now_ms() - arg_int(5, 'age ms'), 'LIMIT', 0, limit)
else
  ids = {}
  for i = 6, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local n = 0
for _, id in ipairs(ids) do
  if redis.call('ZREM', K_DEAD, id) == 1 then
    redis.call('DEL', JOB_PREFIX .. id)
    emit('purged', id)
    n = n + 1
  end
end
return n
