-- config.lua: creates or updates a room's settings, live.
-- KEYS: the room's keys (lib.lua); a scheduled change's settings add, after them:
-- KEYS[9]  -> vst:{room}:schedlease:<id>  STRING  the change's lease (schedfree.lua)
-- KEYS[10] -> vst:{room}:sched            HASH    the schedule (schedput.lua)
-- KEYS[11] -> vst:{room}:schedv           HASH    the schedule's version (schedput.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> seed for the pre-queue draw (random; kept if the room has one)
-- ARGV[3] -> version of these settings, '<fence>.<random>' (new per PUT; replies carry it, the Go side
--            caches by it; the fence is fence.lua's, already on the room's arrival shards)
-- ARGV[4] -> the lease's token of a scheduled change's settings, '' for any other change
-- ARGV[5] -> that scheduled change's id ('' for none)
-- ARGV[6..] -> field, value pairs of the settings, named and encoded by internal/room's settings table
--              (validated by the caller; opensAt in ms, 0 for none)
-- Returns {'created'} or {'updated'}, or {'raced'} (nothing stored) when the settings stored carry a
-- later fence: another change, begun after this one, was stored first, or {'lost'} (nothing stored)
-- when a scheduled change's lease is no longer the caller's.
-- A room created (or re-created after a data loss) records its epoch: the
-- sequence floor at that instant (Redis server time in microseconds, as
-- enqueue computes it) and when (ms). Tickets below the epoch were issued
-- before; for two heartbeat windows they keep their right to come back (lib.lua
-- recovery), whoever the head passed meanwhile.
local now = tonumber(ARGV[1])
-- A room a failover gave to another region takes no settings from this one.
fence_region(redis.call('HGET', K_CFG, 'region'))
-- A scheduled change is applied only under its lease, and leaves the schedule
-- (and its lease) in the same step: a process whose lease ran out (a slow
-- durable write) applies nothing, and a process that takes the lease after
-- this step finds no change to apply again.
local lease = ARGV[4] ~= ''
if lease and redis.call('GET', KEYS[9]) ~= ARGV[4] then return {'lost'} end
-- Stored above a later fence, these settings would be older than what the
-- shards were fenced for, and no join would spread again: the caller begins again.
if fence_of(ARGV[3]) < fence_of(redis.call('HGET', K_CFG, 'ver')) then return {'raced'} end
local created = redis.call('EXISTS', K_CFG) == 0
local fields = {'ver', ARGV[3]}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
-- A shorter heartbeat window must not evict visitors who follow the poll
-- interval the old one gave them (up to half of it): the old window keeps
-- applying for one old window more. arrk is the most arrival shards the room's
-- joins have spread over (never lowered, so the tick keeps merging what a
-- shard took before a change).
local old = tonumber(redis.call('HGET', K_CFG, 'heartbeatTTLSeconds'))
for i = 6, #ARGV - 1, 2 do
  if ARGV[i] == 'heartbeatTTLSeconds' and old and tonumber(ARGV[i + 1]) < old then
    redis.call('HSET', K_ST, 'hbgrace', tostring(old * 1000), 'hbgraceuntil', tostring(now + old * 1000))
  elseif ARGV[i] == 'joinShards' and tonumber(ARGV[i + 1]) > 0 then
    local k = tonumber(redis.call('HGET', K_CFG, 'arrk')) or 0
    if tonumber(ARGV[i + 1]) > k then redis.call('HSET', K_CFG, 'arrk', ARGV[i + 1]) end
  end
end
redis.call('HSET', K_CFG, unpack(fields))
if lease then
  redis.call('DEL', KEYS[9])
  if redis.call('HDEL', KEYS[10], ARGV[5]) == 1 then redis.call('HINCRBY', KEYS[11], 'v', 1) end
end
-- The queue's count (lib.lua), exact after every PUT (a room re-created after a loss, an upgrade).
redis.call('HSET', K_CFG, 'waiting', redis.call('ZCARD', K_Q))
redis.call('HSETNX', K_CFG, 'seed', ARGV[2])
-- Whether every slot is taken (lib.lua pace), as the new maxActive finds the
-- room, so a new cap is believed at once rather than after the ticks' average.
if free_slots(load_cfg()) > 0 then
  redis.call('HSET', K_CFG, 'full', '0')
  redis.call('HSET', K_ST, 'fl', '0')
else
  redis.call('HSET', K_CFG, 'full', '1')
  redis.call('HSET', K_ST, 'fl', '1')
end
-- A new room's bucket starts empty, refilled from now.
redis.call('HSETNX', K_ST, 'refill', tostring(now))
redis.call('HSETNX', K_ST, 'since', tostring(now))
if created then
  -- A room begins as its creating region's: another region's engine writes it
  -- only once a failover gave it (claim.lua).
  if REGION ~= '' then redis.call('HSET', K_CFG, 'region', REGION) end
  if redis.call('HSETNX', K_ST, 'epoch', member(server_us())) == 1 then
    redis.call('HSET', K_ST, 'created', tostring(now))
  end
  steer_created(now)
  return {'created'}
end
return {'updated'}
