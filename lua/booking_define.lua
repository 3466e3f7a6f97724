-- booking_define.lua: the admin defines (or replaces) an event's inventory.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> hold TTL (ms)
-- ARGV[3] -> per-session limit (items held or bought at once)
-- ARGV[4] -> the room whose entry sessions may hold (booking.go checks the id)
-- ARGV[5] -> the most extensions of one hold (0: none)
-- ARGV[6] -> the longest a hold may last from its creation, extensions included (ms)
-- ARGV[7] -> '1' for a restore (the event lost with Redis, defined again from
--            the store): only if the event is missing, else {'exists'}; the
--            event comes back closed to holds (below). '2' for a definition
--            of an event the store already has: an event missing here was lost
--            with Redis, so it comes back closed too. '' otherwise
-- ARGV[8] -> n, the number of seats
-- ARGV[9 .. 8+n] -> seat names (distinct)
-- ARGV[9+n ..] -> pairs: sku name, units (distinct skus, units >= 0)
-- An event that comes back closed ('recover' = '1', 'restored' its time) sells
-- nothing it may have sold before the loss: holds are refused until
-- booking_rebuild.lua marks what the origin recorded as sold and reopens it.
-- A later definition keeps it closed.
-- Returns {'ok', fence, closed} (the token counter, kept across definitions;
-- closed 'now' when this call closed the event to holds, '1' when it was
-- closed already, '' when it is open), or
-- {'inuse', holds, orders}: an event with live holds or confirmed, uncancelled
-- orders is never replaced (release or cancel them first).
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[8])

local existed = redis.call('EXISTS', K_INV) == 1
if existed then
  if ARGV[7] == '1' then return {'exists'} end
  local holds = redis.call('HLEN', K_HOLD)
  local live = tonumber(redis.call('HGET', K_INV, 'live')) or 0
  if holds > 0 or live > 0 then return {'inuse', holds, live} end
end

redis.call('DEL', K_SEAT, K_STOCK, K_EXP, K_SESS, K_SH)
-- HSET in chunks: Lua's unpack has a C-stack limit of about 8,000 values.
local batch = {}
local function flush(key)
  if #batch > 0 then redis.call('HSET', key, unpack(batch)) end
  batch = {}
end
for i = 9, 8 + n do
  batch[#batch + 1] = ARGV[i]
  batch[#batch + 1] = 'a'
  if #batch >= 1000 then flush(K_SEAT) end
end
flush(K_SEAT)
for i = 9 + n, #ARGV, 2 do
  batch[#batch + 1] = ARGV[i]
  batch[#batch + 1] = ARGV[i + 1]
  if #batch >= 1000 then flush(K_STOCK) end
end
flush(K_STOCK)

-- The fence is never reset: a token issued before this definition stays below
-- every token issued after it.
redis.call('HSET', K_INV, 'ttl', ARGV[2], 'limit', ARGV[3], 'room', ARGV[4], 'maxext', ARGV[5], 'maxhold', ARGV[6],
  'defined', member(now), 'live', '0')
redis.call('HSETNX', K_INV, 'fence', '0')
redis.call('HSETNX', K_INV, 'iepoch', member(now))
if not existed and (ARGV[7] == '1' or ARGV[7] == '2') then
  redis.call('HSET', K_INV, 'recover', '1', 'restored', member(now))
  return {'ok', redis.call('HGET', K_INV, 'fence'), 'now'}
end
local st = redis.call('HMGET', K_INV, 'fence', 'recover')
return {'ok', st[1], st[2] or ''}
