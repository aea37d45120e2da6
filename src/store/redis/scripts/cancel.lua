--[[ cancel: removes a scheduled job (due or not). Active and dead jobs are left alone.
KEYS: base, memo
ARGV: base, id, request_id, memo_ms
Returns: { CODE, state }
Codes: done (cancelled), refused (state says why: active or dead), not_found.
Safe to re-send: with a request id the answer is remembered for memo_ms ('<code>:<state>'), so
a re-sent cancel answers "cancelled" again instead of "no such job".
]]
--@include _helpers.lua

local id = arg('id')
local memo_key, memo_ms = '', 0
if arg('request_id') ~= '' then memo_key, memo_ms = K_MEMO, arg_int('memo_ms') end
local memo = memo_get(memo_key)
if memo then
  local code, state = string.match(memo, '^(%-?%d+):(.*)$')
  return { tonumber(code), state }
end

local function done(code, state)
  memo_set(memo_key, code .. ':' .. state, memo_ms)
  return { code, state }
end

local state, body, run = job_state(id)
if state == nil then
  if body or run then
    -- A body in no set is dangling; cancelling it is what the caller wants anyway.
    forget({ id })
    return done(CODE.done, 'scheduled')
  end
  return { CODE.not_found, '' }
end
if state == 'active' or state == 'dead' then return { CODE.refused, state } end
unlink_waiting(id, state, body, run)
forget({ id })
emit('cancelled', id)
return done(CODE.done, 'scheduled')
