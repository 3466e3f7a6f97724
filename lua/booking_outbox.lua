-- booking_outbox.lua: the order events not yet published, oldest first.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> the most to return
-- ARGV[2] -> only those written at or before this time (ms): the sweep leaves
--            the newest to the route that wrote them, which publishes them at once
-- Returns {'ok', id, record, id, record, ...}: an order event's id is
-- 'c<token>' (the order was confirmed) or 'x<token>' (cancelled), its record the
-- order's; an inventory event's id is its whole record ('i<seq>|…', booking_lib.lua's
-- emit), with an empty record beside it. An order's record is the
-- order's as it is now (a confirmed event of an order since cancelled is
-- rebuilt by booking.go without the cancellation). An id whose order is gone
-- (never, unless keys were deleted by hand) is dropped.
local ids = redis.call('ZRANGE', K_OUT, '-inf', ARGV[2], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
local out = {'ok'}
for _, id in ipairs(ids) do
  local r = ''
  if string.sub(id, 1, 1) ~= 'i' then r = redis.call('HGET', K_ORDER, string.sub(id, 2)) end
  if r then
    out[#out + 1] = id
    out[#out + 1] = r
  else
    redis.call('ZREM', K_OUT, id)
  end
end
return out
