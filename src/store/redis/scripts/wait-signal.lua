--[[ wait-signal: ends an attempt without failing it and holds the job until a signal of `name`
comes (signal.lua), or `timeout_ms` passes (docs/flows.md).
KEYS: base
ARGV: base, id, token, name, timeout_ms
Returns: { code, due_ms }; due_ms is when the job runs again when signalled (a signal was kept for it), -1 while it waits
`timeout_ms` is '' for no timeout. As snooze, the attempt is not counted. A signal of that name
sent before (kept in `signals`) ends the wait at once: the job is scheduled now and the signal is
taken (CODE.signalled). Else the job is held (`held`, HOLD_STATE with the signal's name) and its
holder's slot is free; a claim releases it when the timeout passes, marking it timed out
(SIGNAL_IN). Codes: waiting, signalled, lease_lost, not_found. A re-sent call finds its own
given-up mark (_lifecycle.lua) and answers as the first did.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local id, token, name = arg('id'), arg('token'), arg('name')
local timeout = nil
if arg('timeout_ms') ~= '' then timeout = arg_int('timeout_ms') end
local run = redis.call('HGET', K_RUNS, id)
local status = lease_status(id, run, token, MARK.given_up)
if status == 'resent' then
  if redis.call('ZSCORE', hold_key('held'), id) then return reply({ code = CODE.waiting, due_ms = -1 }) end
  return reply({ code = CODE.signalled, due_ms = current_due(id, run) or -1 })
end
if status ~= 'held' then return reply({ code = status, due_ms = -1 }) end

local now = now_ms()
local r = parse_run(run)
leave_active({ id })
redis.call('HSET', K_RUNS, id, encode_run(math.max(0, r.a - 1), now, given_up(token), r.e, r.s, r.w))
if not flow().holds then redis.call('HSET', K_META, 'holds', '1') end
local kept = HOLDS.kept_signals(id)
local data = kept[name]
if data ~= nil then
  -- Sent before the job waited: the wait ends now, with that signal.
  kept[name] = nil
  HOLDS.keep_signals(id, kept)
  redis.call('HSET', hold_key('delivered'), id, name .. '\t0\t' .. tostring(data))
  redis.call('HSET', hold_key('holds'), id, HOLDS.encode({ pending = 0, failed = 0, policy = 'f', due = now, phase = 'r', signal = name }))
  schedule_many({ now, id })
  return reply({ code = CODE.signalled, due_ms = now })
end
redis.call('HSET', hold_key('holds'), id, HOLDS.encode({ pending = 1, failed = 0, policy = 'f', due = now, phase = 'h', signal = name }))
redis.call('HDEL', hold_key('delivered'), id)
local deadline = timeout and now + timeout
redis.call('ZADD', hold_key('held'), deadline and int(deadline) or '+inf', id)
if deadline then wake_if_earlier(head_score(K_SCHEDULED), deadline) end
return reply({ code = CODE.waiting, due_ms = -1 })
