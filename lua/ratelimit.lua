-- ratelimit.lua: the per-client enqueue limit of a room alone (lib.lua's
-- limit_client); the enqueue route runs it inside enqueue.lua instead, in the
-- same round trip as the join.
-- KEYS[1] -> vst:{room}:cfg        HASH  the room's settings (clientEnqueuePerMinute)
-- KEYS[2] -> vst:{room}:rl:<client> STRING the client's theoretical arrival time (ms)
-- ARGV[1] -> now (ms)
-- Returns {0} when allowed, {wait} (ms until allowed) when limited, {'noroom'} for an unknown room.
local now = tonumber(ARGV[1])
local v = redis.call('HMGET', KEYS[1], 'mode', 'clientEnqueuePerMinute')
if not v[1] then return {'noroom'} end
return {limit_client(tonumber(v[2]) or 0, KEYS[2], now)}
