--[[ add: writes new jobs, or replaces existing ones on request, and schedules them.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the request memo key
      (`req:<request id>`, or any key when ARGV 6 is ''), 6+i: the key of job i
ARGV: 1 job key prefix, 2 wake channel, 3 job count N, 4 schedule name or '', 5 occurrence ms
      or '' (a recurring schedule's guard: the add happens only if this occurrence is later
      than the schedule's last one, which it then becomes), 6 request id or '', 7 memo ms
      (how long a re-send is recognised), then 11 per job from ARGV 8:
      id, data, delayMs or '', runAtMs or '', priority, maxAttempts or '', backoff or '',
      replace ('1' or '0'), dedup key or '', dedup window ms or '', trace context or ''
Returns: { -1 } when the schedule guard refused (the occurrence was enqueued already); else 4 per
job: code (1 added, 0 exists and left alone, 2 replaced, 3 deduplicated: the dedup key is held
within its window, by another job's add or by this id's own add whose job has finished),
public state ('finished' when the job holding the key is gone), due ms, the id holding the
dedup key ('' unless code 3).
Rules: an add that changes nothing (code 0 or 3) takes no sequence number and no dedup key.
The dedup key holds '<due ms>:<id>' of the add that took it, and expires with its window.
Every argument is checked before the first write; a bad one fails the call and writes nothing.
Events: PUBLISH <wake> <due ms> when the queue's earliest due time moved earlier; 'added' to
the event stream.
Safe to re-send: with a request id, the first run's codes are remembered for the memo time as
'<now>:<one code digit per job>', and a re-send answers them again, even after the job ran and
was acked (without a request id, a re-send finds the jobs and answers code 0).
]]
--@include _helpers.lua

local FIRST = 8
local n = arg_int(3, 'job count')
local memo_key, memo_ms = '', 0
if ARGV[6] ~= '' then memo_key, memo_ms = KEYS[6], arg_int(7, 'memo ms') end

-- Parse and check every job's arguments before anything is written.
local jobs = {}
for i = 1, n do
  local b = FIRST + (i - 1) * 11
  local j = { id = ARGV[b], key = KEYS[6 + i], data = ARGV[b + 1], replace = ARGV[b + 7] == '1' }
  if ARGV[b + 2] ~= '' then j.delay = arg_int(b + 2, 'delayMs') else j.run_at = arg_int(b + 3, 'runAtMs') end
  j.priority = arg_int(b + 4, 'priority')
  if ARGV[b + 5] ~= '' then arg_int(b + 5, 'maxAttempts') end
  if ARGV[b + 8] ~= '' then
    j.dedup = QUEUE_ROOT .. 'dedup:' .. ARGV[b + 8]
    j.window = arg_int(b + 9, 'dedup window ms')
  end
  jobs[i] = j
end

local function due_of(j, now)
  if j.delay then return now + j.delay end
  return j.run_at
end

local out = {}
local function answer(code, state, due, holder)
  out[#out + 1] = code
  out[#out + 1] = state
  out[#out + 1] = due
  out[#out + 1] = holder
end

-- The job holding a dedup key: its id and the due time it was added with, or nil.
local function dedup_holder(dkey)
  local held = redis.call('GET', dkey)
  if not held then return nil, nil end
  local held_due, holder = string.match(held, '^(%d+):(.*)$')
  return holder, tonumber(held_due)
end

local function answer_deduplicated(holder, held_due)
  local hkey = JOB_PREFIX .. holder
  local state = job_state(holder, hkey)
  local live_due = state and as_int((read_job(hkey, 't') or {})[1])
  answer(3, public_state(state) or 'finished', live_due or held_due, holder)
end

local function answer_exists(j)
  local f = read_job(j.key, 't')
  answer(0, public_state(job_state(j.id, j.key)) or 'scheduled', f and as_int(f[1]) or 0, '')
end

-- A re-sent call: the first run's answers.
local memo = memo_get(memo_key)
if memo then
  local m_now, codes = string.match(memo, '^(%d+):(%d*)$')
  m_now = tonumber(m_now)
  for i, j in ipairs(jobs) do
    local code = tonumber(string.sub(codes, i, i))
    if code == 1 or code == 2 then
      answer(code, 'scheduled', due_of(j, m_now), '')
    elseif code == 3 then
      local holder, held_due = nil, nil
      if j.dedup then holder, held_due = dedup_holder(j.dedup) end
      if holder then answer_deduplicated(holder, held_due) else answer(3, 'finished', due_of(j, m_now), '') end
    else
      answer_exists(j)
    end
  end
  return out
end

local now = now_ms()
if ARGV[4] ~= '' then
  local occurrence = arg_int(5, 'occurrence ms')
  local last = as_int(redis.call('HGET', QUEUE_ROOT .. 'schedule-last', ARGV[4]))
  if last and last >= occurrence then return { -1 } end
  redis.call('HSET', QUEUE_ROOT .. 'schedule-last', ARGV[4], int(occurrence))
end

-- Decide each job's fate before writing, in order, as if each job were added on its own: a
-- job repeated in the call sees the earlier one as existing, and a dedup key taken by an
-- earlier job holds for the later ones. Only jobs written take a sequence number.
local writes = 0
local codes = {}
local pending, taken = {}, {}
for i, j in ipairs(jobs) do
  j.due = due_of(j, now)
  local prev = pending[j.id]
  local exists = prev ~= nil or redis.call('EXISTS', j.key) == 1
  local code = 1
  if j.dedup then
    local t = taken[j.dedup]
    if t and t.id ~= j.id then
      code = 3
      answer(3, 'scheduled', pending[t.id].due, t.id)
    elseif not t then
      local holder, held_due = dedup_holder(j.dedup)
      if holder and (holder ~= j.id or not exists) then
        code = 3
        -- A holder added again earlier in this call is answered as it will be written.
        if pending[holder] then answer(3, 'scheduled', pending[holder].due, holder) else answer_deduplicated(holder, held_due) end
      end
    end
  end
  if code == 1 and exists then
    if prev then
      if j.replace then
        -- Replaces the earlier job of this call, which is then never written.
        code = 2
        prev.superseded = true
        j.state, j.delete_stored = prev.state, prev.delete_stored
      else
        code = 0
        answer(0, 'scheduled', prev.due, '')
      end
    else
      local state = job_state(j.id, j.key)
      if not j.replace or state == 'active' then
        code = 0
        answer_exists(j)
      else
        code = 2
        j.state, j.delete_stored = state, true
      end
    end
  end
  if code == 1 or code == 2 then
    writes = writes + 1
    pending[j.id] = j
    if j.dedup and not taken[j.dedup] and not dedup_holder(j.dedup) then taken[j.dedup] = j end
    answer(code, 'scheduled', j.due, '')
  end
  j.code = code
  codes[i] = code
end

local seq = 0
if writes > 0 then seq = redis.call('INCRBY', K_SEQ, writes) - writes end
local prev_head = head_score(K_SCHEDULED)
local min_due = nil
for i, j in ipairs(jobs) do
  if j.code == 1 or j.code == 2 then
    seq = seq + 1
    -- The due time is kept with the id so a duplicate can be told when the first one ran.
    if taken[j.dedup or ''] == j then redis.call('SET', j.dedup, int(j.due) .. ':' .. j.id, 'PX', j.window) end
    if not j.superseded then
      if j.delete_stored then
        unlink_waiting(j.id, j.key, j.state)
        redis.call('DEL', j.key)
      end
      local b = FIRST + (i - 1) * 11
      local fields = { 'd', j.data, 't', int(j.due), 'q', int(seq), 'c', int(now) }
      if j.priority ~= 0 then fields[#fields + 1] = 'p'; fields[#fields + 1] = int(j.priority) end
      if ARGV[b + 5] ~= '' then fields[#fields + 1] = 'm'; fields[#fields + 1] = ARGV[b + 5] end
      if ARGV[b + 6] ~= '' then fields[#fields + 1] = 'b'; fields[#fields + 1] = ARGV[b + 6] end
      if ARGV[b + 10] ~= '' then fields[#fields + 1] = 'x'; fields[#fields + 1] = ARGV[b + 10] end
      redis.call('HSET', j.key, unpack(fields))
      redis.call('ZADD', K_SCHEDULED, j.due, j.id)
      if min_due == nil or j.due < min_due then min_due = j.due end
      emit('added', j.id, 'due', int(j.due))
    end
  end
end

if min_due ~= nil then wake_if_earlier(prev_head, min_due) end
memo_set(memo_key, int(now) .. ':' .. table.concat(codes), memo_ms)
return out
