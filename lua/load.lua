-- load.lua: the origin reports its load (docs/ENGINE.md, "Steering").
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> the load, 0..1 (the Vestibule-Load header of consume or complete)
-- Returns {'ok'}, or {'noroom'}. The latest report counts: the tick's pace
-- step (pace.lua pace_tick) reads it while it is younger than LOAD_STALE.
if redis.call('EXISTS', K_CFG) == 0 then return {'noroom'} end
redis.call('HSET', K_ST, 'load', ARGV[2], 'loadat', ARGV[1])
return {'ok'}
