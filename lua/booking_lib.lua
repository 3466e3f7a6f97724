-- booking_lib.lua: shared by every booking script; booking.go puts it in front
-- of each one. Like lib.lua it only defines locals and stays small.
--
-- Every booking script takes the same KEYS, all under the event's hash tag
-- {event} (one cluster slot; an event named like a room shares the room's slot):
-- KEYS[1] -> vst:{event}:bk:inv    HASH  definition and state: ttl (ms), limit, room, fence, defined, counters
-- KEYS[2] -> vst:{event}:bk:seat   HASH  seat -> 'a' (available), 'h<token>' (held), 'o<token>' (sold)
-- KEYS[3] -> vst:{event}:bk:stock  HASH  sku -> units available (never below zero)
-- KEYS[4] -> vst:{event}:bk:hold   HASH  token -> hold record 'session|expires|seats|units'
-- KEYS[5] -> vst:{event}:bk:exp    ZSET  holds: member token, score expiry (ms)
-- KEYS[6] -> vst:{event}:bk:sess   HASH  session -> items it holds or bought (released, expired and cancelled items leave)
-- KEYS[7] -> vst:{event}:bk:order  HASH  token -> order record 'state|session|token|at|idem|seats|units|cancelledAt|reason'
-- KEYS[8] -> vst:{event}:bk:idem   HASH  idempotency key -> token of the order it confirmed
-- KEYS[9] -> vst:{event}:bk:out    ZSET  outbox of events not yet published, score when (ms): order
--                                        events 'c<token>' (confirmed), 'x<token>' (cancelled); inventory
--                                        events 'i<seq, 15 digits>|kind|token|session|seats|units|expires|at|epoch' (emit)
-- KEYS[10] -> vst:{event}:bk:sh    HASH  room session ('room:seq') -> tokens of its live holds, 't1,t2'
--                                        (holds made for a room's entry session only: when it ends, they go)
--
-- Records are '|'-separated text: seat and sku names are [A-Za-z0-9_.-],
-- sessions and idempotency keys [A-Za-z0-9_.:@-] (booking.go checks), so no
-- field holds '|', ',' or '='; only the cancel reason (the last field) may.
-- seats is 'A1,A2' ('' for none), units 'sku=qty,sku=qty' ('' for none).
local K_INV, K_SEAT, K_STOCK, K_HOLD, K_EXP, K_SESS, K_ORDER, K_IDEM, K_OUT, K_SH =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]

-- Numbers go to Redis as strings made here (see lib.lua): tokens have 16 digits.
local function member(n) return string.format('%.0f', n) end

-- split cuts s at sep (one plain character) into at most max parts (the last
-- keeps the rest); an empty s gives no parts.
local function split(s, sep, max)
  local out = {}
  if s == nil or s == '' then return out end
  local start = 1
  while true do
    if max and #out == max - 1 then
      out[#out + 1] = string.sub(s, start)
      return out
    end
    local i = string.find(s, sep, start, true)
    if not i then
      out[#out + 1] = string.sub(s, start)
      return out
    end
    out[#out + 1] = string.sub(s, start, i - 1)
    start = i + 1
  end
end

-- units_of parses 'sku=qty,...' into an ordered list of {sku, qty}.
local function units_of(s)
  local out = {}
  for _, p in ipairs(split(s, ',')) do
    local kv = split(p, '=', 2)
    out[#out + 1] = {kv[1], tonumber(kv[2])}
  end
  return out
end

-- record reads the record under token in the HASH key, cut at '|' into at
-- most n fields: its text and its fields, nil when there is none.
local function record(key, token, n)
  local r = redis.call('HGET', key, token)
  if not r then return nil end
  return r, split(r, '|', n)
end

-- with_items sets t's seats and units from a record's two fields, as text
-- (seats_s, units_s) and as lists, and returns t.
local function with_items(t, seats_s, units_s)
  t.seats_s, t.units_s = seats_s or '', units_s or ''
  t.seats, t.units = split(t.seats_s, ','), units_of(t.units_s)
  return t
end

-- hold_of reads a hold record 'session|expires|seats|units|room|created|extensions'
-- (room: the room of a room session, '' when the caller vouched; created (ms)
-- and extensions: for extend; records of older versions stop after units):
-- nil when there is none.
local function hold_of(token)
  local r, f = record(K_HOLD, token, 7)
  if not r then return nil end
  local h = with_items({session = f[1], expires = tonumber(f[2])}, f[3], f[4])
  h.room, h.created, h.ext = f[5] or '', tonumber(f[6]), tonumber(f[7]) or 0
  return h
end

-- hold_record is a hold's record text (hold_of reads it).
local function hold_record(h)
  return h.session .. '|' .. member(h.expires) .. '|' .. h.seats_s .. '|' .. h.units_s .. '|' .. h.room .. '|' ..
    member(h.created or 0) .. '|' .. member(h.ext or 0)
end

-- sh_del forgets token among the live holds of a room session (K_SH).
local function sh_del(session, token)
  local cur = redis.call('HGET', K_SH, session)
  if not cur then return end
  local keep = {}
  for _, t in ipairs(split(cur, ',')) do
    if t ~= token then keep[#keep + 1] = t end
  end
  if #keep == 0 then redis.call('HDEL', K_SH, session) else redis.call('HSET', K_SH, session, table.concat(keep, ',')) end
end

-- items counts what a hold covers: its seats and its units.
local function items(h)
  local n = #h.seats
  for _, u in ipairs(h.units) do n = n + u[2] end
  return n
end

-- session_add moves a session's count of items by d, dropping it at zero.
local function session_add(session, d)
  if redis.call('HINCRBY', K_SESS, session, d) <= 0 then redis.call('HDEL', K_SESS, session) end
end

-- emit writes an inventory event to the outbox, numbered by the event's own
-- sequence ('iseq', from 1 in each epoch: 'iepoch', the first definition's
-- time in this Redis), so a consumer sees any gap. kind: held, extended,
-- released, expired, ended, confirmed, cancelled; expires 0 when none.
local function emit(now, kind, token, session, seats_s, units_s, expires)
  local seq = redis.call('HINCRBY', K_INV, 'iseq', 1)
  local epoch = redis.call('HGET', K_INV, 'iepoch') or '0'
  -- The sequence zero-padded: events of one millisecond (one score) sort by it.
  redis.call('ZADD', K_OUT, member(now), 'i' .. string.format('%015.0f', seq) .. '|' .. kind .. '|' .. token .. '|' .. session .. '|' ..
    seats_s .. '|' .. units_s .. '|' .. member(expires) .. '|' .. member(now) .. '|' .. epoch)
end

-- forget_hold gives a hold's seats and units back and forgets it, counting
-- nothing. A seat is returned only if it is still this hold's ('h<token>').
local function forget_hold(token, h)
  local mark = 'h' .. token
  for _, s in ipairs(h.seats) do
    if redis.call('HGET', K_SEAT, s) == mark then redis.call('HSET', K_SEAT, s, 'a') end
  end
  for _, u in ipairs(h.units) do redis.call('HINCRBY', K_STOCK, u[1], u[2]) end
  session_add(h.session, -items(h))
  if h.room ~= '' then sh_del(h.session, token) end
  redis.call('HDEL', K_HOLD, token)
  redis.call('ZREM', K_EXP, token)
end

-- drop_hold is forget_hold, counted: field names the counter it adds to and
-- the inventory event ('released', 'expired' or 'ended').
local function drop_hold(token, h, field, now)
  forget_hold(token, h)
  redis.call('HINCRBY', K_INV, field, 1)
  emit(now, field, token, h.session, h.seats_s, h.units_s, 0)
end

-- end_session drops every live hold of a room session that ended (completed,
-- left, timed out), counted as 'ended', and advances the fence past their
-- tokens (to max(fence + 1, now * 1000), as a hold would), so no confirm of
-- them can come after; returns how many it dropped.
local function end_session(session, now)
  local cur = redis.call('HGET', K_SH, session)
  if not cur then return 0 end
  local n = 0
  for _, t in ipairs(split(cur, ',')) do
    local h = hold_of(t)
    if h then
      drop_hold(t, h, 'ended', now)
      n = n + 1
    end
  end
  redis.call('HDEL', K_SH, session)
  if n > 0 then
    local fence = tonumber(redis.call('HGET', K_INV, 'fence')) or 0
    redis.call('HSET', K_INV, 'fence', member(math.max(fence + 1, now * 1000)))
  end
  return n
end

-- live_hold checks that hold h (token t) is still session's to use, for
-- confirm and extend: {'session'} when it is another session's; {'stale'}
-- when its room session ended (KEYS[11], the room's active set, and ARGV[5],
-- the session's sequence in it: the session's holds are dropped with it);
-- {'expired'} when its time passed (dropped now); nil when it is live. room is
-- the event's room when the caller has it (nil: read only when needed).
local function live_hold(t, h, session, room, now)
  if h.session ~= session then return {'session'} end
  if KEYS[11] and h.room ~= '' and h.room == (room or redis.call('HGET', K_INV, 'room')) then
    local ends = redis.call('ZSCORE', KEYS[11], ARGV[5])
    if not ends or tonumber(ends) < now then
      end_session(session, now)
      return {'stale'}
    end
  end
  if now >= h.expires then
    drop_hold(t, h, 'expired', now)
    return {'expired'}
  end
  return nil
end

-- expire drops a hold whose time passed, or only its expiry entry when the
-- hold is gone.
local function expire(token, now)
  local h = hold_of(token)
  if h then drop_hold(token, h, 'expired', now) else redis.call('ZREM', K_EXP, token) end
end

-- sweep expires at most max holds whose expiry is at or before now, oldest
-- first, and returns how many it expired.
local function sweep(now, max)
  local due = redis.call('ZRANGE', K_EXP, '-inf', member(now), 'BYSCORE', 'LIMIT', 0, max)
  for _, t in ipairs(due) do expire(t, now) end
  return #due
end

-- expire_if_due expires one hold if its time passed; true when it did.
local function expire_if_due(token, now)
  local e = redis.call('ZSCORE', K_EXP, token)
  if not e or tonumber(e) > now then return false end
  expire(token, now)
  return true
end

-- order_of reads an order record as its raw text and its fields.
local function order_of(token)
  local r, f = record(K_ORDER, token, 9)
  if not r then return nil end
  return with_items({raw = r, state = f[1], session = f[2], token = f[3], at = f[4], idem = f[5]}, f[6], f[7])
end
