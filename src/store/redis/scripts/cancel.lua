--[[ cancel: removes scheduled jobs (due or not), and with `running` = '1' running ones too.
Dead and completed jobs are left alone.
KEYS: base, memo
ARGV: base, request_id, memo_ms, running, reason
EACH: id
Returns: { then per item: code, state }
Codes: done (cancelled; state 'scheduled', or 'active' for a job cancelled as it ran), refused
(state says why: active without `running`, dead or completed), not_found. A running job's lease
ends at once (_lifecycle.lua revoke): its group's slot is free, its holder hears on the wake
channel and every later call of its holder answers lease lost. `reason` ('' for none) goes into
the cancelled event and to anyone waiting for the job. Safe to re-send: with a request id the answers are remembered for memo_ms (one
'<code>:<state>' line per job), so a re-sent cancel answers "cancelled" again instead of "no
such job". A few calls per job (its state is looked up one by one; the caller sends at most a
thousand). On a queue with holds each job's end is written before the next id is looked at.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local memo_key, memo_ms = '', 0
if arg('request_id') ~= '' then memo_key, memo_ms = K_MEMO, arg_int('memo_ms') end
local memo = memo_get(memo_key)
local out = {}
if memo then
  for code, state in string.gmatch(memo, '(%-?%d+):([^\n]*)\n') do
    local n = #out
    out[n + RE.code] = tonumber(code)
    out[n + RE.state] = state
  end
  return out
end

local running, reason = arg('running') == '1', arg('reason')
local lines, gone, reasons, seen = {}, {}, {}, {}
-- On a queue with holds each job ends before the next id is looked at, as if each were cancelled
-- on its own: an end can bury or cancel a job named later (docs/flows.md), which then answers
-- as it is by then. Without holds the ends are written together, at the end of the call.
local one_by_one = flow().holds
local function ended(id)
  if one_by_one then
    finish(FINISH.cancelled, { id }, nil, nil, { reason })
  else
    gone[#gone + 1] = id
  end
end
local any = false
local now = nil
for i = 1, each_count() do
  local id = each_arg(i, 'id')
  local state, body, run = job_state(id)
  local code, public = CODE.done, PLACE.scheduled
  -- An id named twice: the first cancelled it (its body goes at the end of the call).
  if seen[id] then
    code, public = CODE.not_found, ''
  elseif state == nil then
    -- A body in no set is dangling; cancelling it is what the caller wants anyway.
    if body or run then ended(id) else code, public = CODE.not_found, '' end
  elseif state == PLACE.active and running then
    now = now or now_ms()
    revoke(id, run, 'cancelled', now)
    public = PLACE.active
    emit(EVENT.cancelled, id, 'running', '1', 'reason', reason)
    ended(id)
  elseif state == PLACE.active or state == PLACE.dead or state == PLACE.completed then
    code, public = CODE.refused, state
  else
    unlink_waiting(id, state, body, run)
    if reason ~= '' then emit(EVENT.cancelled, id, 'reason', reason) else emit(EVENT.cancelled, id) end
    ended(id)
  end
  if code == CODE.done then
    any = true
    seen[id] = true
  end
  local n = #out
  out[n + RE.code] = code
  out[n + RE.state] = public
  lines[#lines + 1] = code .. ':' .. public .. '\n'
end
for i = 1, #gone do reasons[i] = reason end
finish(FINISH.cancelled, gone, nil, nil, reasons)
if any then memo_set(memo_key, table.concat(lines), memo_ms) end
return out
