--[[ claim: hands out up to N due jobs, highest priority first, then earliest due, then
first added; recovers jobs whose lease ran out on the way. When no more than N jobs are due,
they are ordered here and handed out directly; otherwise due jobs pass through the ready set.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
While the queue is paused (meta paused = '1') it only recovers expired leases and hands out
nothing; its next wake is then the earliest lease deadline.
ARGV: 1 job key prefix, 2 wake channel, 3 N, 4 lease ms, 5 default max attempts,
      6 promote limit (due jobs moved from scheduled to ready per call),
      7 reap limit (expired leases recovered per call)
Returns: { now ms, next wake ms or -1, more (1 when more jobs are due now than handed out),
           then 11 per job: id, token, data (nil when missing), attempt, max attempts or '',
           backoff or '', due ms, priority, created ms, lease deadline ms, trace context or '' }
Next wake is the earliest of the next due time and the next lease deadline, so a sleeping
worker also wakes to recover expired leases and no separate reaper has to poll.
Not idempotent: a re-sent claim hands out another batch; the first batch's leases run out
and those jobs are handed out again (at least once).
]]
--@include _helpers.lua

local now = now_ms()
local want = tonumber(ARGV[3])
local lease_ms = tonumber(ARGV[4])
local default_max = tonumber(ARGV[5])

-- 1. Recover expired leases: back to scheduled (due now), or dead when no attempts are left.
local expired = redis.call('ZRANGEBYSCORE', K_ACTIVE, '-inf', now, 'LIMIT', 0, tonumber(ARGV[7]))
for _, id in ipairs(expired) do
  local key = JOB_PREFIX .. id
  local f = redis.call('HMGET', key, 'a', 'm', 'k')
  redis.call('ZREM', K_ACTIVE, id)
  if redis.call('EXISTS', key) == 1 then
    local attempts = tonumber(f[1]) or 0
    local max = tonumber(f[2]) or default_max
    local given_up = '-' .. (f[3] or '')
    local why = 'lease expired during attempt ' .. attempts .. ' of ' .. max
    if attempts >= max then
      redis.call('HSET', key, 'k', given_up, 'e', why)
      bury(id, now)
      emit('leaseExpired', id, 'attempt', attempts)
      emit('dead', id, 'attempt', attempts, 'error', why)
    else
      redis.call('HSET', key, 'k', given_up, 'e', why, 't', int(now))
      schedule(id, now)
      emit('leaseExpired', id, 'attempt', attempts)
    end
  end
end

-- A paused queue hands out nothing; workers sleep until a lease needs recovering or the
-- resume signal comes.
if redis.call('HGET', K_META, 'paused') == '1' then
  local next_lease = head_score(K_ACTIVE)
  return { now, next_lease or -1, 0 }
end

-- 2. Pick the jobs to hand out, with the fields a worker needs.
local picked = {} -- { id, HMGET d a m b t p c }
local function body(id)
  return redis.call('HMGET', JOB_PREFIX .. id, 'd', 'a', 'm', 'b', 't', 'p', 'c', 'q', 'x')
end

local direct = nil
if redis.call('ZCARD', K_READY) == 0 then
  direct = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', now, 'LIMIT', 0, want + 1)
  if #direct > want then direct = nil end
end

if direct ~= nil then
  -- Fast path: everything due fits in this hand-out, so order it here and skip the ready set.
  for _, id in ipairs(direct) do
    local f = body(id)
    -- A member without a body is dangling (written by hand, or half-deleted): dropped.
    if f[1] or f[5] then picked[#picked + 1] = { id, f } end
  end
  if #direct > 0 then call_chunked('ZREM', K_SCHEDULED, direct) end
  table.sort(picked, function(x, y)
    local px, py = tonumber(x[2][6]) or 0, tonumber(y[2][6]) or 0
    if px ~= py then return px > py end
    local tx, ty = tonumber(x[2][5]) or 0, tonumber(y[2][5]) or 0
    if tx ~= ty then return tx < ty end
    return (tonumber(x[2][8]) or 0) < (tonumber(y[2][8]) or 0)
  end)
else
  -- More is due than one hand-out takes: move due jobs into the ready set, which keeps them in
  -- priority order, and take the best from there.
  local due_ids = redis.call('ZRANGEBYSCORE', K_SCHEDULED, '-inf', now, 'LIMIT', 0, tonumber(ARGV[6]))
  if #due_ids > 0 then
    local adds = {}
    for _, id in ipairs(due_ids) do
      local f = redis.call('HMGET', JOB_PREFIX .. id, 't', 'q', 'p')
      if tonumber(f[1]) then
        adds[#adds + 1] = -(tonumber(f[3]) or 0)
        adds[#adds + 1] = ready_member(f[1], f[2], id)
      elseif redis.call('EXISTS', JOB_PREFIX .. id) == 1 then
        -- A body without a usable due time is corrupt: keep it, with the reason, in the dead set.
        redis.call('HSET', JOB_PREFIX .. id, 'e', 'corrupt job: missing or bad due time (t)')
        bury(id, now)
      end
    end
    call_chunked('ZREM', K_SCHEDULED, due_ids)
    if #adds > 0 then call_chunked('ZADD', K_READY, adds) end
  end
  local popped = redis.call('ZPOPMIN', K_READY, want)
  for i = 1, #popped, 2 do
    local id = ready_id(popped[i])
    local f = body(id)
    if f[1] or f[5] then picked[#picked + 1] = { id, f } end
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
    local attempt = (tonumber(f[2]) or 0) + 1
    local token = token_prefix .. int(token_base + i)
    redis.call('HSET', JOB_PREFIX .. id, 'a', attempt, 'k', token)
    actives[#actives + 1] = deadline
    actives[#actives + 1] = id
    local n = #out
    out[n + 1] = id
    out[n + 2] = token
    out[n + 3] = f[1]
    out[n + 4] = attempt
    out[n + 5] = f[3] or ''
    out[n + 6] = f[4] or ''
    out[n + 7] = tonumber(f[5]) or now
    out[n + 8] = tonumber(f[6]) or 0
    out[n + 9] = tonumber(f[7]) or 0
    out[n + 10] = deadline
    out[n + 11] = f[9] or ''
    emit('claimed', id, 'attempt', attempt, 'due', f[5] or '')
  end
  call_chunked('ZADD', K_ACTIVE, actives)
end

local next_due = head_score(K_SCHEDULED)
if redis.call('ZCARD', K_READY) > 0 or (next_due ~= nil and next_due <= now) then out[3] = 1 end
local next_lease = head_score(K_ACTIVE)
local wake = next_due
if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
if wake ~= nil then out[2] = wake end
return out
