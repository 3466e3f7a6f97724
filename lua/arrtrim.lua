-- arrtrim.lua: drops from an arrival list the sequences merged into the queue.
-- KEYS[1] -> an arrival list (vst:{room~i}:arr, or the room's own vst:{room}:arr)
-- KEYS[2] -> the shard's state (vst:{room~i}:st), absent for the room's own list
-- ARGV[1] -> the merged mark: every sequence at or below it is merged (merge.lua)
-- ARGV[2] -> the queue's count after the merge, kept as the shard's w for the
--            position estimates of the joins it takes (arrive.lua); absent: keep w
-- Returns the number dropped. The list is in order, so they are a prefix.
local upto = tonumber(ARGV[1])
if KEYS[2] and ARGV[2] then redis.call('HSET', KEYS[2], 'w', ARGV[2]) end
local dropped = 0
while true do
  local got = redis.call('LRANGE', KEYS[1], 0, 999)
  local k = 0
  for i = 1, #got do
    if tonumber(arrival_seq(got[i])) > upto then break end
    k = i
  end
  if k > 0 then redis.call('LTRIM', KEYS[1], k, -1) end
  dropped = dropped + k
  if k < 1000 then return dropped end
end
