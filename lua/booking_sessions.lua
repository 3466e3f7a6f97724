-- booking_sessions.lua: the room sessions that hold something, for the sweep
-- to ask their room which ended.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> the most to return
-- Returns {'ok', room, session, ...} (room: the event's room) or {'noevent'}.
local r = redis.call('HGET', K_INV, 'room')
if not r then return {'noevent'} end
local out = {'ok', r}
local cursor, n = '0', tonumber(ARGV[1])
repeat
  local page = redis.call('HSCAN', K_SH, cursor, 'COUNT', 100)
  cursor = page[1]
  for i = 1, #page[2], 2 do
    if #out - 2 < n then out[#out + 1] = page[2][i] end
  end
until cursor == '0' or #out - 2 >= n
return out
