--[[ dead-retry: puts dead jobs back to scheduled, due now, with their attempts reset.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 mode ('ids' or 'all'), 4 limit (for 'all'), then ids
Returns: the number of jobs retried. With 'all', at most `limit` per call: call again until 0.
Safe to run twice: a job no longer dead is skipped. A job whose key holds another type than a
hash stays dead (nothing could run it); purge it.
Events: PUBLISH <wake> when a retried job became the queue's earliest due job.
]]
--@include _helpers.lua

local ids
if ARGV[3] == 'all' then
  ids = redis.call('ZRANGE', K_DEAD, 0, arg_int(4, 'limit') - 1)
else
  ids = {}
  for i = 5, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local now = now_ms()
local n = 0
for _, id in ipairs(ids) do
  local key = JOB_PREFIX .. id
  local _, wrong_type = read_job(key, 'a')
  if not wrong_type and redis.call('ZREM', K_DEAD, id) == 1 then
    if redis.call('EXISTS', key) == 1 then
      redis.call('HSET', key, 'a', 0, 't', int(now))
      -- A body that was corrupt stays corrupt: it comes back here with the reason.
      schedule(id, now)
      emit('deadRetried', id)
      n = n + 1
    end
  end
end
return n
