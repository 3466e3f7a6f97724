-- booking_rebuild.lua: after a total loss, what the origin recorded as sold is
-- sold again in the kit, and the event reopens to holds.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> '1' to reopen the event to holds once these orders are in; '' to stay closed
-- ARGV[3] -> n, the number of orders
-- ARGV[4] -> the lowest order id the kit could have issued (booking.MinOrderID)
-- ARGV[5] -> the highest (now + booking.OrderIDAhead in µs, below 2^53: booking.MaxOrderID)
-- ARGV[6 ..] -> n triples: order id (its fencing token, decimal), seats 'A1,A2'
--               ('' for none), units 'sku=qty,...' ('' for none; skus sorted)
-- Only an event closed to holds ('recover', booking_define.lua) is rebuilt. An
-- order the event already has is left as it is (a call retried, or applied in
-- several calls). All or nothing: every seat must exist and be available (or
-- this order's already), no seat in two orders, every sku must have the units;
-- then each order becomes a confirmed order (no session, no idempotency key),
-- its seats 'o<token>', its units out of the stock, and the fence moves past
-- its token, so every later hold's token is larger than every recorded one.
-- Returns {'ok', orders added, orders already there, closed ('1' or '')};
-- {'noevent'}; {'open'} (the event is not closed to holds); {'badorder', order} (an id
-- out of ARGV[4]..ARGV[5]: above it the fence would pass what a Lua number counts, and every
-- later hold get one token); {'unknownseat', seat};
-- {'unknownsku', sku}; {'taken', seat, order} (the seat is another order's, or
-- held); {'soldout', sku, units available}.
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[3])
local lowest, highest = tonumber(ARGV[4]), tonumber(ARGV[5])

local st = redis.call('HMGET', K_INV, 'fence', 'recover')
if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
if st[2] ~= '1' then return {'open'} end
local fence = tonumber(st[1]) or 0

local todo, claimed, want = {}, {}, {}
local skipped = 0
for i = 0, n - 1 do
  local t, seats_s, units_s = ARGV[6 + 3 * i], ARGV[7 + 3 * i], ARGV[8 + 3 * i]
  local id = tonumber(t)
  if not id or id ~= math.floor(id) or id < lowest or id > highest or member(id) ~= t then return {'badorder', t} end
  if redis.call('HEXISTS', K_ORDER, t) == 1 then
    skipped = skipped + 1
  else
    local o = with_items({token = t}, seats_s, units_s)
    for _, s in ipairs(o.seats) do
      local v = redis.call('HGET', K_SEAT, s)
      if not v then return {'unknownseat', s} end
      if (v ~= 'a' and v ~= 'o' .. t) or (claimed[s] and claimed[s] ~= t) then
        return {'taken', s, claimed[s] or string.sub(v, 2)}
      end
      claimed[s] = t
    end
    for _, u in ipairs(o.units) do
      if not redis.call('HGET', K_STOCK, u[1]) then return {'unknownsku', u[1]} end
      want[u[1]] = (want[u[1]] or 0) + u[2]
    end
    todo[#todo + 1] = o
  end
end
for sku, q in pairs(want) do
  local avail = tonumber(redis.call('HGET', K_STOCK, sku))
  if avail < q then return {'soldout', sku, member(avail)} end
end

for _, o in ipairs(todo) do
  for _, s in ipairs(o.seats) do redis.call('HSET', K_SEAT, s, 'o' .. o.token) end
  for _, u in ipairs(o.units) do redis.call('HINCRBY', K_STOCK, u[1], -u[2]) end
  redis.call('HSET', K_ORDER, o.token, 'c||' .. o.token .. '|' .. member(now) .. '||' .. o.seats_s .. '|' .. o.units_s .. '||')
  fence = math.max(fence, tonumber(o.token))
end
if #todo > 0 then
  redis.call('HINCRBY', K_INV, 'live', #todo)
  redis.call('HINCRBY', K_INV, 'rebuilt', #todo)
  redis.call('HSET', K_INV, 'fence', member(fence))
end
if ARGV[2] == '1' then
  redis.call('HDEL', K_INV, 'recover')
  redis.call('HSET', K_INV, 'reopened', member(now))
  return {'ok', #todo, skipped, ''}
end
return {'ok', #todo, skipped, '1'}
