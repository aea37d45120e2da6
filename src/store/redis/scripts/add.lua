--[[ add: writes new jobs, or replaces existing ones on request, and schedules them.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq); 5+i: the key of job i
ARGV: 1 job key prefix, 2 wake channel, 3 job count N, 4 schedule name or '', 5 occurrence ms
      or '' (a recurring schedule's guard: the add happens only if this occurrence is later
      than the schedule's last one, which it then becomes), then 11 per job:
      id, data, delayMs or '', runAtMs or '', priority, maxAttempts or '', backoff or '',
      replace ('1' or '0'), dedup key or '', dedup window ms or '', trace context or ''
Returns: { -1 } when the schedule guard refused (the occurrence was enqueued already); else 4 per job: code (1 added, 0 exists and left alone, 2 replaced, 3 deduplicated: the
dedup key is held by another job's add within its window), public state ('finished' when that
other job is gone), due ms, the id holding the dedup key ('' unless code 3).
The dedup key holds '<due ms>:<id>' of the add that took it, and expires with its window.
Events: PUBLISH <wake> <due ms> when the queue's earliest due time moved earlier; 'added' to
the event stream.
Safe to run twice: ids are given by the caller, so a re-sent call finds the jobs (and its own
id on the dedup key) and leaves them alone (code 0).
]]
--@include _helpers.lua

local now = now_ms()
local n = tonumber(ARGV[3])
if ARGV[4] ~= '' then
  local last = tonumber(redis.call('HGET', QUEUE_ROOT .. 'schedule-last', ARGV[4]))
  if last and last >= tonumber(ARGV[5]) then return { -1 } end
  redis.call('HSET', QUEUE_ROOT .. 'schedule-last', ARGV[4], ARGV[5])
end
local seq = redis.call('INCRBY', K_SEQ, n) - n
local prev_head = head_score(K_SCHEDULED)
local min_due = nil
local out = {}

local function answer(code, state, due, holder)
  out[#out + 1] = code
  out[#out + 1] = state
  out[#out + 1] = due
  out[#out + 1] = holder
end

for i = 1, n do
  local b = 6 + (i - 1) * 11
  local id, key = ARGV[b], KEYS[5 + i]
  local due
  if ARGV[b + 2] ~= '' then due = now + tonumber(ARGV[b + 2]) else due = tonumber(ARGV[b + 3]) end

  local code = 1
  local dedup = ARGV[b + 8]
  if dedup ~= '' then
    local dkey = QUEUE_ROOT .. 'dedup:' .. dedup
    local held = redis.call('GET', dkey)
    local held_due, holder = nil, nil
    if held then held_due, holder = string.match(held, '^(%d+):(.*)$') end
    if holder and holder ~= id then
      code = 3
      local hkey = JOB_PREFIX .. holder
      local state = job_state(holder, hkey)
      local live_due = state and tonumber(redis.call('HGET', hkey, 't'))
      answer(3, public_state(state) or 'finished', live_due or tonumber(held_due), holder)
    elseif not holder then
      -- The due time is kept with the id so a duplicate can be told when the first one ran.
      redis.call('SET', dkey, int(due) .. ':' .. id, 'PX', ARGV[b + 9])
    end
  end

  if code == 1 and redis.call('EXISTS', key) == 1 then
    local state = job_state(id, key)
    if ARGV[b + 7] ~= '1' or state == 'active' then
      code = 0
      answer(0, public_state(state) or 'scheduled', tonumber(redis.call('HGET', key, 't')) or 0, '')
    else
      code = 2
      unlink_waiting(id, key, state)
      redis.call('DEL', key)
    end
  end

  if code == 1 or code == 2 then
    local fields = { 'd', ARGV[b + 1], 't', int(due), 'q', int(seq + i), 'c', int(now) }
    if ARGV[b + 4] ~= '0' then fields[#fields + 1] = 'p'; fields[#fields + 1] = ARGV[b + 4] end
    if ARGV[b + 5] ~= '' then fields[#fields + 1] = 'm'; fields[#fields + 1] = ARGV[b + 5] end
    if ARGV[b + 6] ~= '' then fields[#fields + 1] = 'b'; fields[#fields + 1] = ARGV[b + 6] end
    if ARGV[b + 10] ~= '' then fields[#fields + 1] = 'x'; fields[#fields + 1] = ARGV[b + 10] end
    redis.call('HSET', key, unpack(fields))
    redis.call('ZADD', K_SCHEDULED, due, id)
    if min_due == nil or due < min_due then min_due = due end
    emit('added', id, 'due', int(due))
    answer(code, 'scheduled', due, '')
  end
end

if min_due ~= nil then wake_if_earlier(prev_head, min_due) end
return out
