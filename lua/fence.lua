-- fence.lua: the first step of a change of a room's settings (roomdb.Engine.PutConfig,
-- docs/ENGINE.md "Arrival shards"): issues the change's fence, above every one
-- issued before and at least the server's time in microseconds (so it stays
-- above the shards' after a loss of the room's data). The caller writes it to
-- the room's arrival shards (arrfence.lua), then stores the settings with it
-- (config.lua): a shard then turns away every join made with older settings.
-- KEYS[1] -> vst:{room}:fence  STRING the last fence issued
-- KEYS[2] -> vst:{room}:cfg    HASH   the room's settings: arrk, the arrival shards to fence
-- Returns {fence, arrk}.
local n = member(math.max((tonumber(redis.call('GET', KEYS[1])) or 0) + 1, server_us()))
redis.call('SET', KEYS[1], n)
return {n, tonumber(redis.call('HGET', KEYS[2], 'arrk')) or 0}
