--[[ update: a running job's progress and log lines, fenced by its lease token.
KEYS: base
ARGV: base, id, token, progress, log_cap
EACH: line
Returns: code
`progress` is JSON text, or '' to leave it as it is; each item is one log line (the caller
bounds their size). The log keeps the last `log_cap` lines as a JSON array. Both stay with the
job while it exists (and while retention keeps it) and go with it.
Codes: ok, lease_lost (the token is not the job's: a stale holder writes nothing), not_found.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local id, token, progress = arg('id'), arg('token'), arg('progress')
local cap = arg_int('log_cap')
local run = redis.call('HGET', K_RUNS, id)
local status = lease_status(id, run, token, nil)
if status ~= 'held' then return status end
if progress ~= '' then redis.call('HSET', K_PROGRESS, id, progress) end
local n = each_count()
if n > 0 and cap > 0 then
  local lines = {}
  local stored = redis.call('HGET', K_LOGS, id)
  if stored then
    local ok, decoded = pcall(cjson.decode, stored)
    -- A corrupt log is started afresh rather than failing the job's call.
    if ok and type(decoded) == 'table' then lines = decoded end
  end
  for i = 1, n do lines[#lines + 1] = each_arg(i, 'line') end
  if #lines > cap then
    local kept = {}
    for i = #lines - cap + 1, #lines do kept[#kept + 1] = lines[i] end
    lines = kept
  end
  redis.call('HSET', K_LOGS, id, cjson.encode(lines))
end
return CODE.ok
