--[[ complete: acks finished jobs (removes them), each only with its current lease token.
KEYS: base
ARGV: base
EACH: id, token
Returns: one CODE per job
Codes: ok (done), lease_lost (the token is not the job's), not_found (already completed: a
re-sent ack lands here, and so does an ack after a person purged it).
A fixed number of calls per batch: one HMGET of run states, then one ZREM and two HDEL.
]]
--@include _helpers.lua

local ids, tokens = lease_items()
local runs = hmget(K_RUNS, ids)
local out, done = {}, {}
for i, id in ipairs(ids) do
  if runs[i] and held_token(runs[i]) == tokens[i] then
    done[#done + 1] = id
    out[i] = CODE.ok
    if events_on() then emit('completed', id) end
  else
    out[i] = lost_or_missing(id)
  end
end
if #done > 0 then
  -- A running total, so monitors can show throughput without the event stream.
  redis.call('HINCRBY', K_META, 'completed', #done)
  call_chunked('ZREM', K_ACTIVE, done)
  forget(done)
end
return out
