-- drain.lua: empties part of a closed room's queue; the places are gone for good.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> limit: the most waiting visitors this call removes (the engine calls
--            again until nobody is left, so one call never holds Redis for long)
-- KEYS[9] -> vst:{room}:ntc: the notice registrations of those removed go with them
-- Returns {'ok', removed, still waiting}, or {'noroom'}, or {'open'} when the room's
-- mode is not closed (nothing is removed).
-- Removes waiting (and pre-queue) visitors in score order, in batches of 1000,
-- with their heartbeats, and records each in left at its queue score, so a
-- drained ticket polls 'expired' and is never restored (poll.lua). Grants and
-- sessions are kept: they were promised before the room closed.
local limit = tonumber(ARGV[2])
local cfg = load_cfg()
if not cfg then return {'noroom'} end
if cfg.mode ~= 'closed' then return {'open'} end
local removed = 0
while removed < limit do
  local got = redis.call('ZPOPMIN', K_Q, math.min(1000, limit - removed))
  if #got == 0 then break end
  local k = #got / 2
  local fields, left, ms = {}, {}, {}
  for i = 1, k do
    local m = got[2 * i - 1]
    ms[i] = m
    fields[i] = hbf(m)
    left[2 * i - 1] = got[2 * i]
    left[2 * i] = m
  end
  redis.call('HDEL', K_HB, unpack(fields))
  redis.call('ZADD', K_LEFT, unpack(left))
  notice_forget(KEYS[9], nil, nil, ms)
  removed = removed + k
end
if removed > 0 then redis.call('HDEL', K_ST, 'sweep', 'oldest') end
local waiting = redis.call('ZCARD', K_Q)
redis.call('HSET', K_CFG, 'waiting', waiting)
return {'ok', removed, waiting}
