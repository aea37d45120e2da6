--[[ dead-list: a page of the dead set, oldest death first.
KEYS: 1-5 as in _helpers (scheduled, ready, active, dead, seq)
ARGV: 1 job key prefix, 2 wake channel, 3 offset, 4 limit
Returns: { total, then 8 per job: id, died at ms, data or '', attempts, max attempts or '',
           last error or '', due ms or '', created ms or '' }
Never fails on stored data: fields are passed on as stored (the caller reads bad numbers as
absent), and a key of another type shows the reason as its last error.
]]
--@include _helpers.lua

local offset, limit = arg_int(3, 'offset'), arg_int(4, 'limit')
local out = { redis.call('ZCARD', K_DEAD) }
if limit <= 0 then return out end
local page = redis.call('ZRANGE', K_DEAD, offset, offset + limit - 1, 'WITHSCORES')
for i = 1, #page, 2 do
  local id = page[i]
  local f, wrong_type = read_job(JOB_PREFIX .. id, 'd', 'a', 'm', 'e', 't', 'c')
  if wrong_type then f = { nil, nil, nil, wrong_type, nil, nil } end
  local n = #out
  out[n + 1] = id
  out[n + 2] = page[i + 1]
  out[n + 3] = f[1] or ''
  out[n + 4] = f[2] or '0'
  out[n + 5] = f[3] or ''
  out[n + 6] = f[4] or ''
  out[n + 7] = f[5] or ''
  out[n + 8] = f[6] or ''
end
return out
