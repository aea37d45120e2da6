--[[ _rate: the rate limiters (docs/rate-limits.md). Pulled in by `--@include _rate.lua` after
_groups.lua (whose flow() it reads) in the scripts that take, give back, hold or read tokens:
claim, release, limits and groups. The others (add, complete, fail, ...) never load it: every
function a script holds costs its one-time load.
]]

-- The rate limiters (RL(): the table of their functions), built on first use as GL() is. A limiter
-- is '' (the queue's) or a group id; its state (wire.ts RATE_STATE) is loaded with one HMGET and
-- written back by save(). Tokens taken are logged in K_RATE_LOG, one member per claim and limiter
-- (`<limiter>\0<expiry:16>:<claim seq>:<taken at ms>:<tokens>`, all scored 0, so a limiter's entries are one lex
-- range in expiry order); a claim gives back the expired ones of each limiter it looks at.
-- That is a sliding window: at most `max` tokens are taken in any window of `per` ms, which a
-- token bucket (up to 2 x max across a window's edge) does not hold.
local RLIB = nil
local function RL()
  if RLIB then return RLIB end
  local L = {}
  RLIB = L
  L.STATE, L.dirty, L.dirty_list = {}, {}, {}

  local function pad16(n)
    return string.format('%016d', n)
  end

  function L.parse(s)
    local st = { t = 0, h = false }
    if s then
      local t, h = string.match(s, '^(%d+):(%d*)$')
      if t and #t < 17 and #h < 17 then
        st.t = tonumber(t)
        if h ~= '' then st.h = tonumber(h) end
      end
    end
    return st
  end

  function L.load(ids)
    local need, seen = {}, {}
    for _, id in ipairs(ids) do
      if L.STATE[id] == nil and not seen[id] then
        seen[id] = true
        need[#need + 1] = id
      end
    end
    local vals = hmget(K_RATE, need)
    for i, id in ipairs(need) do L.STATE[id] = L.parse(vals[i]) end
  end

  function L.state(id)
    if L.STATE[id] == nil then L.load({ id }) end
    return L.STATE[id]
  end

  function L.touch(id)
    if not L.dirty[id] then
      L.dirty[id] = true
      L.dirty_list[#L.dirty_list + 1] = id
    end
  end

  function L.save()
    local sets, dels = {}, {}
    for _, id in ipairs(L.dirty_list) do
      local st = L.STATE[id]
      if st.t <= 0 and not st.h then
        dels[#dels + 1] = id
      else
        sets[#sets + 1] = id
        sets[#sets + 1] = int(math.max(0, st.t)) .. ':' .. (st.h and int(st.h) or '')
      end
    end
    hset_pairs(K_RATE, sets)
    if #dels > 0 then call_chunked('HDEL', K_RATE, dels) end
    L.dirty, L.dirty_list = {}, {}
  end

  -- The lex range of a limiter's log entries that expired at or before `now`.
  local function expired_range(id, now)
    return '[' .. id .. '\0', '(' .. id .. '\0' .. pad16(now + 1)
  end

  -- Gives back the tokens of a limiter whose window has passed, and ends a hold that has.
  function L.trim(id, now)
    local st = L.state(id)
    if st.h and st.h <= now then
      st.h = false
      L.touch(id)
    end
    if st.t <= 0 then return st end
    local from, to = expired_range(id, now)
    local gone = redis.call('ZRANGEBYLEX', K_RATE_LOG, from, to)
    if #gone > 0 then
      local back = 0
      for _, m in ipairs(gone) do back = back + (tonumber(string.match(m, ':(%d+)$')) or 0) end
      redis.call('ZREMRANGEBYLEX', K_RATE_LOG, from, to)
      st.t = math.max(0, st.t - back)
      L.touch(id)
    end
    return st
  end

  -- Tokens a limiter may still give now (after trim): 0 while held; HUGE without a limit.
  function L.tokens(id, limit, now)
    local st = L.trim(id, now)
    if st.h then return 0 end
    if not limit then return HUGE end
    if st.t > 0 then L.clamp(id, now) end
    return limit.max - st.t
  end

  -- The server clock stepped back since tokens were taken (an entry's take time is after now):
  -- each such entry comes back its own window from now, not at the absolute time logged, so a
  -- step back holds a limiter one window at most, not the size of the step. Seen on the entry
  -- that comes back last (one read a call); a window changed since keeps its entries' times.
  function L.clamp(id, now)
    local last = redis.call('ZRANGE', K_RATE_LOG, '(' .. id .. '\1', '[' .. id .. '\0', 'BYLEX', 'REV', 'LIMIT', 0, 1)
    local at = last[1] and tonumber(string.match(last[1], ':(%d+):%d+$'))
    if not at or at <= now then return end
    local all = redis.call('ZRANGEBYLEX', K_RATE_LOG, '[' .. id .. '\0', '(' .. id .. '\1')
    local gone, adds = {}, {}
    for _, m in ipairs(all) do
      local z = #id + 1
      local expiry = tonumber(string.sub(m, z + 1, z + 16))
      local seq, taken_at, n = string.match(m, ':(%d+):(%d+):(%d+)$')
      taken_at = tonumber(taken_at)
      if expiry and taken_at and taken_at > now then
        gone[#gone + 1] = m
        adds[#adds + 1] = 0
        adds[#adds + 1] = id .. '\0' .. pad16(now + expiry - taken_at) .. ':' .. seq .. ':' .. int(now) .. ':' .. n
      end
    end
    if #gone > 0 then
      call_chunked('ZREM', K_RATE_LOG, gone)
      redis.call('ZADD', K_RATE_LOG, unpack(adds))
    end
  end

  -- The expiry of a limiter's first log entry from `from` (its whole log: ''), nil when none.
  local function first_expiry(id, from)
    local head = redis.call('ZRANGEBYLEX', K_RATE_LOG, '[' .. id .. '\0' .. from, '(' .. id .. '\1', 'LIMIT', 0, 1)
    if #head == 0 then return nil end
    local z = string.find(head[1], '\0', 1, true)
    return tonumber(string.sub(head[1], z + 1, z + 16))
  end

  -- When the limiter's oldest tokens come back (nil when none is taken).
  function L.next_refill(id)
    return first_expiry(id, '')
  end

  -- When the limiter may give a token again: its hold's end, else its next refill.
  function L.free_at(id)
    local st = L.state(id)
    if st.h then return st.h end
    return L.next_refill(id)
  end

  -- Logs `n` tokens taken by a claim at `now` (its first token number `seq`), back at `expiry`.
  function L.take(id, n, expiry, seq, now)
    if n <= 0 then return end
    redis.call('ZADD', K_RATE_LOG, 0, id .. '\0' .. pad16(expiry) .. ':' .. int(seq) .. ':' .. int(now) .. ':' .. int(n))
    local st = L.state(id)
    st.t = st.t + n
    L.touch(id)
  end

  -- Holds a limiter back until `until_ms` (a later hold already set stays).
  function L.hold(id, until_ms)
    local st = L.state(id)
    if not st.h or st.h < until_ms then
      st.h = until_ms
      L.touch(id)
    end
  end

  -- Read only: tokens taken in the window now, the hold, and the next refill.
  function L.peek(id, now)
    local st = L.state(id)
    local used = st.t
    if used > 0 then
      local from, to = expired_range(id, now)
      for _, m in ipairs(redis.call('ZRANGEBYLEX', K_RATE_LOG, from, to)) do used = used - (tonumber(string.match(m, ':(%d+)$')) or 0) end
    end
    local held = st.h
    if held and held <= now then held = false end
    -- The oldest token still in its window (entries a claim has not given back yet are skipped).
    local refill = nil
    if used > 0 then refill = first_expiry(id, pad16(now + 1)) end
    return math.max(0, used), held, refill
  end

  -- Whether rate limits bear on a claim of a queue without groups (meta `rated` stays once set):
  -- the queue's limit is set, its hold (a RateLimitSignal's) is not over, or a group is booked in
  -- rate-wake (tokens to give back, a hold to look at again). Group limits bear on jobs of a group
  -- only. Tokens logged under a limit since removed are given back by the next claim that has one
  -- (tokens() trims first), so skipping them here changes no answer. Two reads; the queue's state
  -- stays loaded for the claim.
  function L.live(f, now)
    if f.rate then return true end
    local st = L.state(UNGROUPED)
    if st.h and st.h > now then return true end
    return redis.call('EXISTS', K_RATE_WAKE) == 1
  end

  -- Marks the queue as using rate limits (meta rated), so claims look at them.
  function L.mark_rated()
    if not flow().rated then
      redis.call('HSET', K_META, 'rated', '1')
      flow().rated = true
    end
  end
  return L
end
