--[[ timeline: how many scheduled jobs fall due in each window of time ahead, by the server's clock.
KEYS: base
ARGV: base, from, bucket_ms, buckets
Returns: { now_ms, from_ms, then per item: due }; per bucket the scheduled jobs due in it after now
Bucket i counts the members of K_SCHEDULED with a score in [from + i*bucket_ms, from +
(i+1)*bucket_ms) and above now: jobs not yet due. `from` is '' for the server's now. Due jobs
are left out wherever they wait (the due members of K_SCHEDULED and all of K_READY), so a
bucket before now counts 0 and the answer does not depend on how far claims promoted them.
The scheduled set's score is the plain due time (priority orders only K_READY, whose members are
all due), so the counts need no decoding: one ZCOUNT per bucket, O(buckets * log n), no body
read. `bucket_ms` must be at least 1 and `buckets` 1..1440 (the store checks tighter bounds).
]]
--@include _helpers.lua

local now = now_ms()
local bucket_ms, buckets = arg_int('bucket_ms'), arg_int('buckets')
if bucket_ms < 1 or buckets < 1 or buckets > 1440 then error('delayq: timeline needs bucket_ms >= 1 and buckets 1..1440') end
local from = now
if arg('from') ~= '' then from = arg_int('from') end
local out = reply({ now_ms = now, from_ms = from })
for i = 0, buckets - 1 do
  local lo, hi = from + i * bucket_ms, from + (i + 1) * bucket_ms
  if hi <= now then
    -- Wholly before now: nothing in it is still to come, and no call is spent on it.
    out[#out + 1] = 0
  else
    -- Strictly after now: a job due at now is due, not to come.
    local min = '(' .. int(now)
    if lo > now then min = int(lo) end
    out[#out + 1] = redis.call('ZCOUNT', K_SCHEDULED, min, '(' .. int(hi))
  end
end
return out
