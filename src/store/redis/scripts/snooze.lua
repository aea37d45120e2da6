--[[ snooze: ends an attempt without failing it: the job runs again after a delay, and the
attempt is not counted. Past the optional deadline the job goes to the dead set instead.
KEYS: base
ARGV: base, id, token, delay_ms, deadline
Returns: { code, due_ms }
`deadline` is a time (ms, server clock) or ''.
Codes: snoozed, dead (deadline passed), lease_lost, not_found. A re-sent call finds its own
given-up mark (_lifecycle.lua) and answers as the first did; a stale holder (its lease
recovered) gets lease lost and changes nothing.
Events: PUBLISH <wake> when the job became the queue's earliest due job.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local id, token = arg('id'), arg('token')
local delay = arg_int('delay_ms')
local deadline = nil
if arg('deadline') ~= '' then deadline = arg_int('deadline') end
local run = redis.call('HGET', K_RUNS, id)
local status = lease_status(id, run, token, MARK.given_up)
if status == 'resent' then
  if redis.call('ZSCORE', K_DEAD, id) then return reply({ code = CODE.dead, due_ms = -1 }) end
  return reply({ code = CODE.snoozed, due_ms = current_due(id, run) or -1 })
end
if status ~= 'held' then return reply({ code = status, due_ms = -1 }) end

local now = now_ms()
local r = parse_run(run)
local due = now + delay
leave_active({ id })
if deadline and due > deadline then
  local why = 'snooze deadline passed: next look at ' .. int(due) .. ' is after ' .. int(deadline)
  redis.call('HSET', K_RUNS, id, encode_run(r.a, r.t, given_up(token), why, r.s, r.w))
  finish(FINISH.dead, { id }, now)
  emit(EVENT.dead, id, 'attempt', r.a, 'error', 'snooze deadline passed')
  return reply({ code = CODE.dead, due_ms = -1 })
end
redis.call('HSET', K_RUNS, id, encode_run(math.max(0, r.a - 1), due, given_up(token), r.e, r.s, r.w))
schedule_many({ due, id })
emit(EVENT.snoozed, id, 'due', int(due))
return reply({ code = CODE.snoozed, due_ms = due })
