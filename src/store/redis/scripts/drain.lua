--[[ drain: removes scheduled jobs (due or not), all of them or those due before a time, in
bounded steps.
KEYS: base
ARGV: base, due_before, limit, ready_rank, waiting_rank
Returns: { removed, next_ready_rank, next_waiting_rank, more }; more is 1 when more may be left
`due_before` is epoch ms ('' = every scheduled job, and every held one: docs/flows.md; a drain
with a bound leaves held jobs, which wait for other jobs, not for a time). Each call removes at most `limit` jobs
from the scheduled set, and looks at no more than `limit` members of the ready set from
`ready_rank` (members due later stay; the next call starts after them): call again with the
returned rank while more may be left. The groups' lines (K_WAITING) are drained the same way from
`waiting_rank`, and each group's waiting count goes down by what left its line. Safe to run twice.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _holds.lua
--@include _lifecycle.lua

local limit = arg_int('limit')
local before = nil
if arg('due_before') ~= '' then before = arg_int('due_before') end
local rank = arg_int('ready_rank')
local w_rank = arg_int('waiting_rank')
-- Held jobs first (a later call drains the jobs they wait for), and in one finish with the rest:
-- a held job is not told of a dependency drained with it (it ends too), so nothing is buried on
-- the way.
local held = {}
if before == nil and flow().holds then
  held = redis.call('ZRANGE', hold_key('held'), 0, limit - 1)
  if #held > 0 then call_chunked('ZREM', hold_key('held'), held) end
end
local ids
if before then
  ids = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', '(' .. before, 'LIMIT', 0, limit)
else
  ids = redis.call('ZRANGE', K_SCHEDULED, 0, limit - 1)
end
local more = #ids >= limit or #held >= limit
if #ids > 0 then
  call_chunked('ZREM', K_SCHEDULED, ids)
  SCHED.unindex(ids)
end
-- Members to ids (SCHEDULED_MEMBER: either form).
for i, member in ipairs(ids) do ids[i] = SCHED.id(member) end
for _, id in ipairs(held) do ids[#ids + 1] = id end

-- The ready set orders by priority, not due time: look at a window of it and take what is due
-- before the bound.
local members = redis.call('ZRANGE', K_READY, rank, rank + limit - 1)
local drop, kept = {}, 0
for _, m in ipairs(members) do
  if before == nil or tonumber(string.sub(m, 1, 16)) < before then
    drop[#drop + 1] = m
    ids[#ids + 1] = ready_id(m)
  else
    kept = kept + 1
  end
end
if #drop > 0 then call_chunked('ZREM', K_READY, drop) end
if #members >= limit then more = true end

-- The groups' lines: the same, by the due time inside each member.
local w_kept = 0
if flow().grouped then
  local line = redis.call('ZRANGE', K_WAITING, w_rank, w_rank + limit - 1)
  local w_drop, w_groups = {}, {}
  for _, m in ipairs(line) do
    local g, due, _, id = GL().waiting_parts(m)
    if before == nil or due < before then
      w_drop[#w_drop + 1] = m
      w_groups[#w_groups + 1] = g
      ids[#ids + 1] = id
    else
      w_kept = w_kept + 1
    end
  end
  if #w_drop > 0 then
    call_chunked('ZREM', K_WAITING, w_drop)
    GL().load_groups(w_groups)
    for _, g in ipairs(w_groups) do
      GL().GROUPS[g].w = GL().GROUPS[g].w - 1
      GL().touch_group(g)
    end
    GL().save_groups()
  end
  if #line >= limit then more = true end
end
finish(FINISH.cancelled, ids)
if events_on() then
  for _, id in ipairs(ids) do emit(EVENT.drained, id) end
end
return reply({ removed = #ids, next_ready_rank = rank + kept, next_waiting_rank = w_rank + w_kept, more = more and 1 or 0 })
