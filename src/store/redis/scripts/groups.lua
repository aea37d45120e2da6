--[[ groups: reads groups' states and the queue's concurrency limits.
KEYS: base
ARGV: base, cursor, count
EACH: id
Returns: { cursor, concurrency, group_concurrency, then per item: id, state }; cursor is '0' when a listing is over, '' when none was asked for; limits are -1 when not set; per group its GROUP_STATE, '' when it has none (nothing running or waiting, no limit of its own, no pause)
With ids: those groups' states. Without: one page of a walk over every group that has a state,
from `cursor` ('0' to start), or with cursor '' only the limits. While the groups hash holds at
most SMALL fields, a page is exactly `count` groups in byte order of their ids after the cursor
`k<id>`; a larger hash is walked by HSCAN (cursor `s<n>`, about `count` a step: HSCAN's COUNT is a
hint). A `k` cursor that meets a hash grown past SMALL starts the HSCAN walk from its beginning,
so a group there from start to end is listed at least once. Read only.
]]
--@include _helpers.lua

local count = arg_int('count')
local meta = redis.call('HMGET', K_META, 'concurrency', 'groupConcurrency')
local out = reply({ cursor = '', concurrency = as_int(meta[1]) or -1, group_concurrency = as_int(meta[2]) or -1 })
local function row(id, state)
  local n = #out
  out[n + RE.id] = id
  out[n + RE.state] = state or ''
end
if each_count() > 0 then
  local ids = {}
  for i = 1, each_count() do ids[i] = each_arg(i, 'id') end
  local states = hmget(K_GROUPS, ids)
  for i, id in ipairs(ids) do row(id, states[i]) end
  return out
end
local cursor = arg('cursor')
if cursor == '' then return out end
if count < 1 or count > 1000 then error('delayq: groups count must be 1..1000') end
local after, scan = nil, nil
if cursor == '0' then
  after = ''
elseif string.sub(cursor, 1, 1) == 'k' then
  after = string.sub(cursor, 2)
elseif string.find(cursor, '^s%d+$') then
  scan = string.sub(cursor, 2)
else
  error('delayq: not a groups cursor')
end
-- Small: every field, sorted by id (byte order, as lex_lt compares), the page after the cursor.
local SMALL = 1000
if not scan and redis.call('HLEN', K_GROUPS) <= SMALL then
  local flat = redis.call('HGETALL', K_GROUPS)
  local ids, states = {}, {}
  for i = 1, #flat, 2 do
    if after == '' or lex_lt(after, flat[i]) then
      ids[#ids + 1] = flat[i]
      states[flat[i]] = flat[i + 1]
    end
  end
  table.sort(ids, lex_lt)
  for i = 1, math.min(count, #ids) do row(ids[i], states[ids[i]]) end
  if #ids > count then out[R.cursor] = 'k' .. ids[count] else out[R.cursor] = '0' end
  return out
end
local step = redis.call('HSCAN', K_GROUPS, scan or '0', 'COUNT', count)
if step[1] == '0' then out[R.cursor] = '0' else out[R.cursor] = 's' .. step[1] end
for i = 1, #step[2], 2 do row(step[2][i], step[2][i + 1]) end
return out
