-- stats.lua: a snapshot of a room.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- Returns {waiting, admitted, active, admitted last minute, evicted, consumed, replays refused}, or {'unknown'}.
local now = tonumber(ARGV[1])
if not load_cfg() then return {'unknown'} end
local c = redis.call('HMGET', K_ST, 'evicted', 'consumed', 'replays')
return {redis.call('ZCARD', K_Q), redis.call('ZCARD', K_ADM), redis.call('ZCARD', K_ACT),
  admitted_last_minute(now), tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0}
