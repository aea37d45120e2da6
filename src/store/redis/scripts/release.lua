--[[ release: hands running jobs back without counting the attempt (a worker shutting down);
they are due at once, so another worker picks them up without waiting for the lease to run out,
and each keeps its due time, so it keeps its place in its line (a FIFO group runs in order across
a deploy). With `hold_ms` above 0 (a handler threw RateLimitSignal), each job's group, or the
queue for a job of no group, gets no hand-outs until now + hold_ms (its RATE_STATE hold; a later
hold already set stays), and the job is first in its line when the hold ends.
KEYS: base
ARGV: base, hold_ms
EACH: id, token
Returns: { then per item: code }
With no items and `hold_ms` above 0, the queue is held (the queue's RATE_STATE hold), nothing
else changes: a sharded queue holds every other shard so for a RateLimitSignal from a job of no
group, before it releases the job on its own.
Codes: ok (released), lease_lost, not_found. A re-sent call finds its own given-up mark
(_lifecycle.lua) and answers ok again; a stale holder (its lease recovered) gets lease lost and
changes nothing.
Events: PUBLISH <wake> when a released job became the queue's earliest due job.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _rate.lua
--@include _holds.lua
--@include _lifecycle.lua

local now = now_ms()
local hold = arg_int('hold_ms')
if hold < 0 then error('delayq: argument hold_ms must not be negative') end
local ids, tokens = lease_items()
if #ids == 0 and hold > 0 then
  RL().mark_rated()
  RL().hold(UNGROUPED, now + hold)
  RL().save()
  return {}
end
local runs = hmget(K_RUNS, ids)
local out, released, run_writes, scheduled = {}, {}, {}, {}
for i, id in ipairs(ids) do
  local status = lease_status(id, runs[i], tokens[i], MARK.given_up)
  if status == 'held' then
    local r = parse_run(runs[i])
    released[#released + 1] = id
    run_writes[#run_writes + 1] = id
    local due = now
    if r.t and r.t < now then due = r.t end
    run_writes[#run_writes + 1] = encode_run(math.max(0, (r.a or 1) - 1), due, given_up(tokens[i]), r.e, r.s, r.w)
    scheduled[#scheduled + 1] = due
    scheduled[#scheduled + 1] = id
    if hold > 0 then emit(EVENT.released, id, 'holdMs', hold) else emit(EVENT.released, id) end
    out[i] = CODE.ok
  elseif status == 'resent' then
    out[i] = CODE.ok
  else
    out[i] = status
  end
end
if #released > 0 then
  -- The hold first: leave_active must not put a held group back in the rotation.
  if hold > 0 then
    local groups = groups_of(released)
    local looks, held = {}, {}
    RL().mark_rated()
    for _, g in ipairs(groups) do
      RL().hold(g, now + hold)
      if g ~= UNGROUPED then
        looks[#looks + 1] = now + hold
        looks[#looks + 1] = g
        held[#held + 1] = g
      end
    end
    RL().save()
    if #looks > 0 then
      GL().lanes_remove(held)
      redis.call('ZADD', K_RATE_WAKE, 'LT', unpack(looks))
    end
  end
  leave_active(released)
  hset_pairs(K_RUNS, run_writes)
  schedule_many(scheduled)
end
return out
