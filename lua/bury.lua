-- bury.lua: raises a room's tombstone ('dead' in st): the highest sequence an
-- incarnation of the room that is deleted (or being deleted) issued. A ticket
-- at or below it never comes back (lib.lua buried); the room's next sequences
-- are issued above it ('seq' is raised too).
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> 'now': the room is being deleted, the tombstone covers every
--            sequence issued so far (its last, the server's time in µs, and
--            ARGV[2]); or a sequence: the tombstone the durable store kept
--            (the room is being restored or created again), which is only
--            taken when higher
-- ARGV[2] -> with 'now', the highest sequence its arrival shards issued ('' for none)
-- Returns {dead}: the tombstone (decimal), '' for none. It needs no settings:
-- the tombstone outlives them.
local st = redis.call('HMGET', K_ST, 'dead', 'seq')
local dead = tonumber(st[1])
local want
if ARGV[1] == 'now' then
  want = math.max(tonumber(st[2]) or 0, tonumber(ARGV[2]) or 0, server_us())
else
  want = tonumber(ARGV[1])
end
if want and (not dead or want > dead) then
  dead = want
  redis.call('HSET', K_ST, 'dead', member(dead))
  if dead > (tonumber(st[2]) or 0) then redis.call('HSET', K_ST, 'seq', member(dead)) end
end
if not dead then return {''} end
return {member(dead)}
