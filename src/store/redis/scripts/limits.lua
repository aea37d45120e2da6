--[[ limits: sets the queue's concurrency and rate limits, or one group's limits and pause.
KEYS: base
ARGV: base, group, concurrency, group_concurrency, paused, rate_max, rate_per, group_rate_max, group_rate_per, cursor
Returns: { changed, cursor }; changed is 1 when a setting changed; cursor is where the sweep of the groups goes on ('0' when it is over, '' when none was asked for or started)
`group` is '' for the queue's own limits: `concurrency` (most jobs of the queue active at once)
and `group_concurrency` (most jobs of one group active at once, for groups without a limit of
their own); or a group id: `concurrency` is then that group's own limit and `paused` '1' pauses
the group, '0' resumes it. Each setting is '' (left as it is), '0' (removed: no limit) or a
whole number of at least 1. Rate limits come in pairs, max tokens and window ms, both '' or
both '0' or both set: `rate_max`/`rate_per` the queue's (or, with a group, the group's own),
`group_rate_max`/`group_rate_per` the default of groups without their own (meta rateMax,
ratePer, groupRateMax, groupRatePer; setting one marks the queue `rated`). A group's settings
live in its K_GROUPS field (wire.ts GROUP_STATE), kept while it has a limit or a pause even
with no jobs. A rate limit raised or removed has the groups it holds back looked at by the next
claim (their rate-wake time becomes 0) and wakes workers. A change of a window applies to
tokens taken after it; tokens taken before come back when their own window ends.
A paused group leaves the rotation (its running jobs finish; none is handed out); a group given
room with due jobs waiting joins it. Raising or removing `group_concurrency` may give room to any
number of groups: the call starts a sweep of K_GROUPS that puts the groups it gave room back in
the rotation, LIMIT.groups_per_sweep fields a call; call again with the cursor and nothing else
set until it answers '0' (a group the sweep misses gets its room at its next ack anyway).
Events: PUBLISH <wake> '0' when the change may let a job start now (a limit raised or removed, a
group resumed); 'paused' / 'resumed' to the event stream, with the group's id as `group`.
Safe to run twice: the second run finds the values set and changes nothing.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _rate.lua

-- A setting: nil (leave it), false (remove it) or a whole number of at least 1.
local function setting(name)
  if arg(name) == '' then return nil end
  local n = arg_int(name)
  if n < 0 then error('delayq: argument ' .. name .. ' must not be negative') end
  if n == 0 then return false end
  return n
end

-- A rate limit setting: nil (leave it), false (remove it) or { max, per }.
local function rate_setting(max_name, per_name)
  local max, per = setting(max_name), setting(per_name)
  if max == nil and per == nil then return nil end
  if max == false and per == false then return false end
  if not max or not per then error('delayq: arguments ' .. max_name .. ' and ' .. per_name .. ' must be set, removed or left together') end
  return { max = max, per = per }
end

-- Whether a rate limit change gives room: removed, or more tokens or a shorter window.
local function rate_raised(old, new)
  if not old then return false end
  if not new then return true end
  return new.max > old.max or new.per < old.per
end

local function same_rate(a, b)
  if not a or not b then return not a and not b end
  return a.max == b.max and a.per == b.per
end

local g = arg('group')
local concurrency, group_concurrency = setting('concurrency'), setting('group_concurrency')
local rate, group_rate = rate_setting('rate_max', 'rate_per'), rate_setting('group_rate_max', 'group_rate_per')
local paused = arg('paused')
if paused ~= '' and paused ~= '1' and paused ~= '0' then error("delayq: argument paused must be '', '1' or '0'") end
local cursor = arg('cursor')
if string.find(g, '[%z\1-\31]') then error('delayq: argument group must not hold control characters') end
local changed = 0

if g ~= '' then
  local s = GL().group_state(g)
  local had_room = GL().group_room(s) > 0
  if concurrency ~= nil and s.l ~= concurrency then
    s.l = concurrency
    changed = 1
  end
  local rate_freed = false
  if rate ~= nil and not same_rate(s.rate, rate) then
    rate_freed = rate_raised(GL().group_rate(s), rate or flow().group_rate)
    s.rate = rate
    changed = 1
    if rate then RL().mark_rated() end
  end
  if paused == '1' and not s.p then
    s.p = true
    changed = 1
    emit(EVENT.paused, '', 'group', g)
  elseif paused == '0' and s.p then
    s.p = false
    changed = 1
    emit(EVENT.resumed, '', 'group', g)
  end
  if changed == 1 then
    GL().touch_group(g)
    GL().save_groups()
    if s.p then
      GL().lanes_remove({ g })
    elseif GL().group_eligible(s) then
      GL().lanes_add({ g }, false)
      if not had_room then wake_now() end
    end
    -- Held back by its rate limit: the next claim looks at it again now.
    if rate_freed and flow().rated then
      if redis.call('ZSCORE', K_RATE_WAKE, g) then redis.call('ZADD', K_RATE_WAKE, 0, g) end
      wake_now()
    end
  end
  return reply({ changed = changed, cursor = '' })
end

-- The queue's own limits: nil leaves one, false removes it. Returns whether it changed, and
-- whether it gave room (raised or removed).
local function set_meta_limit(field, value)
  if value == nil then return false, false end
  local current = as_int(redis.call('HGET', K_META, field))
  if (current or false) == value then return false, false end
  if value then redis.call('HSET', K_META, field, int(value)) else redis.call('HDEL', K_META, field) end
  return true, not value or (current ~= nil and value > current)
end

-- A rate limit in meta (`<prefix>Max`, `<prefix>Per`): whether it changed, and whether it gave room.
local function set_meta_rate(prefix, value, current)
  if value == nil or same_rate(current, value) then return false, false end
  if value then
    redis.call('HSET', K_META, prefix .. 'Max', int(value.max), prefix .. 'Per', int(value.per))
    RL().mark_rated()
  else
    redis.call('HDEL', K_META, prefix .. 'Max', prefix .. 'Per')
  end
  return true, rate_raised(current, value)
end

local c_changed, c_raised = set_meta_limit('concurrency', concurrency)
local g_changed, g_raised = set_meta_limit('groupConcurrency', group_concurrency)
local r_changed, r_raised = set_meta_rate('rate', rate, flow().rate)
local gr_changed, gr_raised = set_meta_rate('groupRate', group_rate, flow().group_rate)
if c_changed or g_changed or r_changed or gr_changed then changed = 1 end
-- Groups held back by a rate limit raised or removed are looked at by the next claim.
if gr_raised then redis.call('ZUNIONSTORE', K_RATE_WAKE, 1, K_RATE_WAKE, 'WEIGHTS', 0) end
if r_raised or gr_raised then wake_now() end
flow().limit = (concurrency == nil and flow().limit) or concurrency or nil
flow().group_limit = (group_concurrency == nil and flow().group_limit) or group_concurrency or nil
if c_raised then wake_now() end
if g_raised and flow().grouped and cursor == '' then cursor = '0' end
if cursor == '' then return reply({ changed = changed, cursor = '' }) end

-- One step of the sweep: groups given room with due jobs waiting join the rotation.
local step = redis.call('HSCAN', K_GROUPS, cursor, 'COUNT', LIMIT.groups_per_sweep)
local fields = step[2]
local joining = {}
for i = 1, #fields, 2 do
  -- HT_FIELD keeps the hash a hashtable (hset_pairs): no group.
  if fields[i] ~= HT_FIELD then
    local s = GL().parse_group(fields[i + 1])
    GL().GROUPS[fields[i]] = s
    if GL().group_eligible(s) then joining[#joining + 1] = fields[i] end
  end
end
-- In byte order (HSCAN's order is the hash's own), as the memory store's sweep.
table.sort(joining, lex_lt)
GL().lanes_add(joining, false)
if #joining > 0 then wake_now() end
return reply({ changed = changed, cursor = step[1] })
