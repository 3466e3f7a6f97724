-- booking_extend.lua: the origin gives a hold more time (a payment under way), within the event's bounds.
-- KEYS: the event's booking keys (booking_lib.lua); KEYS[11], optional: the
-- room's active set, as booking_confirm.lua takes it
-- ARGV[1] -> now (ms)
-- ARGV[2] -> session (must be the hold's)
-- ARGV[3] -> token (the hold's fencing token; an extension keeps it)
-- ARGV[4] -> the extension's number: 1 for the hold's first, 2 for its second…
-- ARGV[5] -> the session's sequence in its room's active set, with KEYS[11]
-- Returns {'ok', expires (ms), extensions} (extended now: expires = min(now +
-- ttl, created + maxhold)); {'replay', expires, extensions} (that extension
-- was made already: nothing changes); {'extlimit', maxext} (more than the
-- event's maxext, or the hold is at its longest life already); {'extorder',
-- extensions} (the number skips one); {'noevent'}; {'confirmed'}; {'stale'}
-- (no live hold: released, expired earlier, ended with its session, never
-- issued); {'session'}; {'expired'} (its time passed: dropped now).
local now = tonumber(ARGV[1])
local session, t, n = ARGV[2], ARGV[3], tonumber(ARGV[4])

local cfg = redis.call('HMGET', K_INV, 'ttl', 'maxext', 'maxhold', 'room')
if not cfg[1] then return {'noevent'} end
local h = hold_of(t)
if not h then
  if redis.call('HEXISTS', K_ORDER, t) == 1 then return {'confirmed'} end
  return {'stale'}
end
local refused = live_hold(t, h, session, cfg[4] or false, now)
if refused then return refused end
if n <= h.ext then return {'replay', member(h.expires), h.ext} end
local ttl, maxext = tonumber(cfg[1]), tonumber(cfg[2]) or 0
if n > maxext then return {'extlimit', maxext} end
if n > h.ext + 1 then return {'extorder', h.ext} end
local created = h.created or (h.expires - ttl)
local ex = math.min(now + ttl, created + (tonumber(cfg[3]) or ttl))
if ex <= h.expires then return {'extlimit', maxext} end
h.expires, h.ext, h.created = ex, n, created
redis.call('HSET', K_HOLD, t, hold_record(h))
redis.call('ZADD', K_EXP, member(ex), t)
redis.call('HINCRBY', K_INV, 'extended', 1)
emit(now, 'extended', t, session, h.seats_s, h.units_s, ex)
return {'ok', member(ex), n}
