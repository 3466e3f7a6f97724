-- booking_active.lua: is a room's entry session still active? The hold asks
-- when the event's keys and the room's are in different slots (the event is
-- not named after its room); otherwise booking_hold.lua checks in the same script.
-- Not prefixed by booking_lib.lua.
-- KEYS[1] -> vst:{room}:act  ZSET  sessions: member seq, score session end (ms)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> the session's sequence
-- ARGV[3] -> the session's end (ms) its booking session token says
-- Returns {'ok'} or {'ended'} (completed, reclaimed, past its end, or another session of that seq).
local ends = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not ends or tonumber(ends) ~= tonumber(ARGV[3]) or tonumber(ends) < tonumber(ARGV[1]) then return {'ended'} end
return {'ok'}
