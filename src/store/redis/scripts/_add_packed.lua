--[[ _add_packed: add.lua's path for items that carry their body packed (`item_fields` 'packed'),
pulled in by add.lua only. Each item is id, data, delay_ms, run_at, where `data` is the job's
body after its first two fields (wire.ts JOB_BODY from `<priority>`, PACKED_TAIL): the producer
packs it once, and the script checks its header and writes it after the seq and created time.
Such a job has no replace, dedup key, group, cost, debounce, attempts made or hold, and the call
no schedule guard: the general path (add.lua) takes those.
Why a path of its own: the general path reads thirteen arguments a job, checks each, builds a
table a job and the body from its parts; a bulk add cost ~132k instructions a job (callgrind,
bench:scripts), most of it that. Here a job is four arguments, one pattern match and one
concatenation. The answers, memo, events and writes are the general path's for such jobs.
]]

local ADD_PACKED = {}

-- Refuses a number of the tail that int() would not have written (leading zeros, '-0'): the body
-- keeps the text as given, and the general path writes it through int().
local function packed_number(name, i, s)
  if s ~= '' and s ~= '0' and not string.find(s, '^%-?[1-9]%d*$') then refuse(name, i, 'must be written as a plain whole number', s) end
end

-- Checks item i's tail (every number against the rule of the argument it stands for, the
-- lengths against the tail, the name against the id rule) and returns whether its priority is
-- other than 0; refuses the call otherwise.
function ADD_PACKED.check_tail(i, tail)
  -- Most jobs' tail (packed-tail.ts PLAIN_HEAD: priority 0, no limits, no backoff, trace or name,
  -- then the data) has nothing to check: one comparison, not the pattern's five captures (~2k
  -- instructions a job).
  if string.sub(tail, 1, 7) == '0::0:0:' then return false end
  local p, limits, bl, xl, after = string.match(tail, '^(%-?%d+):([%d/]*):(%d+):(%d+)()')
  if not p or #bl > 9 or #xl > 9 then refuse('data', i, 'must be a packed body tail (PACKED_TAIL)', tail) end
  local max_s, timeout_s = limits, ''
  if string.find(limits, '/', 1, true) then
    max_s, timeout_s = string.match(limits, '^(%d*)/(%d+)$')
    if not max_s then refuse('data', i, 'must be a packed body tail (PACKED_TAIL): bad limits', tail) end
  end
  -- The common tail (priority 0, no limits of its own) needs no rule looked up: 0 and '' are in
  -- their rules (test/unit/wire-headers.test.ts holds wire.ts to that), and they are plain.
  local priority = 0
  if p ~= '0' then
    local _, n = check('priority', p, i)
    priority = n
    packed_number('priority', i, p)
  end
  if limits ~= '' then
    check('max_attempts', max_s, i)
    check('timeout_ms', timeout_s, i)
    packed_number('max_attempts', i, max_s)
    packed_number('timeout_ms', i, timeout_s)
  end
  local nl, start = 0, nil
  if string.byte(tail, after) == 58 then
    start = after + 1
  else
    local nl_s
    nl_s, start = string.match(tail, '^/([1-9]%d?%d?%d?):()', after)
    if not nl_s then refuse('data', i, 'must be a packed body tail (PACKED_TAIL): bad name length', tail) end
    nl = tonumber(nl_s)
  end
  local name_at = start + tonumber(bl) + tonumber(xl)
  if name_at + nl - 1 > #tail then refuse('data', i, 'must be a packed body tail (PACKED_TAIL): lengths past its end', tail) end
  if nl > 0 then check('name', string.sub(tail, name_at, name_at + nl - 1), i) end
  return priority ~= 0
end

