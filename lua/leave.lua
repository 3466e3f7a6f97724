-- leave.lua: a visitor leaves the queue (or gives up a grant); the place is gone for good.
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9] -> vst:{room}:served:<day> SET the day's served visitors (lib.lua serve)
-- KEYS[10..12] -> vst:{room}:ntc, ntd, ntg: the visitor's notice goes with the place (lib.lua notice_forget)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the ticket's sequence)
-- ARGV[3] -> score (the ticket's queue score)
-- Returns {'ok'} or {'noroom'}. Leaving twice is fine.
local now = tonumber(ARGV[1])
local m = ARGV[2]
local score = tonumber(ARGV[3])
local cfg = load_cfg()
if not cfg then return {'noroom'} end
-- The state's counters for the report (tick.lua's history): left, waiting
-- visitors who left; lapsed, grants that ended unused.
if redis.call('ZREM', K_Q, m) == 1 then
  redis.call('HINCRBY', K_CFG, 'waiting', -1)
  redis.call('HINCRBY', K_ST, 'left', 1)
end
redis.call('HDEL', K_HB, hbf(m))
-- GT: a record kept to the end of a recovery window (tick.lua) stays that long.
if redis.call('ZREM', K_ADM, m) == 1 then
  redis.call('ZADD', K_USED, 'GT', now, m)
  serve(KEYS[9], m, now)
  redis.call('HINCRBY', K_ST, 'lapsed', 1)
end
if not passed(cfg, now, tonumber(m), score) then redis.call('ZADD', K_LEFT, ARGV[3], m) end
notice_forget(KEYS[10], KEYS[11], KEYS[12], {m})
return {'ok'}
