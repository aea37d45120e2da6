--[[ fail: ends a failed attempt: back to scheduled after a delay, or to the dead set when no
attempts are left (or when asked to skip them).
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 id, 4 token, 5 error text, 6 retry delay ms,
      7 straight to dead ('1' or '0'), 8 default max attempts
Returns: { code, due ms or -1 }: code 1 retried (due is the retry's), 2 dead, 0 lease lost,
-1 no such job. A re-sent call finds its own given-up mark ('-' .. token) and answers as the
first did; a lease a claim recovered is marked '~' .. token, so a stale holder's call answers
lease lost and changes nothing. A bad attempt count or max attempts sends the job to the dead set.
Events: PUBLISH <wake> when the retry became the queue's earliest due job.
]]
--@include _helpers.lua

local id, token = ARGV[3], ARGV[4]
local retry_delay = arg_int(6, 'retry delay ms')
local default_max = arg_int(8, 'default max attempts')
local key = JOB_PREFIX .. id
local f = read_job(key, 'k', 'a', 'm', 't')
if not f then return { 0, -1 } end
if f[1] == '-' .. token then
  if redis.call('ZSCORE', K_DEAD, id) then return { 2, -1 } end
  return { 1, as_int(f[4]) or -1 }
end
if f[1] ~= token then
  if redis.call('EXISTS', key) == 0 then return { -1, -1 } end
  return { 0, -1 }
end

local now = now_ms()
redis.call('ZREM', K_ACTIVE, id)
local attempts = as_int(f[2] or '0')
local max = default_max
if f[3] then max = as_int(f[3]) end
local error_text = ARGV[5]
if not attempts or not max then error_text = 'corrupt job: bad attempt count (a) or max attempts (m); last error: ' .. error_text end
if ARGV[7] == '1' or not attempts or not max or attempts >= max then
  attempts = attempts or 0
  redis.call('HSET', key, 'k', '-' .. token, 'e', error_text)
  bury(id, now)
  emit('dead', id, 'attempt', attempts, 'error', error_text)
  return { 2, -1 }
end
local due = now + retry_delay
redis.call('HSET', key, 'k', '-' .. token, 'e', ARGV[5], 't', int(due))
schedule(id, due)
emit('retried', id, 'attempt', attempts, 'due', int(due), 'error', ARGV[5])
return { 1, due }
