-- booking_hold.lua: a session holds seats and/or units of stock, all or nothing, for the event's TTL.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> session (the room's entry session, e.g. 'room:seq')
-- ARGV[3] -> n, the number of seats
-- ARGV[4] -> the session's room, or '' (the caller vouches for the session)
-- ARGV[5] -> the session's sequence (member of the room's active set), with a room
-- ARGV[6] -> the session's end (ms, its score in the active set), with a room
-- ARGV[7 .. 6+n] -> seat names (distinct)
-- ARGV[7+n ..] -> pairs: sku name, units (> 0, distinct skus)
-- KEYS[11], optional -> the room's active set vst:{room}:act, when the room is
-- the event's own id (the same hash tag, so the same slot): the session must
-- be in it with the end ARGV[6], not yet passed. Without it the caller checked.
-- A hold for a room session is listed under the session in K_SH, so the
-- session's end (complete, leave, expiry) drops it at once (booking_end.lua).
-- Returns {'ok', token, expires (ms)}; {'noevent'}; {'recovering'} (the event
-- came back from a total loss closed to holds: booking_define.lua); {'room'} (the event is not
-- the room's); {'ended'} (the session is no longer active); {'unknownseat', seat};
-- {'unknownsku', sku}; {'limit', items the session has, limit};
-- {'taken', seat, ...} (every requested seat held or sold by someone);
-- {'soldout', sku, units available}.
--
-- The token is the fencing token: max(fence + 1, now * 1000). One counter per
-- event, so any later hold of any seat or unit has a larger token; the time
-- floor keeps tokens growing even if Redis lost the counter (a failover that
-- dropped the last writes, a restart without persistence) as long as the
-- event issued fewer than 1,000 holds per millisecond on average.
local now = tonumber(ARGV[1])
local session = ARGV[2]
local n = tonumber(ARGV[3])

local cfg = redis.call('HMGET', K_INV, 'ttl', 'limit', 'fence', 'holds', 'room', 'recover')
if not cfg[1] then return {'noevent'} end
if cfg[6] == '1' then return {'recovering'} end
if ARGV[4] ~= '' then
  if cfg[5] ~= ARGV[4] then return {'room'} end
  if KEYS[11] then
    local ends = redis.call('ZSCORE', KEYS[11], ARGV[5])
    if not ends or tonumber(ends) ~= tonumber(ARGV[6]) or tonumber(ends) < now then return {'ended'} end
  end
end
local ttl, limit, fence, holds = tonumber(cfg[1]), tonumber(cfg[2]), tonumber(cfg[3]) or 0, tonumber(cfg[4]) or 0

-- Lazy expiry: a bounded batch of overdue holds, then any overdue hold on a
-- seat asked for, then more batches while a sku is short.
sweep(now, 64)

local seats, free = {}, {}
local want = 0
for i = 7, 6 + n do
  local s = ARGV[i]
  local v = redis.call('HGET', K_SEAT, s)
  if not v then return {'unknownseat', s} end
  -- An overdue hold's seats carry its mark, so expiring it makes this one 'a'.
  if string.sub(v, 1, 1) == 'h' and expire_if_due(string.sub(v, 2), now) then v = 'a' end
  seats[#seats + 1] = s
  free[#free + 1] = v == 'a'
  want = want + 1
end
local units = {}
for i = 7 + n, #ARGV, 2 do
  local sku, q = ARGV[i], tonumber(ARGV[i + 1])
  local avail = redis.call('HGET', K_STOCK, sku)
  if not avail then return {'unknownsku', sku} end
  units[#units + 1] = {sku, q, tonumber(avail)}
  want = want + q
end

local has = tonumber(redis.call('HGET', K_SESS, session)) or 0
if has + want > limit then return {'limit', has, limit} end

local taken = {'taken'}
for i, s in ipairs(seats) do
  if not free[i] then taken[#taken + 1] = s end
end
if #taken > 1 then return taken end
for _, u in ipairs(units) do
  local avail = u[3]
  while avail < u[2] and sweep(now, 256) > 0 do
    avail = tonumber(redis.call('HGET', K_STOCK, u[1]))
  end
  if avail < u[2] then return {'soldout', u[1], member(avail)} end
end

local token = math.max(fence + 1, now * 1000)
local t = member(token)
local expires = now + ttl
local parts = {}
for _, s in ipairs(seats) do redis.call('HSET', K_SEAT, s, 'h' .. t) end
for _, u in ipairs(units) do
  redis.call('HINCRBY', K_STOCK, u[1], -u[2])
  parts[#parts + 1] = u[1] .. '=' .. member(u[2])
end
redis.call('HSET', K_INV, 'fence', t, 'holds', member(holds + 1))
redis.call('HSET', K_HOLD, t, hold_record({session = session, expires = expires, seats_s = table.concat(seats, ','),
  units_s = table.concat(parts, ','), room = ARGV[4], created = now, ext = 0}))
redis.call('ZADD', K_EXP, member(expires), t)
emit(now, 'held', t, session, table.concat(seats, ','), table.concat(parts, ','), expires)
if ARGV[4] ~= '' then
  local cur = redis.call('HGET', K_SH, session)
  redis.call('HSET', K_SH, session, cur and (cur .. ',' .. t) or t)
end
session_add(session, want)
return {'ok', t, member(expires)}
