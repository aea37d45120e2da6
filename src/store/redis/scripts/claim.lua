--[[ claim: hands out up to N due jobs, highest priority first, then earliest due, then
first added; recovers jobs whose lease ran out on the way. When no more than N jobs are due,
they are ordered here and handed out directly; otherwise due jobs pass through the ready set.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq), 6 the request memo key
      (`req:<request id>`, or any key when ARGV 8 is '')
While the queue is paused (meta paused = '1') it only recovers expired leases and hands out
nothing; its next wake is then the earliest lease deadline.
ARGV: 1 job key prefix, 2 wake channel, 3 N, 4 lease ms, 5 default max attempts,
      6 promote limit (due jobs moved from scheduled to ready per call),
      7 reap limit (expired leases recovered per call), 8 request id or ''
Returns: { now ms, next wake ms or -1, more (1 when more jobs are due now than handed out),
           then 11 per job: id, token, data, attempt, max attempts or '',
           backoff or '', due ms, priority, created ms, lease deadline ms, trace context or '' }
Next wake is the earliest of the next due time and the next lease deadline, so a sleeping
worker also wakes to recover expired leases and no separate reaper has to poll.
Corrupt bodies (a bad or missing number, no data, a key of another type) go to the dead set
with the reason (field e, when the key is a hash) and cost no other job; members whose key is
gone are dropped. Every number is checked before it is written.
Safe to re-send: with a request id, a batch is remembered for the lease's length as
'<now>:<deadline>:<first token number>:<count>'; a re-sent claim returns the same jobs (those
still held by those tokens) instead of handing out a second batch.
]]
--@include _helpers.lua

local want = arg_int(3, 'N')
local lease_ms = arg_int(4, 'lease ms')
local default_max = arg_int(5, 'default max attempts')
local promote_limit = arg_int(6, 'promote limit')
local reap_limit = arg_int(7, 'reap limit')
local memo_key = ''
if ARGV[8] ~= '' then memo_key = KEYS[6] end

-- One hand-out's line of the reply, from the fields read with CLAIM_FIELDS.
local function hand_out_line(out, id, token, attempt, f, deadline, now)
  local n = #out
  out[n + 1] = id
  out[n + 2] = token
  out[n + 3] = f[1]
  out[n + 4] = attempt
  out[n + 5] = f[3] or ''
  out[n + 6] = f[4] or ''
  out[n + 7] = as_int(f[5]) or now
  out[n + 8] = as_int(f[6]) or 0
  out[n + 9] = as_int(f[7]) or 0
  out[n + 10] = deadline
  out[n + 11] = f[9] or ''
end

