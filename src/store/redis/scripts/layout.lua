--[[ layout: sets a queue's shard layout if it is still the one the caller read (compare and set).
KEYS: base
ARGV: base, expected, next, epoch
Returns: set; 1 when the layout was set, 0 when the stored one was not `expected`
The layout is the `layout` field of the unsharded queue's meta (JSON, see sharded/layout.ts);
'' as `expected` means "no layout stored yet" (an unsharded queue). `epoch` is the epoch of
`next`, kept beside it as meta `epoch` (obliterate and `moved` read it there); '' leaves it. Two processes that reshard
at once cannot both win: the second finds the first one's layout and reads it again.
Events: PUBLISH <wake> 'L' when the layout was set, so workers read it again and follow the
new shards at once.
Safe to run twice: the second run finds `next` stored, not `expected`, and returns 0; the
caller then reads the layout and finds its own.
]]
--@include _helpers.lua

local current = redis.call('HGET', K_META, 'layout') or ''
if current ~= arg('expected') then return 0 end
redis.call('HSET', K_META, 'layout', arg('next'))
if arg('epoch') ~= '' then redis.call('HSET', K_META, 'epoch', arg('epoch')) end
redis.call('PUBLISH', WAKE_CHANNEL, 'L')
return 1
