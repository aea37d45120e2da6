--[[ fail-now: ends a job's attempt from outside its holder (Queue.fail): a running job's lease
ends at once and its attempt fails with `reason` (retried after retry_ms while attempts are left,
else dead); with dead = '1' the job goes to the dead set now, whether it runs or waits.
KEYS: base, memo
ARGV: base, id, reason, dead, retry_ms, default_max, history, request_id, memo_ms
Returns: { code, state, due_ms }; state is the job's state before the call (refused: why; '' when not found); due_ms of the retry
Codes: retried (back to scheduled, due at due_ms), dead, refused (a waiting job without dead,
state 'scheduled'; a dead or completed job, its state), not_found. state is the job's state
before the call.
The running job's lease ends as cancel's does (_lifecycle.lua revoke): its group's slot is free
at once, its holder hears on the wake channel ('failed' or 'dead') and every later call with its
token answers lease lost (the run state keeps MARK.revoked .. token). The failure is an entry of
the job's error history, as fail.lua's. `default_max` applies when the job has no limit of its
own; a job that runs out of attempts keeps the max that applied in its run state
('<attempts>/<max>'). Safe to re-send: with a request id the answer is remembered for memo_ms.
Events: 'retried' or 'dead' (with `by` = 'fail-now'); PUBLISH <wake> when the retry became the
queue's earliest due job.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local id, reason = arg('id'), arg('reason')
local retry_ms, default_max, history = arg_int('retry_ms'), arg_int('default_max'), arg_int('history')
local bury = arg('dead') == '1'
local memo_key, memo_ms = '', 0
if arg('request_id') ~= '' then memo_key, memo_ms = K_MEMO, arg_int('memo_ms') end
local memo = memo_get(memo_key)
if memo then
  local code, state, due = string.match(memo, '^(%-?%d+):([^:]*):(%-?%d+)$')
  return reply({ code = tonumber(code), state = state, due_ms = tonumber(due) })
end

local function answer(code, state, due)
  memo_set(memo_key, code .. ':' .. state .. ':' .. int(due), memo_ms)
  return reply({ code = code, state = state, due_ms = due })
end

local state, body, run = job_state(id)
if state == nil then return answer(CODE.not_found, '', -1) end
local public = public_state(state)
if state == PLACE.dead or state == PLACE.completed then return answer(CODE.refused, public, -1) end
if state ~= PLACE.active and not bury then return answer(CODE.refused, public, -1) end

local now = now_ms()
local r = parse_run(run) or { a = 0, k = held_token(run), w = '' }
local b, bad_body = parse_body(body)
local attempts = r.a or 0
local max = (b and b.max) or default_max
local corrupt = r.bad or bad_body
local text = reason
if corrupt and text ~= corrupt then text = corrupt .. '; last error: ' .. text end
local dies = bury or corrupt ~= nil or attempts >= max
-- Decided before the first write.
local errors = errors_with(id, history, attempts, now, reason)

-- A job buried before it ever ran keeps its due time (a never-run job's has none in its run).
local was_due = current_due(id, run, body)
-- A waiting job keeps the mark its last holder left (a re-send of that holder's call answers as before).
local token = r.k or ''
if state == PLACE.active then
  token = MARK.revoked .. revoke(id, run, dies and 'dead' or 'failed', now)
  -- A running attempt failed from outside counts as a failed attempt in the history.
  note_history(now, 0, 1, 0, 0, 0, 0)
else
  unlink_waiting(id, state, body, run)
end
if errors then redis.call('HSET', K_ERRORS, id, errors) end
if dies then
  -- Out of attempts: the max that applied is kept in the run state (the reads show it).
  redis.call('HSET', K_RUNS, id, encode_run(attempts, was_due, token, text, r.s, r.w, not corrupt and attempts >= max and max or nil))
  finish(FINISH.dead, { id }, now)
  emit(EVENT.dead, id, 'attempt', attempts, 'error', text, 'by', 'fail-now')
  return answer(CODE.dead, public, -1)
end
local due = now + retry_ms
redis.call('HSET', K_RUNS, id, encode_run(attempts, due, token, text, r.s, r.w))
schedule_many({ due, SCHED.at(id, body) }, nil, true)
emit(EVENT.retried, id, 'attempt', attempts, 'due', int(due), 'error', text, 'by', 'fail-now')
return answer(CODE.retried, public, due)
