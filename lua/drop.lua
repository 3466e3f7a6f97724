-- drop.lua: deletes a room's keys in its slot, keeping its tombstone (bury.lua).
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9]  -> vst:{room}:arr   LIST   the room's own arrivals
-- KEYS[10] -> vst:{room}:fence STRING the last settings fence
-- KEYS[11] -> vst:{room}:hist  HASH   the console's last day
-- KEYS[12..14] -> vst:{room}:ntc, ntd, ntg  the notices' registrations, due notices, notified grants
-- ARGV[1] -> the highest sequence the room's arrival shards issued ('' for none)
-- Returns {existed, dead}: existed 1 when the room had anything but a
-- tombstone, else 0; dead the tombstone (decimal): every sequence the room
-- issued, the server's time in µs at least. The state is then the tombstone
-- alone: 'dead', and 'seq' at it, so the room's next incarnation issues
-- numbers above it and no ticket of this one comes back (lib.lua buried).
local st = redis.call('HMGET', K_ST, 'dead', 'seq')
local dead = math.max(tonumber(st[1]) or 0, tonumber(st[2]) or 0, tonumber(ARGV[1]) or 0, server_us())
local existed = redis.call('EXISTS', K_CFG, K_Q, K_HB, K_ADM, K_ACT, K_USED, K_LEFT, KEYS[9], KEYS[10], KEYS[11],
  KEYS[12], KEYS[13], KEYS[14]) > 0
if not existed then
  for _, f in ipairs(redis.call('HKEYS', K_ST)) do
    if f ~= 'dead' and f ~= 'seq' then existed = true break end
  end
end
redis.call('DEL', K_CFG, K_ST, K_Q, K_HB, K_ADM, K_ACT, K_USED, K_LEFT, KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13],
  KEYS[14])
redis.call('HSET', K_ST, 'dead', member(dead), 'seq', member(dead))
if existed then return {1, member(dead)} end
return {0, member(dead)}
