--[[ reschedule: gives a scheduled job a new due time (promote = due now). Active and dead
jobs are left alone.
KEYS: base, memo
ARGV: base, id, delay_ms, run_at, request_id, memo_ms
Returns: { code, state, due_ms }
Exactly one of delay_ms and run_at is set.
Codes: done (rescheduled), refused (state says why: active, dead, completed or held — a held job runs when its hold ends; due is its run's), not_found.
Events: PUBLISH <wake> when the job became the queue's earliest due job.
Safe to re-send: with a request id a done reschedule is remembered for memo_ms ('<due ms>'), so
a re-send answers it again and does not move a relative due time twice.
]]
--@include _helpers.lua
--@include _groups.lua

local id = arg('id')
local delay, run_at = nil, nil
if (arg('delay_ms') == '') == (arg('run_at') == '') then error('delayq: arguments delay_ms and run_at: exactly one must be set') end
if arg('delay_ms') ~= '' then delay = arg_int('delay_ms') else run_at = arg_int('run_at') end
local memo_key, memo_ms = '', 0
if arg('request_id') ~= '' then memo_key, memo_ms = K_MEMO, arg_int('memo_ms') end
local memo = memo_get(memo_key)
if memo then return reply({ code = CODE.done, state = PLACE.scheduled, due_ms = tonumber(memo) }) end

local state, body, run = job_state(id)
if state == nil then return reply({ code = CODE.not_found, state = '', due_ms = -1 }) end
if state == PLACE.active or state == PLACE.dead or state == PLACE.completed or state == PLACE.held then
  return reply({ code = CODE.refused, state = state, due_ms = current_due(id, run, body) or -1 })
end
local due
if delay then due = now_ms() + delay else due = run_at end
unlink_waiting(id, state, body, run)
schedule_many({ due, SCHED.at(id, body) }, nil, true)
emit(EVENT.rescheduled, id, 'due', int(due))
memo_set(memo_key, int(due), memo_ms)
return reply({ code = CODE.done, state = PLACE.scheduled, due_ms = due })
