-- booking_rebuild.lua: what the origin recorded as sold is sold again in the
-- kit, and the event reopens to holds: after a total loss, or after a close
-- (booking_close.lua: a region failover, whose standby lost the last writes).
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> '1' to reopen the event to holds once these orders are in; '' to stay closed
-- ARGV[3] -> n, the number of orders
-- ARGV[4] -> the lowest order id the kit could have issued (booking.MinOrderID)
-- ARGV[5] -> the highest (now + booking.OrderIDAhead in µs, below 2^53: booking.MaxOrderID)
-- ARGV[6 ..] -> n triples: order id (its fencing token, decimal), seats 'A1,A2'
--               ('' for none), units 'sku=qty,...' ('' for none; skus sorted)
-- Only an event closed to holds ('recover', booking_define.lua or
-- booking_close.lua) is rebuilt. An order the event already has is left as it
-- is (a call retried, or applied in several calls, or an order the closed
-- event had itself). A closed event may also hold seats and units, which a
-- restored one cannot; the origin's record wins over them:
--  - the hold whose token is the order's id (the origin has its confirm, the
--    kit lost it) becomes the order, with the hold's session;
--  - another hold on a seat of an order is given up (counted and emitted as
--    'released'): a confirm of it finds no hold (stale token), as the fence
--    would refuse it at the origin;
--  - a seat sold to another order of the kit refuses the call ('taken'): a
--    paid order is never dropped here; the origin's guard refused it, and its
--    compensation cancels it (then the call goes through).
-- All or nothing: every seat must exist, no seat in two orders, every sku must
-- have the units (the units of the holds given up and converted count as
-- there); then each order becomes a confirmed order (no idempotency key), its
-- seats 'o<token>', its units out of the stock, and the fence moves past its
-- token, so every later hold's token is larger than every recorded one.
-- Returns {'ok', orders added, orders already there, closed ('1' or ''), holds
-- given up, holds converted};
-- {'noevent'}; {'open'} (the event is not closed to holds); {'badorder', order} (an id
-- out of ARGV[4]..ARGV[5]: above it the fence would pass what a Lua number counts, and every
-- later hold get one token); {'unknownseat', seat};
-- {'unknownsku', sku}; {'taken', seat, order} (the seat is another order's of
-- the kit, or in two orders); {'soldout', sku, units available}.
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[3])
local lowest, highest = tonumber(ARGV[4]), tonumber(ARGV[5])

local st = redis.call('HMGET', K_INV, 'fence', 'recover')
if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
if st[2] ~= '1' then return {'open'} end
local fence = tonumber(st[1]) or 0

local todo, claimed, want = {}, {}, {}
-- drop: the live holds to take off, token -> hold (false: none), and back the
-- units they return, per sku.
local drop, dropped, back = {}, {}, {}
local function drop_for(t)
  if drop[t] ~= nil then return end
  local h = hold_of(t)
  drop[t] = h or false
  if not h then return end
  dropped[#dropped + 1] = t
  for _, u in ipairs(h.units) do back[u[1]] = (back[u[1]] or 0) + u[2] end
end
local skipped = 0
for i = 0, n - 1 do
  local t, seats_s, units_s = ARGV[6 + 3 * i], ARGV[7 + 3 * i], ARGV[8 + 3 * i]
  local id = tonumber(t)
  if not id or id ~= math.floor(id) or id < lowest or id > highest or member(id) ~= t then return {'badorder', t} end
  if redis.call('HEXISTS', K_ORDER, t) == 1 then
    skipped = skipped + 1
  else
    local o = with_items({token = t}, seats_s, units_s)
    drop_for(t)
    for _, s in ipairs(o.seats) do
      local v = redis.call('HGET', K_SEAT, s)
      if not v then return {'unknownseat', s} end
      if claimed[s] and claimed[s] ~= t then return {'taken', s, claimed[s]} end
      if string.sub(v, 1, 1) == 'h' then
        drop_for(string.sub(v, 2))
      elseif v ~= 'a' and v ~= 'o' .. t then
        return {'taken', s, string.sub(v, 2)}
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
  local avail = tonumber(redis.call('HGET', K_STOCK, sku)) + (back[sku] or 0)
  if avail < q then return {'soldout', sku, member(avail)} end
end

-- The holds go first: their seats and units return, then the orders take them.
local ids = {}
for _, o in ipairs(todo) do ids[o.token] = true end
local given, mine = 0, {}
for _, t in ipairs(dropped) do
  local h = drop[t]
  if ids[t] then
    -- The order's own hold: its items go back quietly and the order takes
    -- them again below, with its session (which keeps counting them).
    forget_hold(t, h)
    mine[t] = h
  else
    drop_hold(t, h, 'released', now)
    given = given + 1
  end
end

local converted = 0
for _, o in ipairs(todo) do
  for _, s in ipairs(o.seats) do redis.call('HSET', K_SEAT, s, 'o' .. o.token) end
  for _, u in ipairs(o.units) do redis.call('HINCRBY', K_STOCK, u[1], -u[2]) end
  local session = ''
  if mine[o.token] then
    session = mine[o.token].session
    session_add(session, items(o))
    converted = converted + 1
  end
  redis.call('HSET', K_ORDER, o.token, 'c|' .. session .. '|' .. o.token .. '|' .. member(now) .. '||' .. o.seats_s .. '|' .. o.units_s .. '||')
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
  return {'ok', #todo, skipped, '', given, converted}
end
return {'ok', #todo, skipped, '1', given, converted}
