-- restore.lua: an operator gives a visitor back a lost place (roomdb's RestorePlace).
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the visitor's sequence, decimal)
-- Returns {'ok', position}, {'noroom'}, or {'stands'} when the visitor still waits,
-- holds a grant or a session, or was served (a consumed or given-up grant: I2).
-- A lost place (evicted, a grant that expired unclaimed, left, a place the head passed)
-- comes back at its sequence with a fresh heartbeat: below the head it is the next
-- admitted, within maxActive (I1). A pre-queue draw is not restored: the sequence is.
local now, m = tonumber(ARGV[1]), ARGV[2]
local cfg = load_cfg()
if not cfg then return {'noroom'} end
if redis.call('ZSCORE', K_Q, m) or redis.call('ZSCORE', K_ADM, m) or redis.call('ZSCORE', K_ACT, m)
  or redis.call('ZSCORE', K_USED, m) then
  return {'stands'}
end
redis.call('ZREM', K_LEFT, m)
redis.call('ZADD', K_Q, m, m)
local waiting = redis.call('ZCARD', K_Q)
redis.call('HSET', K_CFG, 'waiting', waiting)
redis.call('HINCRBY', K_ST, 'restored', 1)
local pos = redis.call('ZRANK', K_Q, m) + 1
local class = told(cfg, pos)
redis.call('HSET', K_HB, hbf(m), hbv(now, class))
return {'ok', pos}
