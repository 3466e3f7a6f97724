-- ssweep.lua: a tick's sweep of one arrival shard's heartbeats (spoll.lua), from a cursor.
-- KEYS[1] -> vst:{room~i}:st   HASH  sc (the sweep's HSCAN cursor), head (arrtrim.lua)
-- KEYS[2] -> vst:{room~i}:hb   HASH  the shard's heartbeats
-- ARGV[1] -> now (ms)   ARGV[2] -> the grace (ms, heartbeatTTLSeconds)   ARGV[3] -> how many to read
-- Drops the stale heartbeats (due, last seen + told, before now - grace, as the room's
-- sweep judges them, tick.lua) and the ROOM_HOME markers the head passed, and returns
-- the stale ones' sequences less the shard's residue (lib.lua shbase; whole, of a field
-- written before shf): the engine adds it and evicts them from the room's queue
-- (sevict.lua), unless the room's shard holds a heartbeat of theirs that is not stale.
local cutoff = tonumber(ARGV[1]) - tonumber(ARGV[2])
local st = redis.call('HMGET', KEYS[1], 'sc', 'head')
local head = tonumber(st[2]) or -1
local got = redis.call('HSCAN', KEYS[2], st[1] or '0', 'COUNT', ARGV[3])
local kv = got[2]
local del, stale, d, n = {}, {}, 0, 0
for i = 1, #kv, 2 do
  local x = hbraw(kv[i + 1])
  local c = math.floor(x / SEEN)
  if c == ROOM_HOME then
    if shbase(kv[i]) + 15 <= head then
      d = d + 1
      del[d] = kv[i]
    end
  elseif x - c * SEEN + told_ms(c) < cutoff then
    d = d + 1
    del[d] = kv[i]
    n = n + 1
    stale[n] = member(shbase(kv[i]))
  end
end
for i = 1, d, 1000 do redis.call('HDEL', KEYS[2], unpack(del, i, math.min(i + 999, d))) end
redis.call('HSET', KEYS[1], 'sc', got[1])
return stale
