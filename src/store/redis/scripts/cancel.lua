--[[ cancel: removes a scheduled job (due or not). Active and dead jobs are left alone.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the job's key,
      7 the request memo key (`req:<request id>`, or any key when ARGV 4 is '')
ARGV: 1 job key prefix, 2 wake channel, 3 id, 4 request id or '', 5 memo ms
Returns: { code, state }: code 1 cancelled, 0 not cancelled (state says why), -1 no such job
Safe to re-send: with a request id the answer is remembered for the memo time
('<code>:<state>'), so a re-sent cancel answers "cancelled" again instead of "no such job".
]]
--@include _helpers.lua

local id, key = ARGV[3], KEYS[6]
local memo_key, memo_ms = '', 0
if ARGV[4] ~= '' then memo_key, memo_ms = KEYS[7], arg_int(5, 'memo ms') end
local memo = memo_get(memo_key)
if memo then
  local code, state = string.match(memo, '^(%-?%d+):(.*)$')
  return { tonumber(code), state }
end

local function done(code, state)
  memo_set(memo_key, code .. ':' .. state, memo_ms)
  return { code, state }
end

local state = job_state(id, key)
if state == nil then
  if redis.call('EXISTS', key) == 1 then
    -- A body in no set is dangling; cancelling it is what the caller wants anyway.
    redis.call('DEL', key)
    return done(1, 'scheduled')
  end
  return { -1, '' }
end
if state == 'active' or state == 'dead' then return { 0, state } end
unlink_waiting(id, key, state)
redis.call('DEL', key)
emit('cancelled', id)
return done(1, 'scheduled')
