--[[ worker-beat: a worker's heartbeat while it holds no lease (extend carries it otherwise),
and its goodbye when it closes.
KEYS: base, workers, worker_info
ARGV: base, worker, info, ttl_ms
Returns: now_ms
`info` is the worker's WorkerInfo JSON, kept for `ttl_ms`; '' takes the worker out at once.
Safe to run twice.
]]
--@include _helpers.lua

local now = now_ms()
worker_beat(now, arg('worker'), arg('info'), arg_int('ttl_ms'))
return now
