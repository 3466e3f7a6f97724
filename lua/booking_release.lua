-- booking_release.lua: a hold is given up before its TTL; its seats and units return at once.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> session (must be the hold's)
-- ARGV[3] -> token (the hold's fencing token)
-- Returns {'ok', items returned}; {'gone'} (no such hold: already released or
-- expired; nothing to do); {'confirmed'} (the hold is an order: cancel it
-- instead); {'session'} (the hold is another session's); {'noevent'}.
local now = tonumber(ARGV[1])
local session, t = ARGV[2], ARGV[3]

if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
local h = hold_of(t)
if not h then
  if redis.call('HEXISTS', K_ORDER, t) == 1 then return {'confirmed'} end
  return {'gone'}
end
if h.session ~= session then return {'session'} end
drop_hold(t, h, 'released', now)
return {'ok', items(h)}
