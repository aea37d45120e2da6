--[[ limits: sets the queue's concurrency limits, or one group's limit and pause.
KEYS: base
ARGV: base, group, concurrency, group_concurrency, paused, cursor
Returns: { changed, cursor }; changed is 1 when a setting changed; cursor is where the sweep of the groups goes on ('0' when it is over, '' when none was asked for or started)
`group` is '' for the queue's own limits: `concurrency` (most jobs of the queue active at once)
and `group_concurrency` (most jobs of one group active at once, for groups without a limit of
their own); or a group id: `concurrency` is then that group's own limit and `paused` '1' pauses
the group, '0' resumes it. Each setting is '' (left as it is), '0' (removed: no limit) or a
whole number of at least 1. A group's settings live in its K_GROUPS field (wire.ts
GROUP_STATE), kept while it has a limit or a pause even with no jobs.
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

-- A setting: nil (leave it), false (remove it) or a whole number of at least 1.
local function setting(name)
  if arg(name) == '' then return nil end
  local n = arg_int(name)
  if n < 0 then error('delayq: argument ' .. name .. ' must not be negative') end
  if n == 0 then return false end
  return n
end

local g = arg('group')
local concurrency, group_concurrency = setting('concurrency'), setting('group_concurrency')
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

local c_changed, c_raised = set_meta_limit('concurrency', concurrency)
local g_changed, g_raised = set_meta_limit('groupConcurrency', group_concurrency)
if c_changed or g_changed then changed = 1 end
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
  local s = GL().parse_group(fields[i + 1])
  GL().GROUPS[fields[i]] = s
  if GL().group_eligible(s) then joining[#joining + 1] = fields[i] end
end
-- In byte order (HSCAN's order is the hash's own), as the memory store's sweep.
table.sort(joining, lex_lt)
GL().lanes_add(joining, false)
if #joining > 0 then wake_now() end
return reply({ changed = changed, cursor = step[1] })
