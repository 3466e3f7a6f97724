-- booking_confirm.lua: the origin turns a hold into an order, once per idempotency key.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> session (must be the hold's)
-- ARGV[3] -> token (the hold's fencing token)
-- ARGV[4] -> idempotency key
-- ARGV[5] -> the session's sequence in its room's active set, with KEYS[11]
-- KEYS[11], optional -> the room's active set vst:{room}:act when the event is
-- named after the session's room (the same slot): a hold of a room session
-- whose session is no longer there (or past its end) is dropped with the
-- session's other holds (booking_end.lua) and refused as stale.
-- Returns {'ok', order record} (a new order) or {'replay', order record} (this
-- key already confirmed this token: the same order, confirmed or since
-- cancelled); {'noevent'}; {'conflict'} (the key confirmed another hold);
-- {'confirmed'} (this token is already an order, under another key);
-- {'session'} (the hold, or the key's order, is another session's); {'expired'} (its TTL passed:
-- the hold is dropped now and its items return); {'stale'} (no such hold:
-- released, expired earlier, or never issued: its seats may be someone else's).
-- Order records are booking_lib.lua's; the order id is the token.
local now = tonumber(ARGV[1])
local session, t, key = ARGV[2], ARGV[3], ARGV[4]

if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end

local prior = redis.call('HGET', K_IDEM, key)
if prior then
  if prior ~= t then return {'conflict'} end
  local o = order_of(t)
  if o.session ~= session then return {'session'} end
  return {'replay', o.raw}
end
if redis.call('HEXISTS', K_ORDER, t) == 1 then return {'confirmed'} end

local h = hold_of(t)
if not h then return {'stale'} end
local refused = live_hold(t, h, session, nil, now)
if refused then return refused end
-- Defensive: the hold's seats are still marked as its own.
local mark = 'h' .. t
for _, s in ipairs(h.seats) do
  if redis.call('HGET', K_SEAT, s) ~= mark then return {'stale'} end
end

for _, s in ipairs(h.seats) do redis.call('HSET', K_SEAT, s, 'o' .. t) end
redis.call('HDEL', K_HOLD, t)
redis.call('ZREM', K_EXP, t)
if h.room ~= '' then sh_del(session, t) end
local rec = 'c|' .. session .. '|' .. t .. '|' .. member(now) .. '|' .. key .. '|' .. h.seats_s .. '|' .. h.units_s .. '||'
redis.call('HSET', K_ORDER, t, rec)
redis.call('HSET', K_IDEM, key, t)
redis.call('HINCRBY', K_INV, 'confirmed', 1)
redis.call('HINCRBY', K_INV, 'live', 1)
-- The order event goes out through the outbox, written here so it cannot be lost between this
-- script and the publisher; whoever publishes it removes it (booking_ack.lua).
redis.call('ZADD', K_OUT, member(now), 'c' .. t)
emit(now, 'confirmed', t, session, h.seats_s, h.units_s, 0)
return {'ok', rec}
