-- booking_cancel.lua: compensation. A confirmed order is cancelled (payment
-- failed after confirm, a refund): its seats and units return, once.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> order id (the token it confirmed)
-- ARGV[3] -> reason (free text, may be empty)
-- Returns {'ok', order record} (cancelled now), {'replay', order record}
-- (already cancelled: nothing returned twice), {'unknown'} (no such order), or {'noevent'}.
local now = tonumber(ARGV[1])
local t, reason = ARGV[2], ARGV[3]

if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
local o = order_of(t)
if not o then return {'unknown'} end
if o.state == 'x' then return {'replay', o.raw} end

local mark = 'o' .. t
for _, s in ipairs(o.seats) do
  if redis.call('HGET', K_SEAT, s) == mark then redis.call('HSET', K_SEAT, s, 'a') end
end
local n = #o.seats
for _, u in ipairs(o.units) do
  redis.call('HINCRBY', K_STOCK, u[1], u[2])
  n = n + u[2]
end
session_add(o.session, -n)
local rec = 'x|' .. o.session .. '|' .. t .. '|' .. o.at .. '|' .. o.idem .. '|' .. o.seats_s .. '|' .. o.units_s ..
  '|' .. member(now) .. '|' .. reason
redis.call('HSET', K_ORDER, t, rec)
redis.call('HINCRBY', K_INV, 'cancelled', 1)
redis.call('HINCRBY', K_INV, 'live', -1)
redis.call('ZADD', K_OUT, member(now), 'x' .. t)
emit(now, 'cancelled', t, o.session, o.seats_s, o.units_s, 0)
return {'ok', rec}
