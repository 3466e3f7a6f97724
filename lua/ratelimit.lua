-- ratelimit.lua: the per-client enqueue limit of a room, a GCRA (generic cell
-- rate algorithm: one timestamp per client, no counters to reset).
-- KEYS[1] -> vst:{room}:cfg        HASH  the room's settings (clientEnqueuePerMinute)
-- KEYS[2] -> vst:{room}:rl:<client> STRING the client's theoretical arrival time (ms)
-- ARGV[1] -> now (ms)
-- Returns {0} when allowed, {wait} (ms until allowed) when limited, {'noroom'} for an unknown room.
-- The limit is clientEnqueuePerMinute with a burst of a tenth of it (at least 1);
-- 0 turns it off.
local now = tonumber(ARGV[1])
local v = redis.call('HMGET', KEYS[1], 'mode', 'clientEnqueuePerMinute')
if not v[1] then return {'noroom'} end
local limit = tonumber(v[2]) or 0
if limit <= 0 then return {0} end
local interval = 60000 / limit
local burst = math.max(1, math.floor(limit / 10))
local tat = tonumber(redis.call('GET', KEYS[2])) or now
if tat < now then tat = now end
local allow_at = tat - interval * (burst - 1)
if now < allow_at then return {math.ceil(allow_at - now)} end
local new_tat = tat + interval
redis.call('SET', KEYS[2], string.format('%.0f', new_tat), 'PX', math.ceil(new_tat - now) + 1000)
return {0}
