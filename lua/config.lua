-- config.lua: creates or updates a room's settings, live.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> seed for the pre-queue draw (random; kept if the room has one)
-- ARGV[3..] -> field, value pairs of the settings (validated by the caller; opensAt in ms, 0 for none)
-- Returns {'created'} or {'updated'}.
local now = tonumber(ARGV[1])
local created = redis.call('EXISTS', K_CFG) == 0
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', K_CFG, unpack(fields))
redis.call('HSETNX', K_CFG, 'seed', ARGV[2])
-- A new room's bucket starts empty, refilled from now.
redis.call('HSETNX', K_ST, 'refill', tostring(now))
redis.call('HSETNX', K_ST, 'since', tostring(now))
if created then return {'created'} end
return {'updated'}
