-- arrivals.lua: the tick reads one arrival shard (merge.lua has the rest).
-- KEYS[1] -> vst:{room~i}:st   KEYS[2] -> vst:{room~i}:arr   (arrive.lua)
-- ARGV[1] -> the most arrivals to return
-- Returns {mark, 'seq:ms'…}: the arrivals in order, and a mark every arrival not
-- returned is above. Reading raises the shard's last sequence to the server's
-- time, so the joins it takes after this read are above the mark even when it
-- is idle: the merge can take every arrival at or below the lowest mark of all.
local most = tonumber(ARGV[1])
local mark = math.max(tonumber(redis.call('HGET', KEYS[1], 'seq')) or 0, server_us())
redis.call('HSET', KEYS[1], 'seq', member(mark))
local got = redis.call('LRANGE', KEYS[2], 0, most - 1)
-- A full read leaves some behind: they are above its last one.
if #got == most then mark = tonumber(arrival_seq(got[#got])) end
local out = {member(mark)}
for i = 1, #got do out[i + 1] = got[i] end
return out
