--[[ fail: ends a failed attempt: back to scheduled after a delay, or to the dead set when no
attempts are left (or when asked to skip them).
KEYS: base
ARGV: base, id, token, error, retry_ms, dead, default_max
Returns: { CODE, due ms of the retry or -1 }
`dead` is '1' to skip any attempts left; `default_max` applies when the job has no limit of its own.
Codes: retried, dead, lease_lost, not_found. A re-sent call finds its own given-up mark
('-' .. token) and answers as the first did; a lease a claim recovered is marked '~' .. token,
so a stale holder's call answers lease lost and changes nothing. A corrupt body or attempt
count sends the job to the dead set.
Events: PUBLISH <wake> when the retry became the queue's earliest due job.
]]
--@include _helpers.lua

local id, token, error_text = arg('id'), arg('token'), arg('error')
local retry_ms = arg_int('retry_ms')
local default_max = arg_int('default_max')
local run = redis.call('HGET', K_RUNS, id)
local held = held_token(run)
if run and held == '-' .. token then
  if redis.call('ZSCORE', K_DEAD, id) then return { CODE.dead, -1 } end
  return { CODE.retried, current_due(id, run) or -1 }
end
if not run or held ~= token then return { lost_or_missing(id), -1 } end

local now = now_ms()
local r = parse_run(run)
local b, bad_body = parse_body(redis.call('HGET', K_JOBS, id))
redis.call('ZREM', K_ACTIVE, id)
local corrupt = r.bad or bad_body
if corrupt and error_text ~= corrupt then error_text = corrupt .. '; last error: ' .. error_text end
local max = (b and b.max) or default_max
if arg('dead') == '1' or corrupt or r.a >= max then
  redis.call('HSET', K_RUNS, id, encode_run(r.a, r.t, '-' .. token, error_text, r.s, r.w))
  bury_many({ id }, now)
  emit('dead', id, 'attempt', r.a, 'error', error_text)
  return { CODE.dead, -1 }
end
local due = now + retry_ms
redis.call('HSET', K_RUNS, id, encode_run(r.a, due, '-' .. token, error_text, r.s, r.w))
schedule_many({ due, id })
emit('retried', id, 'attempt', r.a, 'due', int(due), 'error', error_text)
return { CODE.retried, due }
