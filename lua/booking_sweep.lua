-- booking_sweep.lua: expire overdue holds (the scripts also do it lazily); run by a schedule.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> the most holds to expire in this call
-- Returns {'ok', holds expired, holds still overdue} or {'noevent'}.
local now = tonumber(ARGV[1])
if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
local n = sweep(now, tonumber(ARGV[2]))
return {'ok', n, redis.call('ZCOUNT', K_EXP, '-inf', member(now))}
