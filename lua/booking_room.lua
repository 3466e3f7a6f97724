-- booking_room.lua: the room an event belongs to (whose origin credential
-- confirms, releases and cancels, and whose entry sessions may hold).
-- KEYS: the event's booking keys (booking_lib.lua)
-- Returns {'ok', room} or {'noevent'}.
local r = redis.call('HGET', K_INV, 'room')
if not r then
  if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
  return {'ok', ''}
end
return {'ok', r}
