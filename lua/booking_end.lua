-- booking_end.lua: room sessions ended (completed, left, timed out); their holds go at once.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2 ..] -> room sessions ('room:seq') that ended
-- Returns {'ok', holds dropped} or {'noevent'}. Each session's live holds are
-- dropped (counted 'ended'; seats and units return) and the fence advances
-- past them, so a late confirm of one is refused (stale). Ending a session
-- with no holds, or twice, does nothing.
local now = tonumber(ARGV[1])
if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
local n = 0
for i = 2, #ARGV do n = n + end_session(ARGV[i], now) end
return {'ok', n}
