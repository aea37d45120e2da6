--[[ watch: registers waiters for the end of jobs (Queue.waitFor) and answers what is known now,
in one step, so no end falls between a waiter's look and its registration.
KEYS: base
ARGV: base, wait_ms, expect
EACH: id
Returns: { now_ms, then per item: state, payload }; per id its state: 'waiting' (registered: its end is published on the wake channel as wire.ts FINISHED_MESSAGE until now + wait_ms), 'completed' (kept; payload its result JSON, '' for none), 'dead' (payload its last error) or '' (no such job: not added yet, cancelled, or completed and not kept; registered only with expect)
The end of a 'waiting' job is told by finish (_lifecycle.lua). With expect = '1' an unknown id is
registered too, so a job added next (addAndWait) is heard of; without, it is not (a waiter that
heard the job end before its call leaves nothing behind). wait_ms = 0 registers nothing
and prunes the waiters whose time is up (a waiter that gave up calls it so). Re-sent, it
registers the same waiters again: nothing doubles (one member per job, its latest time kept).
]]
--@include _helpers.lua
--@include _groups.lua

local wait_ms = arg_int('wait_ms')
local expect = arg('expect') == '1'
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', K_WAITERS, '-inf', now)
local out = reply({ now_ms = now })
for i = 1, each_count() do
  local id = each_arg(i, 'id')
  local state, body, run = job_state(id)
  local known, payload = '', ''
  if state == PLACE.completed then
    known, payload = PLACE.completed, redis.call('HGET', K_RESULTS, id) or ''
  elseif state == PLACE.dead then
    local r = parse_run(run)
    known, payload = PLACE.dead, (r and r.e) or ''
  else
    if state ~= nil then known = 'waiting' end
    -- An unknown id only when expected: addAndWait watches before it adds, so no end falls
    -- between. GT: a second waiter with a shorter wait does not cut the first one's short.
    if wait_ms > 0 and (state ~= nil or expect) then redis.call('ZADD', K_WAITERS, 'GT', now + wait_ms, id) end
  end
  local n = #out
  out[n + RE.state] = known
  out[n + RE.payload] = payload
end
return out
