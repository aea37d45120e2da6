--[[ dead-retry: puts dead jobs back to scheduled, due now, with their attempts and first start reset.
KEYS: base
ARGV: base, mode, limit
EACH: id
Returns: retried; the number of jobs retried
`mode` is 'ids' (the items) or 'all' (at most `limit` per call: call again until 0).
Safe to run twice: a job no longer dead is skipped. A dead member whose body is gone is removed
and not counted. A fixed number of calls per batch.
Events: PUBLISH <wake> when a retried job became the queue's earliest due job.
]]
--@include _helpers.lua
--@include _groups.lua

local ids
if arg('mode') == 'all' then
  ids = redis.call('ZRANGE', K_DEAD, 0, arg_int('limit') - 1)
else
  ids = {}
  for i = 1, each_count() do ids[i] = each_arg(i, 'id') end
end
if #ids == 0 then return 0 end
local now = now_ms()
local dead = members_of(K_DEAD, ids)
if #dead == 0 then return 0 end
local bodies, runs = hmget(K_JOBS, dead), hmget(K_RUNS, dead)
call_chunked('ZREM', K_DEAD, dead)
local run_writes, scheduled, gone, retried = {}, {}, {}, {}
local ranked = 0
for i, id in ipairs(dead) do
  if bodies[i] then
    -- Back among the jobs that have not ended: one with a priority counts again (SCHED.rank).
    local _, priority = body_order(bodies[i])
    if priority and priority ~= 0 then ranked = ranked + 1 end
    local r = parse_run(runs[i])
    run_writes[#run_writes + 1] = id
    -- A body that was corrupt stays corrupt: it comes back here with the reason. The start is
    -- cleared: the next hand-out starts the job afresh, so its time to death is that run's.
    run_writes[#run_writes + 1] = encode_run(0, now, r and r.k, r and r.e, nil, r and r.w)
    scheduled[#scheduled + 1] = now
    scheduled[#scheduled + 1] = SCHED.at(id, bodies[i])
    retried[#retried + 1] = id
    emit(EVENT.deadRetried, id)
  else
    gone[#gone + 1] = id
  end
end
hset_pairs(K_RUNS, run_writes)
SCHED.rank(ranked)
-- And a job of a group, or with a cost or a debounce key (LIVE): its entries outlived its death.
LIVE.count(LIVE.GROUP, LIVE.among(LIVE.GROUP, retried, true))
LIVE.count(LIVE.FLOW, LIVE.among(LIVE.FLOW, retried, true))
forget(gone)
schedule_many(scheduled, nil, true)
return #scheduled / 2
