-- visitor.lua: where one visitor stands, for support (roomdb's Visitor). Reads only.
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9..] -> vst:{room}:served:<day> SET the served visitors of today and the days before
--              that a lookup can reach (lib.lua serve)
-- ARGV[1] -> member (the visitor's sequence, decimal)
-- ARGV[2] -> now (ms)
-- Returns {'noroom'}, or {'ok', queue score, rank (0-based; -2 in the queue before the opening,
-- when a place has no rank yet: below), heartbeat, grant deadline (ms),
-- session end (ms), used score (ms), left score, claimTTLSeconds, arrivals mark, served}, each
-- '' (rank -1) when the visitor is not there. arrivals mark: the highest sequence merged
-- from the arrival lists of a room that spreads (or spread) its joins (st arrw, 0 before the
-- first merge; '' for a room that never spread): above it, a join still arriving (poll.lua).
-- served: '1' when a served set has the visitor; else 'floor' when its sequence is at or
-- below the floor (the head recorded before a loss of Redis) or the tombstone, which no
-- ticket comes back from (restore.lua); else ''.
local m = ARGV[1]
if not redis.call('HGET', K_CFG, 'mode') then return {'noroom'} end
local rank = redis.call('ZRANK', K_Q, m)
-- Before the opening the pre-queue's order is its draw, secret from everyone
-- until then, support included (docs/SECURITY.md, "The lottery"): the rank is
-- not read out of the queue, and the lookup says prequeue without a place.
if rank and (tonumber(redis.call('HGET', K_CFG, 'opensAt')) or 0) > tonumber(ARGV[2]) then rank = -2 end
local mark = ''
if (tonumber(redis.call('HGET', K_CFG, 'arrk')) or 0) > 0 then mark = redis.call('HGET', K_ST, 'arrw') or '0' end
local served = ''
local st = redis.call('HMGET', K_ST, 'floor', 'dead')
local seq = tonumber(m)
if was_served(m, 9) then
  served = '1'
elseif seq <= (tonumber(st[1]) or -1) or seq <= (tonumber(st[2]) or -1) then
  served = 'floor'
end
return {'ok', redis.call('ZSCORE', K_Q, m) or '', rank or -1, redis.call('HGET', K_HB, hbf(m)) or '',
  redis.call('ZSCORE', K_ADM, m) or '', redis.call('ZSCORE', K_ACT, m) or '', redis.call('ZSCORE', K_USED, m) or '',
  redis.call('ZSCORE', K_LEFT, m) or '', redis.call('HGET', K_CFG, 'claimTTLSeconds') or '',
  mark, served}
