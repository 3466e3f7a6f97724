-- arrdrop.lua: a drain takes everything from an arrival list (merge.lua has
-- the shapes): returns the sequences it held and deletes it.
-- KEYS[1] -> an arrival list (vst:{room~i}:arr, or the room's own vst:{room}:arr)
local got = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
local out = {}
for i = 1, #got do out[i] = arrival_seq(got[i]) end
return out
