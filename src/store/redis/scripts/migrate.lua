--[[ migrate: converts a queue an older version made to this version's stored forms, a bounded
step a call; today that is its scheduled members (wire.ts SCHEDULED_MEMBER): the id form becomes
the form that keeps add order, so claims on a queue without priorities need no ready set.
KEYS: base
ARGV: base, count
Returns: { converted, done }; converted is how many scheduled members this call wrote in the form that keeps add order (SCHEDULED_MEMBER); done is 1 once every member has it (meta ordered = '2')
The first call sets meta `ordered` = '1': from then on every script writes new members in the
new form, and this one walks the set with ZSCAN (its cursor kept in meta `orderScan`), `count`
members a call, converting those of the id form (a member whose body is gone or unreadable is
left as it is: a claim drops or buries it as before). A ZSCAN that comes back to cursor 0 has
seen every member that was there when the walk began, so the set is then whole: `ordered` = '2'
and claims hand out in the set's order. A queue made by this version starts at '2' (add.lua).
Run it only once no worker or producer of an older version uses the queue: an older claim takes
a member of the new form for an id without a body and drops it (docs/operations.md, Upgrades).
Safe to re-send: a member already converted is skipped, and a call after the end answers done.
]]
--@include _helpers.lua

local count = arg_int('count')
-- A queue never made (no seq number taken) has nothing to convert, and gets no meta.
if redis.call('EXISTS', K_SEQ) == 0 then return reply({ converted = 0, done = 1 }) end
local meta = redis.call('HMGET', K_META, 'ordered', 'orderScan')
if meta[1] == '2' then return reply({ converted = 0, done = 1 }) end
if meta[1] ~= '1' then redis.call('HSET', K_META, 'ordered', '1') end

local scan = redis.call('ZSCAN', K_SCHEDULED, meta[2] or '0', 'COUNT', count)
local flat = scan[2]
local ids, scores = {}, {}
for i = 1, #flat, 2 do
  if string.byte(flat[i], 1) ~= 1 then
    ids[#ids + 1] = flat[i]
    scores[#scores + 1] = flat[i + 1]
  end
end
local adds, olds = {}, {}
for k, body in ipairs(hmget(K_JOBS, ids)) do
  local member = SCHED.member_of(ids[k], body)
  if member then
    adds[#adds + 1] = scores[k]
    adds[#adds + 1] = member
    olds[#olds + 1] = ids[k]
  end
end
if #olds > 0 then
  call_chunked('ZREM', K_SCHEDULED, olds)
  call_chunked('ZADD', K_SCHEDULED, adds)
end
if scan[1] == '0' then
  redis.call('HSET', K_META, 'ordered', '2')
  redis.call('HDEL', K_META, 'orderScan')
  return reply({ converted = #olds, done = 1 })
end
redis.call('HSET', K_META, 'orderScan', scan[1])
return reply({ converted = #olds, done = 0 })