-- The call's items, checked: { ids, delays, ats, tails, ranked } by position (delay or run_at is
-- nil, ranked says the priority is not 0); refuses the call on the first bad one.
function ADD_PACKED.items()
  local ids, delays, ats, tails, ranked = {}, {}, {}, {}, {}
  -- Fields by position (each_valid's reads, written out: this runs once per job).
  local at, step, e_id, e_delay, e_run_at, e_data = EACH_FIRST, EACH_SIZE, E.id, E.delay_ms, E.run_at, E.data
  for i = 1, each_count() do
    ids[i] = check('id', ARGV[at + e_id], i)
    local delay_s, delay = check('delay_ms', ARGV[at + e_delay], i)
    local run_at_s, run_at = check('run_at', ARGV[at + e_run_at], i)
    if (delay_s == '') == (run_at_s == '') then error('delayq: arguments delay_ms and run_at of item ' .. i .. ': exactly one must be set') end
    delays[i], ats[i] = delay, run_at
    local tail = ARGV[at + e_data]
    tails[i] = tail
    ranked[i] = ADD_PACKED.check_tail(i, tail)
    at = at + step
  end
  return { ids = ids, delays = delays, ats = ats, tails = tails, ranked = ranked }
end

-- One job's answer, appended to the reply `out`.
function ADD_PACKED.answer(out, code, state, due, holder)
  local n = #out
  out[n + RE.code], out[n + RE.state], out[n + RE.due_ms], out[n + RE.holder] = code, state, due, holder
end

function ADD_PACKED.answer_exists(out, id)
  local state, body, run = job_state(id)
  ADD_PACKED.answer(out, CODE.exists, public_state(state) or PLACE.scheduled, (state and current_due(id, run, body)) or 0, '')
end

-- A re-sent call: the first run's answers (memo '<now>:<one code digit a job>:<made flag>').
function ADD_PACKED.resent(out, it, memo)
  local m_now, codes, made = string.match(memo, '^(%d+):(%d*):?([01]?)')
  m_now = tonumber(m_now)
  if made == '1' then out[R.made] = 1 end
  for i, id in ipairs(it.ids) do
    if tonumber(string.sub(codes, i, i)) == CODE.added then
      ADD_PACKED.answer(out, CODE.added, PLACE.scheduled, it.delays[i] and m_now + it.delays[i] or it.ats[i], '')
    else
      ADD_PACKED.answer_exists(out, id)
    end
  end
  return out
end

-- Writes the jobs decided (`dues`: the due time of each item written, by position; `writes`
-- of them): sequence numbers, bodies, the scheduled set, events.
function ADD_PACKED.write(out, it, dues, writes, now)
  local seq, made = take_seq(writes)
  if made then
    out[R.made] = 1
    SCHED.made()
  end
  local new_members = SCHED.order().writes
  local head = ':' .. int(now) .. ':'
  local bodies, scheduled, due_text, earliest, ranked, ranked_at = {}, {}, {}, nil, 0, {}
  -- Written out (counts kept, the seqs as text in one go, the stream's switch asked once): this
  -- loop runs once per job written.
  local seq_texts = int_texts(seq + 1, writes)
  local events = events_on()
  local ids, tails, is_ranked = it.ids, it.tails, it.ranked
  -- SCHED.member's head ('\1' and the seq's length as 48 + n) by the seq's length: a call's seqs
  -- mostly share one.
  local member_heads = {}
  local b, s, k = 0, 0, 0
  for i = 1, #ids do
    local due = dues[i]
    if due then
      k = k + 1
      local id, seq_s = ids[i], seq_texts[k]
      bodies[b + 1], bodies[b + 2] = id, seq_s .. head .. tails[i]
      b = b + 2
      -- Jobs of one add often share a due time: its text is made once.
      local due_s = due_text[due]
      if not due_s then
        due_s = int(due)
        due_text[due] = due_s
      end
      local member = id
      if new_members then
        local member_head = member_heads[#seq_s]
        if not member_head then
          member_head = SCHED.member_head(#seq_s)
          member_heads[#seq_s] = member_head
        end
        member = member_head .. seq_s .. id
      end
      scheduled[s + 1], scheduled[s + 2] = due_s, member
      s = s + 2
      if not earliest or due < earliest then earliest = due end
      if is_ranked[i] then
        ranked = ranked + 1
        ranked_at[ranked] = s / 2
      end
      if events then emit(EVENT.added, id, 'due', due_s) end
    end
  end
  -- A queue with a job with a priority orders its due jobs through the ready set while one is
  -- left (SCHED.rank).
  SCHED.rank(ranked)
  hset_pairs(K_JOBS, bodies)
  schedule_many(scheduled, earliest, true, ranked_at)
end

-- Runs the call: `memo_key` as add.lua reads it ('' without a request id).
function ADD_PACKED.run(memo_key, memo_ms)
  if arg('schedule') ~= '' then error("delayq: argument item_fields 'packed' is not for a schedule's add") end
  local it = ADD_PACKED.items()
  local out = reply({ made = 0 })
  local memo = memo_get(memo_key)
  if memo then return ADD_PACKED.resent(out, it, memo) end

  -- A retired shard, or one that is not a live shard of the producer's layout, takes no new job.
  local meta = redis.call('HMGET', K_META, 'moved', 'epoch', 'ordered', 'prioritized', 'events', 'ranked', 'rankedSet')
  if meta[1] == '1' or (arg('epoch') ~= '' and meta[2] ~= arg('epoch')) then return { CODE.moved } end
  -- The scheduled set's order and the event stream's switch (events_on) from the same read.
  SCHED.prime(meta[3], meta[4], meta[6], meta[7])
  events_from(meta[5])

  -- Each job as if added on its own: one that exists, or that an earlier item of the call adds,
  -- is left alone. Only jobs written take a sequence number.
  local now = now_ms()
  local stored = hmget(K_JOBS, it.ids)
  local pending, codes, dues, writes = {}, {}, {}, 0
  local ids, delays, ats = it.ids, it.delays, it.ats
  local added, scheduled = CODE.added, PLACE.scheduled
  -- ADD_PACKED.answer's positions, read once: the loop answers every job.
  local at_code, at_state, at_due, at_holder = RE.code, RE.state, RE.due_ms, RE.holder
  for i = 1, #ids do
    local id = ids[i]
    local due = delays[i] and now + delays[i] or ats[i]
    if stored[i] ~= false then
      codes[i] = CODE.exists
      ADD_PACKED.answer_exists(out, id)
    elseif pending[id] then
      codes[i] = CODE.exists
      ADD_PACKED.answer(out, CODE.exists, scheduled, pending[id], '')
    else
      codes[i], dues[i], pending[id] = added, due, due
      writes = writes + 1
      local n = #out
      out[n + at_code], out[n + at_state], out[n + at_due], out[n + at_holder] = added, scheduled, due, ''
    end
  end
  if writes > 0 then ADD_PACKED.write(out, it, dues, writes, now) end
  memo_set(memo_key, int(now) .. ':' .. table.concat(codes) .. ':' .. out[R.made], memo_ms)
  return out
end
