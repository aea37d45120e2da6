--[[ migrate: converts a queue an older version made to this version's stored forms, a bounded
step a call; today that is its scheduled members (wire.ts SCHEDULED_MEMBER): the id form becomes
the form that keeps add order, so claims on a queue without priorities need no ready set.
KEYS: base
ARGV: base, count
Returns: { converted, done }; converted is how many scheduled members this call wrote in the form that keeps add order (SCHEDULED_MEMBER), plus 1 when it took the mark `prioritized` off (below: an entry rewritten, so that an operator is not told there was nothing to do); done is 1 once every member has it (meta ordered = '2') and, on a queue marked prioritized, the check for a job with a priority (below) has ended
The first call sets meta `ordered` = '1': from then on every script writes new members in the
new form, and this one walks the queue's jobs with HSCAN (its cursor kept in meta `orderScan`),
`count` bodies a call: a job of the scheduled set with a member of the id form gets the new one,
and a job with a priority other than 0, wherever it is (one in `active` or `dead` may come back),
marks the queue `prioritized`, so its claims keep the ready set. A member whose body is gone is
left as it is (a claim drops it as before). An HSCAN that comes back to cursor 0 has seen every
job that was there when the walk began (one added since was written in the new form), so the
set is then whole: `ordered` = '2', and claims hand out in the set's order. A queue made by this
version starts at '2' (add.lua); one never made (no seq number taken) gets nothing written.
Run it only once no worker or producer of an older version uses the queue: an older claim takes
a member of the new form for an id without a body and drops it (docs/operations.md, Upgrades).
Once every member has the new form (the walk that converts them then ends with done 0), a queue
marked `prioritized` without a count (meta `ranked`: SCHED.rank keeps it, and takes a counted
mark off when its last job with a priority ends) is checked for a job with a priority left, so
that one whose every such job has ended gets the one-pass claim back: the first call
sets the mark to '2' (still marked for every claim) and each call looks at `count` bodies of the
same walk (`orderScan`); a body with a priority other than 0 sets it back to '1' and ends the
check, and so does an add of such a job meanwhile (adds write '1' over '2'), seen by the next
call, which starts the walk again. A walk that comes back
to cursor 0 with the mark still '2' has seen every job that was there throughout, and none added
since had a priority: the mark goes, and the count starts at 0. A version before the count marked
without one; so does this walk when the conversion finds a job with a priority (an older version
may have added it uncounted).
Safe to re-send: a member already converted is skipped, and a call after the end answers done
(a re-sent step of the check looks at the next bodies, or starts the walk again).
]]
--@include _helpers.lua

local count = arg_int('count')

-- One step of a walk of the jobs hash from `cursor`: the next cursor, and the ids and bodies found
-- (HT_FIELD is no job: hset_pairs).
local function scan_jobs(cursor)
  local scan = redis.call('HSCAN', K_JOBS, cursor, 'COUNT', count)
  local flat = scan[2]
  local ids, bodies = {}, {}
  for i = 1, #flat, 2 do
    if flat[i] ~= HT_FIELD then
      ids[#ids + 1] = flat[i]
      bodies[#bodies + 1] = flat[i + 1]
    end
  end
  return scan[1], ids, bodies
end

if redis.call('EXISTS', K_SEQ) == 0 then return reply({ converted = 0, done = 1 }) end
local meta = redis.call('HMGET', K_META, 'ordered', 'orderScan', 'prioritized', 'ranked', 'rankedSet')
-- A mark with its count (SCHED.rank) comes off by itself when its last job with a priority ends:
-- nothing to check. SCHED reads the count as every script does.
SCHED.prime(meta[1], meta[3], meta[4], meta[5])
local counted = SCHED.order().marked and SCHED.order().ranked ~= nil
if meta[1] == '2' then
  -- The check of a prioritized queue (above). '1' starts a walk: the first call, or an add of a
  -- job with a priority since the last step (its body may be behind the cursor).
  if counted or (meta[3] ~= '1' and meta[3] ~= '2') then return reply({ converted = 0, done = 1 }) end
  local cursor = meta[2] or '0'
  if meta[3] == '1' then
    redis.call('HSET', K_META, 'prioritized', '2')
    cursor = '0'
  end
  local next_cursor, _, bodies = scan_jobs(cursor)
  for _, body in ipairs(bodies) do
    local _, priority = body_order(body)
    -- A body that does not read is no job with a priority; a claim buries it.
    if priority and priority ~= 0 then
      redis.call('HSET', K_META, 'prioritized', '1')
      redis.call('HDEL', K_META, 'orderScan')
      return reply({ converted = 0, done = 1 })
    end
  end
  if next_cursor == '0' then
    -- No job with a priority is left: the count starts at 0 (no mark, no count).
    redis.call('HDEL', K_META, 'prioritized', 'orderScan', 'ranked', 'rankedSet')
    return reply({ converted = 1, done = 1 })
  end
  redis.call('HSET', K_META, 'orderScan', next_cursor)
  return reply({ converted = 0, done = 0 })
end
if meta[1] ~= '1' then redis.call('HSET', K_META, 'ordered', '1') end
-- An uncounted mark (a counted one may not count a job an older version added: a body with a
-- priority found here leaves the mark uncounted, for the check after the conversion).
local prioritized = meta[3] == '1' and not counted

local next_cursor, ids, bodies = scan_jobs(meta[2] or '0')
local adds, olds = {}, {}
for k, id in ipairs(ids) do
  local _, priority = body_order(bodies[k])
  if priority and priority ~= 0 and not prioritized then
    redis.call('HSET', K_META, 'prioritized', '1')
    redis.call('HDEL', K_META, 'ranked', 'rankedSet')
    prioritized = true
  end
  local score = redis.call('ZSCORE', K_SCHEDULED, id)
  local member = score and SCHED.member_of(id, bodies[k])
  if member then
    adds[#adds + 1] = score
    adds[#adds + 1] = member
    olds[#olds + 1] = id
  end
end
if #olds > 0 then
  call_chunked('ZREM', K_SCHEDULED, olds)
  call_chunked('ZADD', K_SCHEDULED, adds)
end
if next_cursor == '0' then
  redis.call('HSET', K_META, 'ordered', '2')
  redis.call('HDEL', K_META, 'orderScan')
  -- A marked queue goes on to the check for a job with a priority (above) in the same migrate.
  return reply({ converted = #olds, done = prioritized and 0 or 1 })
end
redis.call('HSET', K_META, 'orderScan', next_cursor)
return reply({ converted = #olds, done = 0 })
