--[[ get: reads jobs and the state each is in.
KEYS: base
ARGV: base, logs
EACH: id
Returns: { now_ms, then per item: id, state, score, body, run, due_ms, result, progress, logs, errors, group }; per job wire.ts JOB_ROW
The internal state is 'scheduled', 'ready', 'active', 'dead', 'completed', 'held', or '' when the job is
in no set (its row then has an empty body and run state when there is no such job at all). The
due time is the scheduled score, a held job's the one its hold keeps, else the run's. Log lines and the error history only when
`logs` is '1' (get; searches leave them out). Never fails on stored data: body, run state, logs
and error history are passed on as stored, for the caller to read what it can.
]]
--@include _helpers.lua
--@include _groups.lua

local want_logs = arg('logs') == '1'
local out = reply({ now_ms = now_ms() })
for i = 1, each_count() do
  local id = each_arg(i, 'id')
  local state, body, run = job_state(id)
  local score, due = -1, -1
  if state == PLACE.active then score = tonumber(redis.call('ZSCORE', K_ACTIVE, id)) end
  if state == PLACE.dead then score = tonumber(redis.call('ZSCORE', K_DEAD, id)) end
  if state == PLACE.completed then score = tonumber(redis.call('ZSCORE', K_COMPLETED, id)) end
  due = current_due(id, run, body) or -1
  local logs, errors = false, false
  if want_logs then
    logs = redis.call('HGET', K_LOGS, id)
    errors = redis.call('HGET', K_ERRORS, id)
  end
  local group = false
  if flow().grouped then group = redis.call('HGET', K_GROUP_OF, id) end
  job_row(out, id, state, score, body, run, due, redis.call('HGET', K_RESULTS, id), redis.call('HGET', K_PROGRESS, id), logs, errors, group)
end
return out
