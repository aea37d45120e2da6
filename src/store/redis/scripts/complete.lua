--[[ complete: acks finished jobs (removes them), each only with its current lease token.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, then 2 per job: id, token
Returns: one code per job: 1 done, 0 lease lost (the token is not the job's), -1 no such job
(already completed: a re-sent ack lands here, and so does an ack after a person purged it)
]]
--@include _helpers.lua

local out = {}
local done_ids, done_keys = {}, {}
for i = 3, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = JOB_PREFIX .. id
  local current = (read_job(key, 'k') or {})[1]
  if current == token then
    done_ids[#done_ids + 1] = id
    done_keys[#done_keys + 1] = key
    out[#out + 1] = 1
    emit('completed', id)
  elseif not current and redis.call('EXISTS', key) == 0 then
    out[#out + 1] = -1
  else
    out[#out + 1] = 0
  end
end
if #done_ids > 0 then
  -- A running total, so monitors can show throughput without the event stream.
  redis.call('HINCRBY', K_META, 'completed', #done_ids)
  call_chunked('ZREM', K_ACTIVE, done_ids)
  for i = 1, #done_keys, 5000 do
    redis.call('DEL', unpack(done_keys, i, math.min(i + 4999, #done_keys)))
  end
end
return out
