-- booking_orders.lua: a page of the event's orders, for reconciliation.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> the cursor ('0' to start)
-- ARGV[2] -> about how many orders a page holds (HSCAN's COUNT)
-- Returns {'ok', next cursor ('0': the last page), record, record, ...} with
-- each order's record (booking_lib.lua's), or {'noevent'}.
if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
local page = redis.call('HSCAN', K_ORDER, ARGV[1], 'COUNT', tonumber(ARGV[2]))
local out = {'ok', page[1]}
for i = 2, #page[2], 2 do out[#out + 1] = page[2][i] end
return out
