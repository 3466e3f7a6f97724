-- arrtrim.lua: drops from an arrival list the sequences merged into the queue,
-- and keeps on the shard what its visitors' polls need (spoll.lua).
-- KEYS[1] -> an arrival list (vst:{room~i}:arr)
-- KEYS[2] -> the shard's state (vst:{room~i}:st)
-- KEYS[3] -> the shard's heartbeats (vst:{room~i}:hb, HASH: lib.lua shf, hbv)
-- KEYS[4] -> the shard's copy of the room's progress (vst:{room~i}:prog, ZSET: member = rank
--            from 0, score = the queue's score at that rank)
-- ARGV[1] -> the merged mark: every sequence at or below it is merged (merge.lua)
-- ARGV[2] -> the queue's count after the merge, kept as the shard's w for the
--            position estimates of the joins it takes (arrive.lua) and of its polls
-- ARGV[3..10] -> merge.lua's near, class, pace, zone and head; now (ms); merge.lua's climb
--            ('' for none); the stride of the progress, '' when this tick publishes none
-- ARGV[11..] -> the progress: rank, score pairs
-- The shard's state keeps w, arrw (the merged mark), pace, zone, head, climb and stride for
-- spoll.lua. Each merged arrival above near gets its first heartbeat here (HSETNX: a
-- leave recorded before it stays), with the join as its last contact (no older than
-- a second before now). Returns the number dropped. The list is in order, so they are a prefix.
local upto = tonumber(ARGV[1])
local near, class, now = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[8])
redis.call('HSET', KEYS[2], 'w', ARGV[2], 'arrw', ARGV[1], 'pace', ARGV[5], 'zone', ARGV[6], 'head', ARGV[7],
  'climb', ARGV[9])
if ARGV[10] ~= '' then
  redis.call('DEL', KEYS[4])
  local zs, z = {}, 0
  for i = 11, #ARGV - 1, 2 do
    zs[z + 1], zs[z + 2] = ARGV[i + 1], ARGV[i]
    z = z + 2
  end
  if z > 0 then redis.call('ZADD', KEYS[4], unpack(zs)) end
  redis.call('HSET', KEYS[2], 'stride', ARGV[10])
end
local oldest = now - 1000
local dropped = 0
local find, sub = string.find, string.sub
while true do
  local got = redis.call('LRANGE', KEYS[1], 0, 999)
  local k = 0
  for i = 1, #got do
    local x = got[i]
    local c = find(x, ':', 1, true)
    local s = tonumber(sub(x, 1, c - 1))
    if s > upto then break end
    k = i
    if s > near then
      local at = tonumber(sub(x, c + 1))
      if at < oldest then at = oldest elseif at > now then at = now end
      redis.call('HSETNX', KEYS[3], shf(s), hbv(at, class))
    end
  end
  if k > 0 then redis.call('LTRIM', KEYS[1], k, -1) end
  dropped = dropped + k
  if k < 1000 then return dropped end
end
