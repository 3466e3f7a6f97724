-- booking_view.lua: what is left to book. Expires overdue holds first (at most
-- ARGV[2]), so a view never shows a seat held past its TTL unless more than
-- that many were overdue.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> the most overdue holds to expire first
-- Returns {'ok', {seat, state, ...}, {sku, units available, ...}, {counter, value, ...}}
-- with state 'a' (available), 'h' (held) or 'o' (sold); counters are
-- booking_define.lua's and the scripts' (holds, confirmed, cancelled, released,
-- expired, live, fence, ttl, limit, defined); or {'noevent'}.
local now = tonumber(ARGV[1])
if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
sweep(now, tonumber(ARGV[2]))
local seats = redis.call('HGETALL', K_SEAT)
for i = 2, #seats, 2 do seats[i] = string.sub(seats[i], 1, 1) end
return {'ok', seats, redis.call('HGETALL', K_STOCK), redis.call('HGETALL', K_INV)}
