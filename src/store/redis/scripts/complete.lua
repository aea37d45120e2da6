--[[ complete: acks finished jobs, each only with its current lease token. Without a retention
rule for completed jobs (meta doneMax / doneMaxAge) they are deleted; with one they move to the
completed set with their result, and the oldest kept ones beyond the rule are deleted.
KEYS: base
ARGV: base, packed
EACH: id, token, result
Returns: { then per item: code } (with packed = 1 the same array as one MessagePack string: PACKED_REPLY)
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

-- The hot loops are written out (numeric loops, fields read by position, counts kept): each
-- runs once per acked job, and a function call or an ipairs step costs as much as the work.
local ids, tokens, results = {}, {}, {}
local count = each_count()
local at, step, e_id, e_token, e_result = EACH_FIRST, EACH_SIZE, E.id, E.token, E.result
for i = 1, count do
  ids[i], tokens[i], results[i] = ARGV[at + e_id], ARGV[at + e_token], ARGV[at + e_result]
  at = at + step
end
local runs = hmget(K_RUNS, ids)
-- The queue's settings in one read (flow(): the event stream's switch and the retention rule
-- with them), before the first event is asked for.
local f = flow()
local events = events_on()
local ok, kept_mark = CODE.ok, MARK.kept
local out, done, done_ids, done_results, n = {}, {}, {}, {}, 0
for i = 1, count do
  local id, run = ids[i], runs[i]
  -- The common case first: the run state holds this token; any other answer is lease_status's.
  local status = 'held'
  if not run or live_token(run) ~= tokens[i] then status = lease_status(id, run, tokens[i], kept_mark) end
  if status == 'held' then
    n = n + 1
    done[n], done_ids[n], done_results[n] = i, id, results[i]
    out[i] = ok
    if events then emit(EVENT.completed, id) end
  elseif status == 'resent' then
    out[i] = ok
  else
    out[i] = status
  end
end
if n > 0 then
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
