-- notice.lua: a waiting visitor asks for a notice of their turn (a push or an email), or
-- withdraws it (docs/ENGINE.md, "Notices").
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9]  -> vst:{room}:ntc HASH  registrations: member -> 'expires (ms):sealed address'
-- KEYS[10] -> vst:{room}:nrl:<network> STRING  add: the network's sign-up limiter (GCRA)
-- KEYS[11] -> vst:{room}:nra:<address> STRING  add: the address's sign-up limiter (GCRA)
-- ARGV[1] -> now (ms)   ARGV[2] -> 'add' or 'drop'   ARGV[3] -> member (the ticket's sequence)
-- ARGV[4] -> add: when the registration expires (ms: the ticket's expiry)
-- ARGV[5] -> add: the sealed address (package notice; the engine never reads it)
-- ARGV[6], ARGV[7] -> add: a network signs up once every ARGV[6] ms, with a burst of ARGV[7]
-- ARGV[8], ARGV[9] -> add: an address is signed up once every ARGV[8] ms, with a burst of ARGV[9]
-- Returns {'ok'}, {'noroom'}, {'off'} (add: the room offers no notices, notifiedClaimTTLSeconds
-- 0), {'noplace'} (add: the member is not in the queue: admitted, gone, or a join on an arrival
-- shard not merged yet), or {'limited', wait ms} (add: the network or the address signed up too often).
-- A place has one registration: another replaces it. While it stands, the place's heartbeat has
-- the class NOTIFIED (lib.lua): held a day without a poll, granted the notified claim window
-- (tick.lua). A drop gives the heartbeat back the longest told poll, from now (the request is
-- the visitor's); a visitor of an arrival shard far from the front, whose heartbeat is the
-- shard's, loses the room's copy instead. Dropping what is not there is fine.
local now = tonumber(ARGV[1])
local m = ARGV[3]
local cfg = load_cfg()
if not cfg then return {'noroom'} end
local f = hbf(m)
local v = redis.call('HGET', K_HB, f)
if ARGV[2] == 'drop' then
  redis.call('HDEL', KEYS[9], m)
  if v and math.floor(hbraw(v) / SEEN) == NOTIFIED then
    local rank = redis.call('ZRANK', K_Q, m)
    if rank and cfg.shards > 0 and on_shard(tonumber(m), cfg.shards) and cfg.zone and rank + 1 > cfg.zone then
      redis.call('HDEL', K_HB, f)
    else
      redis.call('HSET', K_HB, f, hbv(now, told(cfg)))
    end
  end
  return {'ok'}
end
if cfg.notify <= 0 then return {'off'} end
if not redis.call('ZSCORE', K_Q, m) then return {'noplace'} end
local wait = limit_gcra(tonumber(ARGV[6]), tonumber(ARGV[7]), KEYS[10], now)
if wait == 0 then wait = limit_gcra(tonumber(ARGV[8]), tonumber(ARGV[9]), KEYS[11], now) end
if wait > 0 then return {'limited', wait} end
redis.call('HSET', KEYS[9], m, ARGV[4] .. ':' .. ARGV[5])
redis.call('HSET', K_HB, f, hbv(hbt(v) or now, NOTIFIED))
redis.call('HINCRBY', K_ST, 'nsignups', 1)
return {'ok'}
