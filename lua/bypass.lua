-- bypass.lua: the holder of a bypass invitation joins ahead of the line.
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9] -> vst:{room}:ref:<day> HASH the day's reference hash (lib.lua remember): the
--            value is the sequence after a 'b', so that support's restore puts a lost place
--            back ahead of the line (restore.lua)
-- KEYS[10] -> vst:{room}:trail:<day> HASH the day's trail (lib.lua trail_put): a grant in
--             passthrough is recorded there
-- ARGV[1] -> now (ms)
-- ARGV[2] -> visitor id (server-generated)
-- ARGV[3] -> the settings version the caller has cached ('' for none)
-- Returns the place shape of lib.lua's reply, state 'waiting', 'paused', 'prequeue' or,
-- in passthrough, 'admitted'; or {'noroom'}, {'closed'}.
-- The place is ahead of every draw (0..1) and every sequence: score = seq / 2^53 - 1,
-- in [-1, 0), so bypass holders keep join order among themselves. The tick admits
-- from the front within maxActive and the bucket like anyone (I1); a negative score
-- never moves the head (the highest score admitted). Its ticket carries only the
-- sequence, so a place a poll restores (evicted, data loss) comes back at the
-- sequence, in line; an operator's restore puts it back ahead (restore.lua).
local now = tonumber(ARGV[1])
local cfg = load_cfg()
if not cfg then return {'noroom'} end
if cfg.mode == 'closed' then return {'closed'} end
cfg.known = ARGV[3]
cfg.trail = KEYS[10]
local seq = next_seq(tonumber(redis.call('HGET', K_ST, 'seq')), 0)
local m = member(seq)
redis.call('HSET', K_ST, 'seq', m)
remember(KEYS[9], ARGV[2], 'b' .. m, now)
if cfg.mode == 'passthrough' then
  local deadline = grant(cfg, now, m, seq)
  count_admissions(now, 1)
  return reply(cfg, 'admitted', m, '', 0, redis.call('ZCARD', K_Q), deadline)
end
redis.call('ZADD', K_Q, bypass_score(seq), m)
local waiting = redis.call('HINCRBY', K_CFG, 'waiting', 1)
local pos = redis.call('ZRANK', K_Q, m) + 1
local state = 'waiting'
if cfg.mode == 'paused' then state = 'paused' elseif cfg.opensAt > now then state = 'prequeue' end
local class, within
if state == 'waiting' then class, within = told(cfg, pos) else class, within = told(cfg) end
redis.call('HSET', K_HB, hbf(m), hbv(now, class))
return reply(cfg, state, m, '', pos, waiting, 0, within)
