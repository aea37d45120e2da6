--[[ reschedule: gives a scheduled job a new due time (promote = due now). Active and dead
jobs are left alone.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the job's key,
      7 the request memo key (`req:<request id>`, or any key when ARGV 6 is '')
ARGV: 1 job key prefix, 2 wake channel, 3 id, 4 delay ms or '', 5 runAt ms or '',
      6 request id or '', 7 memo ms
Returns: { code, state, due ms or -1 }: code 1 rescheduled, 0 not (state says why), -1 no such job
Events: PUBLISH <wake> when the job became the queue's earliest due job.
Safe to re-send: with a request id a done reschedule is remembered for the memo time
('<due ms>'), so a re-send answers it again and does not move a relative due time twice.
]]
--@include _helpers.lua

local id, key = ARGV[3], KEYS[6]
local delay, run_at = nil, nil
if ARGV[4] ~= '' then delay = arg_int(4, 'delay ms') else run_at = arg_int(5, 'runAt ms') end
local memo_key, memo_ms = '', 0
if ARGV[6] ~= '' then memo_key, memo_ms = KEYS[7], arg_int(7, 'memo ms') end
local memo = memo_get(memo_key)
if memo then return { 1, 'scheduled', tonumber(memo) } end

local _, wrong_type = read_job(key, 't')
if wrong_type then return redis.error_reply('delayq: ' .. wrong_type) end
local state = job_state(id, key)
if state == nil then return { -1, '', -1 } end
if state == 'active' or state == 'dead' then
  return { 0, state, as_int((read_job(key, 't') or {})[1]) or -1 }
end
local due
if delay then due = now_ms() + delay else due = run_at end
unlink_waiting(id, key, state)
redis.call('HSET', key, 't', int(due))
schedule(id, due)
emit('rescheduled', id, 'due', int(due))
memo_set(memo_key, int(due), memo_ms)
return { 1, 'scheduled', due }
