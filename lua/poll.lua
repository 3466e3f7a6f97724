-- poll.lua: a visitor with a ticket asks where they stand; it is their heartbeat.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the ticket's sequence, decimal)
-- ARGV[3] -> score (the ticket's draw if it has one, else its sequence)
-- ARGV[4] -> min interval (ms) between polls of one visitor; 0 for none
-- Returns the place shape of lib.lua's reply, state one of 'prequeue', 'waiting',
-- 'paused', 'closed', 'admitted' (deadline = claim deadline), 'active' (deadline =
-- session end), 'expired'; or {'unknown'} for an unknown room, or {'slow', wait ms}
-- when a waiting visitor polls again sooner than the min interval.
-- A member found nowhere whose score is above the room's head, and who did not
-- leave, is restored at that score (I4): eviction and data loss are one case.
local now = tonumber(ARGV[1])
local m = ARGV[2]
local score = tonumber(ARGV[3])

local cfg, raw = load_cfg()
if not cfg then return {'unknown'} end

local rank = redis.call('ZRANK', K_Q, m)
if not rank then
  local d = redis.call('ZSCORE', K_ADM, m)
  if d then
    if tonumber(d) < now then return reply('expired', m, '', 0, 0, 0, raw) end
    return reply('admitted', m, '', 0, 0, tonumber(d), raw)
  end
  local e = redis.call('ZSCORE', K_ACT, m)
  if e then return reply('active', m, '', 0, 0, tonumber(e), raw) end
  if cfg.mode == 'closed' then return reply('closed', m, '', 0, redis.call('ZCARD', K_Q), 0, raw) end
  if score <= head() or redis.call('ZSCORE', K_LEFT, m) or redis.call('ZSCORE', K_USED, m) then
    return reply('expired', m, '', 0, 0, 0, raw)
  end
  redis.call('ZADD', K_Q, ARGV[3], m)
  redis.call('HINCRBY', K_ST, 'restored', 1)
  rank = redis.call('ZRANK', K_Q, m)
end

local minInterval = tonumber(ARGV[4]) or 0
if minInterval > 0 then
  local seen = tonumber(redis.call('ZSCORE', K_HB, m))
  if seen and now - seen < minInterval and now >= seen then return {'slow', minInterval - (now - seen)} end
end
redis.call('ZADD', K_HB, now, m)
local waiting = redis.call('ZCARD', K_Q)
if cfg.mode == 'closed' then return reply('closed', m, '', 0, waiting, 0, raw) end
if cfg.opensAt > now then return reply('prequeue', m, '', 0, waiting, 0, raw) end
local state = 'waiting'
if cfg.mode == 'paused' then state = 'paused' end
return reply(state, m, '', rank + 1, waiting, 0, raw)
