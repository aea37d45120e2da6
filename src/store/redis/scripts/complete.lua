--[[ complete: acks finished jobs, each only with its current lease token. Without a retention
rule for completed jobs (meta doneMax / doneMaxAge) they are deleted; with one they move to the
completed set with their result, and the oldest kept ones beyond the rule are deleted.
KEYS: base
ARGV: base
EACH: id, token, result
Returns: { then per item: code }
`result` is the handler's result as JSON text ('' for none), kept only with the job.
Codes: ok (done; also a re-sent ack of a job kept as completed), lease_lost (the token is not
the job's), not_found (already completed and not kept: a re-sent ack lands here, and so does an
ack after a person purged it).
A fixed number of calls per batch: one HMGET of run states, then one ZREM and the deletes, or
with retention one ZADD and two HSETs and a bounded trim.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local ids, tokens, results = {}, {}, {}
for i = 1, each_count() do
  ids[i], tokens[i], results[i] = each_arg(i, 'id'), each_arg(i, 'token'), each_arg(i, 'result')
end
local runs = hmget(K_RUNS, ids)
-- The queue's settings in one read (flow(): the event stream's switch and the retention rule
-- with them), before the first event is asked for.
local f = flow()
local out, done = {}, {}
for i, id in ipairs(ids) do
  local status = lease_status(id, runs[i], tokens[i], MARK.kept)
  if status == 'held' then
    done[#done + 1] = i
    out[i] = CODE.ok
    if events_on() then emit(EVENT.completed, id) end
  elseif status == 'resent' then
    out[i] = CODE.ok
  else
    out[i] = status
  end
end
if #done > 0 then
  local done_ids, done_results = {}, {}
  for n, i in ipairs(done) do done_ids[n], done_results[n] = ids[i], results[i] end
  leave_active(done_ids)
  if f.keeps_completed then
    local run_writes, result_writes = {}, {}
    for _, i in ipairs(done) do
      local r = parse_run(runs[i])
      run_writes[#run_writes + 1] = ids[i]
      -- Completed and kept: a re-sent ack finds the mark and answers ok.
      run_writes[#run_writes + 1] = encode_run(r and r.a or 0, r and r.t, MARK.kept .. tokens[i], r and r.e, r and r.s, r and r.w)
      if results[i] ~= '' then
        result_writes[#result_writes + 1] = ids[i]
        result_writes[#result_writes + 1] = results[i]
      end
    end
    finish(FINISH.completed, done_ids, now_ms(), { runs = run_writes, results = result_writes }, done_results)
  else
    finish(FINISH.completed, done_ids, nil, nil, done_results)
  end
end
return out
