--[[ claim: hands out up to `count` due jobs, highest priority first, then earliest due, then
first added; recovers jobs whose lease ran out on the way. When no more than `count` jobs are
due, they are ordered here and handed out directly; otherwise due jobs pass through the ready set.
KEYS: base, memo
ARGV: base, count, lease_ms, default_max, promote_limit, reap_limit, request_id, worker, packed
Returns: { now_ms, next_wake_ms, more, deadline_ms, token_prefix, groups, holds, then per item: id, body, attempt, due_ms, token_number } (with packed = 1 the same array as one MessagePack string: PACKED_REPLY); more is 1 when due jobs are left; groups names the groups of the jobs that have one, as CLAIM_GROUPS ('' when none has); holds the holds of the jobs added with dependencies, as CLAIM_HOLDS ('' when none was); per job wire.ts CLAIM_JOB
`worker` is the claiming worker's id, kept in each job's run state as its lease holder.
With `packed` = 1 the array goes out as one string, cmsgpack.pack's (scripts.ts packedTail):
the worker reads one string, not five elements a job (msgpack-reply.ts says why).
`promote_limit` bounds the due jobs moved into the ready set per call (at least one more than
`count` are read when the ready set is empty), `reap_limit` the expired
leases recovered per call; memo is `req:<request id>` (any key when request_id is '').
While the queue is paused (meta paused = '1') it only recovers expired leases and hands out
nothing; its next wake is then the earliest lease deadline.
Next wake is the earliest of the next due time and the next lease deadline, so a sleeping
worker also wakes to recover expired leases and no separate reaper has to poll.
A fixed number of Redis calls per batch: the sets are read and written once each, bodies and
run states with one HMGET and one HSET.
A claim reads only the seq and priority of a body (it orders by them); a body or run state it
cannot read goes to the dead set with the reason (kept as the run's last error) and costs no
other job; the worker reads the rest of the body and buries a job whose body it cannot read.
Members whose body is gone are dropped.
Safe to re-send: with a request id, a batch is remembered for the lease's length as
'<now>:<deadline>:<first token number>:<count>'; a re-sent claim returns the same jobs (those
still held by those tokens) instead of handing out a second batch.
]]
--@include _helpers.lua
--@include _groups.lua
--@include _rate.lua
--@include _holds.lua
--@include _lifecycle.lua
--@include _claim.lua
--@include _claim_direct.lua
--@include _claim_turns.lua
--@include _claim_rates.lua

local want = arg_int('count')
local lease_ms = arg_int('lease_ms')
local default_max = arg_int('default_max')
local promote_limit = arg_int('promote_limit')
local reap_limit = arg_int('reap_limit')
-- A ':' would break the run state's fields; the library never sends one.
local worker = (string.gsub(arg('worker'), ':', '_'))
local memo_key = ''
if arg('request_id') ~= '' then memo_key = K_MEMO end

local now = now_ms()
CLAIM.begin(now)

-- 0. A re-sent claim: answer with the batch the first run handed out.
local memo = memo_get(memo_key)
if memo then return CLAIM.resent(memo) end

-- 1. Recover expired leases: back to scheduled (due now), or dead when no attempts are left.
-- Recovered jobs are due now: written before the pick, so this claim can hand them out.
CLAIM.recover_expired(reap_limit, default_max)
CLAIM.flush_writes()
-- Held jobs whose deadline passed are scheduled (due now at the latest), so this claim can hand
-- them out (_holds.lua).
local f = flow()
-- A queue that held a job once keeps its mark; with no hold left (HOLDS.live) this claim takes
-- the path of a queue without holds. A claim makes no hold, so the answer stands for the call.
if f.holds and not HOLDS.live() then f.holds = false end
if f.holds then HOLDS.release_expired(now, reap_limit) end
-- The same for a queue without groups that had a rate limit or a hold once: while none bears on
-- this claim (RL().live), it takes the path of a queue without them. A queue marked grouped keeps
-- taking turns while it is rated (LIVE.turns: the memory store's rule, and its groups' tokens).
if f.rated and not f.grouped and not RL().live(f, now) then f.rated = false end

-- A paused queue hands out nothing, nor does one at its concurrency limit; workers sleep until a
-- lease needs recovering or the resume signal comes (or, at the limit, until a slot frees:
-- leave_active tells them).
local at_limit = false
if f.limit and not f.paused then
  local room = f.limit - redis.call('ZCARD', K_ACTIVE)
  if room <= want then want, at_limit = math.max(0, room), true end
end
if f.paused or want == 0 then
  local next_lease = CLAIM.next_lease()
  return reply({ now_ms = now, next_wake_ms = next_lease or -1, more = 0, deadline_ms = 0, token_prefix = '', groups = '', holds = '' })
end

-- The queue's rate limiter (and a hold a RateLimitSignal put on it): a claim takes no more jobs
-- than it has tokens (each job costs at least one); with none left it hands out nothing and its
-- workers sleep until the oldest tokens come back or the hold ends.
local q_left = HUGE
if f.rated then
  q_left = RL().tokens('', f.rate, now)
  if q_left <= 0 then
    RL().save()
    local wake = RL().free_at('')
    local next_lease = CLAIM.next_lease()
    if next_lease ~= nil and (wake == nil or next_lease < wake) then wake = next_lease end
    return reply({ now_ms = now, next_wake_ms = wake or -1, more = 0, deadline_ms = 0, token_prefix = '', groups = '', holds = '' })
  end
  if q_left < want then want, at_limit = q_left, false end
end

-- 2. Pick the jobs to hand out. A queue with groups takes turns between its lanes
-- (_claim_turns.lua); one without keeps one order over all its due jobs (_claim.lua); a plain
-- one hands them out in one pass, in step 3 (_claim_direct.lua).
local picked, served, gone, ready_left = {}, nil, nil, nil
local direct = false
-- An indexed queue's claim: how many more jobs it hands out after the picks (CLAIM.pick_ranked).
local ranked_rest = nil
-- A queue marked grouped or flowed by a version before the counts (no count) starts them once it
-- holds no such job (LIVE); the marks asked here first, so a plain queue makes no call for them.
if f.grouped and f.group_jobs == nil then LIVE.settle(LIVE.GROUP, f) end
if f.flowed and f.flow_jobs == nil then LIVE.settle(LIVE.FLOW, f) end
if f.grouped and LIVE.turns(f) then
  picked, served, gone, ready_left = TURNS.pick(want, promote_limit, f)
else
  local ready_empty, plain
  direct, ready_empty, plain = CLAIM.direct(f)
  if not direct then picked, ranked_rest = CLAIM.pick_in_order(want, promote_limit, ready_empty, plain) end
end

-- Each job's cost and debounce key (JOB_FLOW), while a job with either has not ended (LIVE).
local costs, debounce_keys = {}, {}
local flows = f.flowed and LIVE.flows(f)
if flows and #picked > 0 then
  local ids = {}
  for i, c in ipairs(picked) do ids[i] = c.id end
  for i, v in ipairs(hmget(K_FLOW_OF, ids)) do
    if v then
      local cost, key = string.match(v, '^(%d*):(.*)$')
      if cost and cost ~= '' and #cost < 17 then costs[i] = tonumber(cost) end
      if key and key ~= '' then debounce_keys[i] = key end
    end
  end
end

-- Rate limits: each job takes its cost from the queue's tokens and its group's (_claim_rates.lua).
local charged, q_exhausted, lane_got = nil, false, {}
if f.rated and #picked > 0 then
  charged = RATES.charge(picked, costs, debounce_keys, f, q_left)
  picked, q_exhausted, lane_got = charged.kept, charged.exhausted, charged.lane_got
  if charged.to_ready > 0 then ready_left = (ready_left or 0) + charged.to_ready end
end

-- 3. Hand them out with fresh lease tokens.
local out = reply({ now_ms = now, next_wake_ms = -1, more = 0, deadline_ms = now + lease_ms, token_prefix = CS.now_s .. '-', groups = '', holds = '' })
local handed = #picked
if direct then
  handed = CLAIM.hand_out_direct(out, want, now + lease_ms, worker, memo_key, lease_ms)
elseif ranked_rest then
  handed = CLAIM.hand_out_ranked(out, picked, ranked_rest, now + lease_ms, worker, memo_key, lease_ms)
elseif #picked > 0 then
  local token_base = CLAIM.hand_out_picked(out, picked, now + lease_ms, worker, memo_key, lease_ms)
  if charged then RATES.log(picked, f, charged, token_base) end
  if flows then CLAIM.end_started_bursts(picked, debounce_keys) end
  if f.holds then
    local ids, positions = {}, {}
    for i, c in ipairs(picked) do ids[i], positions[i] = c.id, i end
    out[R.holds] = HOLDS.claim_lines(ids, positions)
  end
end
CLAIM.flush_writes()
if handed > 0 then CLAIM.leased(now + lease_ms) end

if served then TURNS.rotate_lanes(served, gone, ready_left, f, lane_got) end
if f.rated then RL().save() end
return CLAIM.wake(out, at_limit and handed >= want, q_exhausted, served ~= nil, f)
