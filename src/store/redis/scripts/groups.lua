--[[ groups: reads groups' states, the queue's limits and its rate limiter.
KEYS: base
ARGV: base, cursor, count
EACH: id
Returns: { now_ms, cursor, concurrency, group_concurrency, rate_max, rate_per, group_rate_max, group_rate_per, rate, next_refill_ms, groups_held, then per item: id, state, rate, next_refill_ms }; cursor is '0' when a listing is over, '' when none was asked for; limits are -1 when not set; rate and next_refill_ms are the queue's RATE_STATE ('' when none) and when its oldest token taken comes back (-1: none taken); groups_held counts the groups waiting in rate-wake (for a refill, a hold's end, or tokens to give back); per group its GROUP_STATE and RATE_STATE, each '' when it has none, and when its oldest token comes back
A RATE_STATE here counts only the tokens still in their window (those a claim has not given
back yet are left out), and a hold that has ended reads as none.
With ids: those groups' states. Without: one page of a walk over every group that has a state,
from `cursor` ('0' to start), or with cursor '' only the limits. While the groups hash holds at
most SMALL fields, a page is exactly `count` groups in byte order of their ids after the cursor
`k<id>`; a larger hash is walked by HSCAN (cursor `s<n>`, about `count` a step: HSCAN's COUNT is a
hint). A `k` cursor that meets a hash grown past SMALL starts the HSCAN walk from its beginning,
so a group there from start to end is listed at least once. Read only.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _rate.lua

local count = arg_int('count')
local now = now_ms()
local f = flow()

-- A limiter's RATE_STATE as it stands now, and its next refill (-1: none).
local function rate_now(id)
  local used, held, refill = RL().peek(id, now)
  if used <= 0 and not held then return '', -1 end
  return int(used) .. ':' .. (held and int(held) or ''), refill or -1
end

local q_rate, q_refill = rate_now(UNGROUPED)
local out = reply({
  now_ms = now,
  cursor = '',
  concurrency = f.limit or -1,
  group_concurrency = f.group_limit or -1,
  rate_max = f.rate and f.rate.max or -1,
  rate_per = f.rate and f.rate.per or -1,
  group_rate_max = f.group_rate and f.group_rate.max or -1,
  group_rate_per = f.group_rate and f.group_rate.per or -1,
  rate = q_rate,
  next_refill_ms = q_refill,
  groups_held = redis.call('ZCARD', K_RATE_WAKE),
})
local function row(id, state)
  local n = #out
  out[n + RE.id] = id
  out[n + RE.state] = state or ''
  out[n + RE.rate], out[n + RE.next_refill_ms] = rate_now(id)
end
if each_count() > 0 then
  local ids = {}
  for i = 1, each_count() do ids[i] = each_arg(i, 'id') end
  local states = hmget(K_GROUPS, ids)
  RL().load(ids)
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
    -- HT_FIELD keeps the hash a hashtable (hset_pairs): no group.
    if flat[i] ~= HT_FIELD and (after == '' or lex_lt(after, flat[i])) then
      ids[#ids + 1] = flat[i]
      states[flat[i]] = flat[i + 1]
    end
  end
  table.sort(ids, lex_lt)
  local page = {}
  for i = 1, math.min(count, #ids) do page[i] = ids[i] end
  RL().load(page)
  for _, id in ipairs(page) do row(id, states[id]) end
  if #ids > count then out[R.cursor] = 'k' .. ids[count] else out[R.cursor] = '0' end
  return out
end
local step = redis.call('HSCAN', K_GROUPS, scan or '0', 'COUNT', count)
if step[1] == '0' then out[R.cursor] = '0' else out[R.cursor] = 's' .. step[1] end
local page, states = {}, {}
for i = 1, #step[2], 2 do
  if step[2][i] ~= HT_FIELD then
    page[#page + 1] = step[2][i]
    states[#page] = step[2][i + 1]
  end
end
RL().load(page)
for i, id in ipairs(page) do row(id, states[i]) end
return out
