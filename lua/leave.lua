-- leave.lua: a visitor leaves the queue (or gives up a grant); the place is gone for good.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the ticket's sequence)
-- ARGV[3] -> score (the ticket's queue score)
-- Returns {'ok'} or {'noroom'}. Leaving twice is fine.
local m = ARGV[2]
local score = tonumber(ARGV[3])
if not load_cfg() then return {'noroom'} end
redis.call('ZREM', K_Q, m)
redis.call('ZREM', K_HB, m)
if redis.call('ZREM', K_ADM, m) == 1 then redis.call('ZADD', K_USED, tonumber(ARGV[1]), m) end
if score > head() then redis.call('ZADD', K_LEFT, ARGV[3], m) end
return {'ok'}
