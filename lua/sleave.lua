-- sleave.lua: a leave of a visitor who joined on an arrival shard marks the shard's
-- heartbeat ROOM_HOME, so the next poll asks the room's shard, where leave.lua
-- recorded the leave, and a merge after it starts no heartbeat (arrtrim.lua's HSETNX).
-- KEYS[1] -> vst:{room~i}:st   KEYS[2] -> vst:{room~i}:hb
-- ARGV[1] -> now (ms)   ARGV[2] -> the sequence (decimal)
-- Returns 1 when marked, 0 for a shard that never took a join.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], shf(ARGV[2]), hbv(tonumber(ARGV[1]), ROOM_HOME))
redis.call('HDEL', KEYS[2], hbf(ARGV[2]))
return 1
