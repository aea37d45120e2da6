--[[ obliterate: removes everything of a queue: its jobs in every state, settings, event stream,
schedules and worker entries. Refuses while jobs are active unless `force` is '1'.
KEYS: base, workers, worker_info, schedules, schedule_last
ARGV: base, force, epoch
Returns: { code, scheduled, active, dead, completed, bodies }; the counts before
Codes: done, refused (jobs are active and force was not given; nothing removed), not_found
(the keys belong to another epoch of the queue; nothing removed).
`epoch` ('' for none) is the layout epoch the caller obliterates (see sharded queues in
docs/data-model.md): keys whose meta holds another epoch are left alone, so a late run (a
re-send after a lost reply) never removes a queue made again since. A shard with no epoch (a
leftover) is removed.
UNLINK, not DEL: the keys go at once and their memory is freed off the main thread, so a queue
of millions never blocks Redis. Dedup keys and request memos are left to expire by themselves,
and so is the sequence counter's floor (see below).
Events: PUBLISH <wake> 's'. Safe to run twice (the second finds nothing).
]]
--@include _helpers.lua

local counts = {
  scheduled = redis.call('ZCARD', K_SCHEDULED) + redis.call('ZCARD', K_READY) + redis.call('ZCARD', K_WAITING) + redis.call('ZCARD', hold_key('held')),
  active = redis.call('ZCARD', K_ACTIVE),
  dead = redis.call('ZCARD', K_DEAD),
  completed = redis.call('ZCARD', K_COMPLETED),
  -- HT_FIELD is no job (hset_pairs).
  bodies = redis.call('HLEN', K_JOBS) - redis.call('HEXISTS', K_JOBS, HT_FIELD),
}
-- The reply: the code, then the counts before.
local function answer(code)
  counts.code = code
  return reply(counts)
end
if arg('epoch') ~= '' then
  local held = redis.call('HGET', K_META, 'epoch')
  if held and held ~= arg('epoch') then return answer(CODE.not_found) end
end
if counts.active > 0 and arg('force') ~= '1' then
  return answer(CODE.refused)
end
-- The sequence counter stays as a floor: the next multiple of SEQ_LIFE, expiring after
-- SEQ_FLOOR_TTL_MS (longer than any stale holder's late call). A later life of the queue goes
-- on from it (take_seq), so a token a stale holder still has is never handed out again, even by
-- a claim in the same millisecond. A second run finds a floor and leaves it so.
local seq = as_int(redis.call('GET', K_SEQ)) or 0
seq = math.ceil(seq / SEQ_LIFE) * SEQ_LIFE
redis.call('UNLINK', K_SCHEDULED, K_READY, K_ACTIVE, K_DEAD, K_SEQ, K_JOBS, K_RUNS, K_META, K_EVENTS, K_COMPLETED, K_RESULTS, K_PROGRESS,
  K_LOGS, K_ERRORS, K_GROUP_OF, K_GROUPS, K_LANES, K_WAITING, K_FLOW_OF, K_DEBOUNCE, K_RATE, K_RATE_LOG, K_RATE_WAKE, K_REVOKED, K_WAITERS, K_WORKERS, K_WORKER_INFO, K_SCHEDULES, K_SCHEDULE_LAST, K_WAITING_DUE, K_HISTORY, K_RANKED,
  hold_key('held'), hold_key('holds'), hold_key('deps'), hold_key('dependents'), hold_key('results'),
  hold_key('signals'), hold_key('delivered'))
if seq > 0 then redis.call('SET', K_SEQ, int(seq), 'PX', SEQ_FLOOR_TTL_MS) end
-- Sleeping workers look again (and find nothing); schedulers reload their (now empty) schedules.
redis.call('PUBLISH', WAKE_CHANNEL, 's')
return answer(CODE.done)
