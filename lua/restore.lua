-- restore.lua: an operator gives a visitor back a lost place (roomdb's RestorePlace).
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9..] -> vst:{room}:served:<day> SET the served visitors of today and the days before
--              that a lookup can reach (lib.lua serve)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the visitor's sequence, decimal)
-- ARGV[3] -> '1' when the visitor joined with a bypass invitation (its reference says so:
--            bypass.lua), '' otherwise
-- Returns {'ok', position}, {'noroom'}, or {'stands'} when the visitor still waits,
-- holds a grant or a session, or was served (a consumed or given-up grant: I2), or
-- when nobody can tell (below).
-- A lost place (evicted, a grant that expired unclaimed, left, a place the head passed)
-- comes back with a fresh heartbeat at its sequence, or a bypass holder's ahead of the
-- line as it joined (lib.lua bypass_score): below the head it is the next admitted,
-- within maxActive (I1). A pre-queue draw is not restored: the sequence is.
local now, m = tonumber(ARGV[1]), ARGV[2]
local cfg = load_cfg()
if not cfg then return {'noroom'} end
if redis.call('ZSCORE', K_Q, m) or redis.call('ZSCORE', K_ADM, m) or redis.call('ZSCORE', K_ACT, m)
  or redis.call('ZSCORE', K_USED, m) or was_served(m, 9) then
  return {'stands'}
end
-- A ticket at or below the floor (the head recorded before a loss of Redis,
-- which took the served records with it) or of a deleted incarnation of the
-- room was admitted or passed over before: whether it was served cannot be
-- known, so it never comes back (as a poll's: lib.lua passed, buried).
local seq = tonumber(m)
if buried(seq) or seq <= (tonumber(redis.call('HGET', K_ST, 'floor')) or -1) then return {'stands'} end
local score = m
if ARGV[3] == '1' then score = bypass_score(seq) end
redis.call('ZREM', K_LEFT, m)
redis.call('ZADD', K_Q, score, m)
local waiting = redis.call('ZCARD', K_Q)
redis.call('HSET', K_CFG, 'waiting', waiting)
redis.call('HINCRBY', K_ST, 'restored', 1)
local pos = redis.call('ZRANK', K_Q, m) + 1
local class = told(cfg, pos)
redis.call('HSET', K_HB, hbf(m), hbv(now, class))
return {'ok', pos}
