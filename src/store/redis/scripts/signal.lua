--[[ signal: sends a signal to a job (docs/flows.md): a job waiting for one of `name`
(wait-signal.lua) is scheduled now and its next run sees the data; any other job that has not
ended keeps it until it waits for that name.
KEYS: base, memo
ARGV: base, id, name, data, request_id, memo_ms
Returns: { code, state }; state is the job's state before the call ('' when not found); refused: the job has ended (dead or completed), or its kept signals would pass SIGNALS_KEPT_BYTES
Codes: released (it was waiting for this signal: due now), kept (it was not: the signal waits
for it; a second one of the same name takes the first's place), refused, not_found. A wait's
timeout and a signal in the same millisecond give one run: each ends the wait only while it is
still waiting. `data` ('' for none) is JSON text of at most LIMIT.signal_data_bytes. Safe to
re-send: with a request id the first answer is remembered for memo_ms ('<code>:<state>'), so a
signal sent twice after a lost reply releases once and is not kept for a later wait.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua

local id, name, data = arg('id'), arg('name'), arg('data')
if #data > LIMIT.signal_data_bytes then refuse('data', nil, 'must be at most ' .. LIMIT.signal_data_bytes .. ' bytes', #data .. ' bytes') end
local memo_key, memo_ms = '', 0
if arg('request_id') ~= '' then memo_key, memo_ms = K_MEMO, arg_int('memo_ms') end
local memo = memo_get(memo_key)
if memo then
  local code, state = string.match(memo, '^(%-?%d+):(.*)$')
  return reply({ code = tonumber(code), state = state })
end

local function answer(code, state)
  memo_set(memo_key, code .. ':' .. state, memo_ms)
  return reply({ code = code, state = state })
end

local state = job_state(id)
local public = public_state(state) or ''
if state == nil then return reply({ code = CODE.not_found, state = '' }) end
if state == PLACE.dead or state == PLACE.completed then return answer(CODE.refused, public) end
if state == PLACE.held then
  local h = HOLDS.parse(redis.call('HGET', hold_key('holds'), id))
  if h and h.phase == 'h' and h.signal == name then
    local now = now_ms()
    h.phase = 'r'
    redis.call('HSET', hold_key('holds'), id, HOLDS.encode(h))
    redis.call('HSET', hold_key('delivered'), id, name .. '\t0\t' .. data)
    redis.call('ZREM', hold_key('held'), id)
    schedule_many({ now, id })
    return answer(CODE.released, public)
  end
end
local kept = HOLDS.kept_signals(id)
kept[name] = data
if not HOLDS.keep_signals(id, kept) then return answer(CODE.refused, public) end
return answer(CODE.kept, public)
