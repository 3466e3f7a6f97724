-- arrfence.lua: fences one arrival shard for a change of the room's settings
-- (fence.lua): from now on it takes joins only of settings stored with this
-- fence or a later one (arrive.lua). A fence never goes back.
-- KEYS[1] -> vst:{room~i}:st  HASH  v: the shard's fence
-- ARGV[1] -> the change's fence
-- Returns {the shard's fence}.
local v = tonumber(redis.call('HGET', KEYS[1], 'v')) or 0
if tonumber(ARGV[1]) > v then
  redis.call('HSET', KEYS[1], 'v', ARGV[1])
  return {ARGV[1]}
end
return {member(v)}
