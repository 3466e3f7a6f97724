-- claim.lua: a failover gives the room to the region whose engine runs this
-- script (lib.lua REGION): from now on every script of another region's engine
-- fails before it writes (lib.lua fence_region), so a late tick, consume or join
-- of the old region changes nothing here. A claim that changes the room's
-- region raises its region epoch, the count of the failovers it went through;
-- a claim of the room's own region changes nothing (a failover run again).
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- Returns {'ok', epoch, previous region ('' for none)}, or {'noroom'}.
-- It runs without load_cfg: the room still names the old region.
if redis.call('EXISTS', K_CFG) == 0 then return {'noroom'} end
local c = redis.call('HMGET', K_CFG, 'region', 'regionEpoch')
local prev, epoch = c[1] or '', tonumber(c[2]) or 0
if prev == REGION then return {'ok', tostring(epoch), prev} end
epoch = epoch + 1
redis.call('HSET', K_CFG, 'region', REGION, 'regionEpoch', tostring(epoch))
-- A room changing region opens a recovery window (lib.lua recovery), as a
-- room re-created after a loss does: the joins of the old region's last
-- second, which this store never saw, come back from their tickets even when
-- the head passed them before their first poll here. The floor rises to the
-- head this store holds (lib.lua passed): whoever it admitted or passed over
-- never comes back through the window, though used forgot them long ago.
local st = redis.call('HMGET', K_ST, 'head', 'floor')
local h, f = tonumber(st[1]), tonumber(st[2])
if h and (not f or h > f) then redis.call('HSET', K_ST, 'floor', st[1]) end
redis.call('HSET', K_ST, 'epoch', member(server_us()), 'created', ARGV[1])
return {'ok', tostring(epoch), prev}