-- 0. A re-sent claim: answer with the batch the first run handed out.
local memo = memo_get(memo_key)
if memo then
  local m_now, m_deadline, m_base, m_count = string.match(memo, '^(%d+):(%d+):(%d+):(%d+)$')
  m_now, m_deadline, m_base, m_count = tonumber(m_now), tonumber(m_deadline), tonumber(m_base), tonumber(m_count)
  local out = { m_now, -1, 1 }
  -- The batch's jobs share its deadline (their holder never got the reply, so none was extended).
  local held = redis.call('ZRANGEBYSCORE', K_ACTIVE, m_deadline, m_deadline)
  local prefix = int(m_now) .. '-'
  -- The hand-out fields and, last, the lease token (read only here: the hot path needs no k).
  local fields = { unpack(CLAIM_FIELDS) }
  fields[#fields + 1] = 'k'
  local K = #fields
  for _, id in ipairs(held) do
    local f = read_job(JOB_PREFIX .. id, unpack(fields))
    if f and f[K] and string.sub(f[K], 1, #prefix) == prefix then
      local k = as_int(string.sub(f[K], #prefix + 1))
      if k and k > m_base and k <= m_base + m_count then
        hand_out_line(out, id, f[K], as_int(f[2]) or 1, f, m_deadline, m_now)
      end
    end
  end
  return out
end

local now = now_ms()

-- Buries a job that cannot be handed out, keeping the reason with it when its key is a hash.
local function bury_corrupt(id, reason, is_hash)
  if is_hash then redis.call('HSET', JOB_PREFIX .. id, 'e', reason) end
  bury(id, now)
  emit('dead', id, 'error', reason)
end

-- 1. Recover expired leases: back to scheduled (due now), or dead when no attempts are left.
local expired = redis.call('ZRANGEBYSCORE', K_ACTIVE, '-inf', now, 'LIMIT', 0, reap_limit)
for _, id in ipairs(expired) do
  local key = JOB_PREFIX .. id
  local f, wrong_type = read_job(key, 'a', 'm', 'k', 't')
  redis.call('ZREM', K_ACTIVE, id)
  if wrong_type then
    bury_corrupt(id, wrong_type, false)
  elseif f[1] or f[2] or f[3] or f[4] or redis.call('EXISTS', key) == 1 then
    local attempts = as_int(f[1] or '0')
    local max = default_max
    if f[2] then max = as_int(f[2]) end
    local recovered = '~' .. (f[3] or '')
    if not attempts or not max then
      redis.call('HSET', key, 'k', recovered)
      bury_corrupt(id, 'corrupt job: bad attempt count (a) or max attempts (m)', true)
    else
      local why = 'lease expired during attempt ' .. attempts .. ' of ' .. max
      if attempts >= max then
        redis.call('HSET', key, 'k', recovered, 'e', why)
        bury(id, now)
        emit('leaseExpired', id, 'attempt', attempts)
        emit('dead', id, 'attempt', attempts, 'error', why)
      else
        redis.call('HSET', key, 'k', recovered, 'e', why, 't', int(now))
        schedule(id, now)
        emit('leaseExpired', id, 'attempt', attempts)
      end
    end
  end
end

-- A paused queue hands out nothing; workers sleep until a lease needs recovering or the
-- resume signal comes.
if redis.call('HGET', K_META, 'paused') == '1' then
  local next_lease = head_score(K_ACTIVE)
  return { now, next_lease or -1, 0 }
end

-- Reads a candidate: its fields when it can be handed out; corrupt ones are buried, members
-- whose key is gone are dropped (written by hand, or half-deleted).
local function candidate(id)
  local key = JOB_PREFIX .. id
  local f, wrong_type = read_job(key, unpack(CLAIM_FIELDS))
  if wrong_type then
    bury_corrupt(id, wrong_type, false)
    return nil
  end
  local reason = corrupt_reason(f)
  if reason == nil then return f end
  if f[1] or f[5] or redis.call('EXISTS', key) == 1 then bury_corrupt(id, reason, true) end
  return nil
end

-- 2. Pick the jobs to hand out, with the fields a worker needs.
local picked = {} -- { id, fields }

local direct = nil
if redis.call('ZCARD', K_READY) == 0 then
  direct = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', now, 'LIMIT', 0, want + 1)
  if #direct > want then direct = nil end
end

if direct ~= nil then
  -- Fast path: everything due fits in this hand-out, so order it here and skip the ready set.
  if #direct > 0 then call_chunked('ZREM', K_SCHEDULED, direct) end
  for _, id in ipairs(direct) do
    local f = candidate(id)
    if f then picked[#picked + 1] = { id, f } end
  end
  -- Every number compared here passed as_int, so the order function is consistent.
  table.sort(picked, function(x, y)
    local px, py = as_int(x[2][6]) or 0, as_int(y[2][6]) or 0
    if px ~= py then return px > py end
    local tx, ty = as_int(x[2][5]), as_int(y[2][5])
    if tx ~= ty then return tx < ty end
    return (as_int(x[2][8]) or 0) < (as_int(y[2][8]) or 0)
  end)
else
  -- More is due than one hand-out takes: move due jobs into the ready set, which keeps them in
  -- priority order, and take the best from there.
  local due_ids = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', now, 'LIMIT', 0, promote_limit)
  if #due_ids > 0 then
    call_chunked('ZREM', K_SCHEDULED, due_ids)
    local adds = {}
    for _, id in ipairs(due_ids) do
      local f = candidate(id)
      if f then
        adds[#adds + 1] = -(as_int(f[6]) or 0)
        adds[#adds + 1] = ready_member(f[5], f[8], id)
      end
    end
    if #adds > 0 then call_chunked('ZADD', K_READY, adds) end
  end
  local popped = redis.call('ZPOPMIN', K_READY, want)
  for i = 1, #popped, 2 do
    local id = ready_id(popped[i])
    local f = candidate(id)
    if f then picked[#picked + 1] = { id, f } end
  end
end

-- 3. Hand them out with fresh lease tokens.
local out = { now, -1, 0 }
if #picked > 0 then
  local token_base = redis.call('INCRBY', K_SEQ, #picked) - #picked
  local token_prefix = int(now) .. '-'
  local deadline = now + lease_ms
  local actives = {}
  for i, p in ipairs(picked) do
    local id, f = p[1], p[2]
    local attempt = (as_int(f[2]) or 0) + 1
    local token = token_prefix .. int(token_base + i)
    redis.call('HSET', JOB_PREFIX .. id, 'a', attempt, 'k', token)
    actives[#actives + 1] = deadline
    actives[#actives + 1] = id
    hand_out_line(out, id, token, attempt, f, deadline, now)
    emit('claimed', id, 'attempt', attempt, 'due', f[5])
  end
  call_chunked('ZADD', K_ACTIVE, actives)
  memo_set(memo_key, int(now) .. ':' .. int(deadline) .. ':' .. int(token_base) .. ':' .. #picked, lease_ms)
end

local next_due = head_score(K_SCHEDULED)
if redis.call('ZCARD', K_READY) > 0 or (next_due ~= nil and next_due <= now) then out[3] = 1 end
local next_lease = head_score(K_ACTIVE)
local wake = next_due
if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
if wake ~= nil then out[2] = wake end
return out
