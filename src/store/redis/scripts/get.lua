--[[ get: reads one job and the state it is in.
KEYS: base
ARGV: base, id
Returns: { } when no such job; else { internal state or empty, lease deadline ms or -1, now ms, body or empty, RUN_STATE or empty, due ms or -1 }
The internal state is 'scheduled', 'ready', 'active', 'dead', or '' when the job is in no set.
The due time is the scheduled score, else the run's. Never fails on stored data: body and run
state are passed on as stored, for the caller to read what it can.
]]
--@include _helpers.lua

local id = arg('id')
local state, body, run = job_state(id)
if not body and not run then return {} end
local deadline, due = -1, -1
if state == 'active' then deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, id)) end
if state == 'scheduled' then
  due = tonumber(redis.call('ZSCORE', K_SCHEDULED, id))
else
  local r = parse_run(run)
  due = (r and r.t) or -1
end
return { state or '', int(deadline), now_ms(), body or '', run or '', int(due) }
