--[[ fail: ends a failed attempt: back to scheduled after a delay, or to the dead set when no
attempts are left (or when asked to skip them).
KEYS: base
ARGV: base, id, token, error, retry_ms, dead, default_max, history
Returns: { code, due_ms }; due_ms of the retry
`dead` is '1' to skip any attempts left; `default_max` applies when the job has no limit of its own.
Codes: retried, dead, lease_lost, not_found. A re-sent call finds its own given-up mark
(_lifecycle.lua) and answers as the first did (and appends nothing); a lease a claim recovered
is marked so a stale holder's call answers lease lost and changes nothing. A corrupt
body or attempt count sends the job to the dead set.
Both ways (retried, dead) append { attempt, atMs = now, error as sent } to the job's entry in
K_ERRORS (wire.ts ERROR_HISTORY), keeping the last `history` entries. A stored entry that does
not parse is started afresh, never a reason to fail the call.
Both ways count a failed attempt in the queue's history (note_history, _lifecycle.lua). A job
that ran out of attempts keeps the max that applied in its run state ('<attempts>/<max>').
Events: PUBLISH <wake> when the retry became the queue's earliest due job.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local id, token, error_text = arg('id'), arg('token'), arg('error')
local retry_ms = arg_int('retry_ms')
local default_max = arg_int('default_max')
local history = arg_int('history')
local run = redis.call('HGET', K_RUNS, id)
local status = lease_status(id, run, token, MARK.given_up)
if status == 'resent' then
  if redis.call('ZSCORE', K_DEAD, id) then return reply({ code = CODE.dead, due_ms = -1 }) end
  return reply({ code = CODE.retried, due_ms = current_due(id, run) or -1 })
end
if status ~= 'held' then return reply({ code = status, due_ms = -1 }) end

local now = now_ms()
local r = parse_run(run)
local body = redis.call('HGET', K_JOBS, id)
local b, bad_body = parse_body(body)
-- Decided before the first write; the text is the worker's, as sent (lastError below may be
-- prefixed with why the job is corrupt).
local errors = errors_with(id, history, r.a, now, error_text)
leave_active({ id })
note_history(now, 0, 1, 0, 0, 0, 0)
if errors then redis.call('HSET', K_ERRORS, id, errors) end
local corrupt = r.bad or bad_body
if corrupt and error_text ~= corrupt then error_text = corrupt .. '; last error: ' .. error_text end
local max = (b and b.max) or default_max
if arg('dead') == '1' or corrupt or r.a >= max then
  -- Out of attempts: the max that applied is kept in the run state (the reads show it).
  redis.call('HSET', K_RUNS, id, encode_run(r.a, r.t, given_up(token), error_text, r.s, r.w, not corrupt and r.a >= max and max or nil))
  finish(FINISH.dead, { id }, now)
  emit(EVENT.dead, id, 'attempt', r.a, 'error', error_text)
  return reply({ code = CODE.dead, due_ms = -1 })
end
local due = now + retry_ms
redis.call('HSET', K_RUNS, id, encode_run(r.a, due, given_up(token), error_text, r.s, r.w))
schedule_many({ due, SCHED.at(id, body) }, nil, true)
emit(EVENT.retried, id, 'attempt', r.a, 'due', int(due), 'error', error_text)
return reply({ code = CODE.retried, due_ms = due })
