-- head.lua: reads a room's admission head and raises its floor (the durable
-- store's record of the head, given back to a room restored after a total loss).
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> floor: a score ('' for none), or 'now': the sequence a join would
--            get now (server_us), above every ticket issued before; the state's
--            floor becomes max(floor, ARGV[1])
-- Returns {head, floor}: decimal scores, '' for none. It needs no settings: the
-- restore raises the floor before it re-creates the room, so no poll can see
-- the room without it. lib.lua passed: a ticket at or below the floor never comes back.
local want = tonumber(ARGV[1])
if ARGV[1] == 'now' then want = server_us() end
local st = redis.call('HMGET', K_ST, 'head', 'floor')
local floor = tonumber(st[2])
if want and (not floor or want > floor) then
  floor = want
  redis.call('HSET', K_ST, 'floor', num(floor))
end
local out = {st[1] or '', ''}
if floor then out[2] = num(floor) end
return out
