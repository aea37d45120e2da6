--[[ release: hands running jobs back without counting the attempt (a worker shutting down);
they are due at once, so another worker picks them up without waiting for the lease to run out.
KEYS: base
ARGV: base
EACH: id, token
Returns: { then per item: code }
Codes: ok (released), lease_lost, not_found. A re-sent call finds its own given-up mark
(_lifecycle.lua) and answers ok again; a stale holder (its lease recovered) gets lease lost and
changes nothing.
Events: PUBLISH <wake> when a released job became the queue's earliest due job.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _lifecycle.lua

local now = now_ms()
local ids, tokens = lease_items()
local runs = hmget(K_RUNS, ids)
local out, released, run_writes, scheduled = {}, {}, {}, {}
for i, id in ipairs(ids) do
  local status = lease_status(id, runs[i], tokens[i], MARK.given_up)
  if status == 'held' then
    local r = parse_run(runs[i])
    released[#released + 1] = id
    run_writes[#run_writes + 1] = id
    run_writes[#run_writes + 1] = encode_run(math.max(0, (r.a or 1) - 1), now, given_up(tokens[i]), r.e, r.s, r.w)
    scheduled[#scheduled + 1] = now
    scheduled[#scheduled + 1] = id
    emit(EVENT.released, id)
    out[i] = CODE.ok
  elseif status == 'resent' then
    out[i] = CODE.ok
  else
    out[i] = status
  end
end
if #released > 0 then
  leave_active(released)
  hset_pairs(K_RUNS, run_writes)
  schedule_many(scheduled)
end
return out
