-- noticeack.lua: the notify function says how a notice went (docs/ENGINE.md, "Notices").
-- KEYS: the room's keys (lib.lua), then KEYS[9] -> vst:{room}:ntc  KEYS[10] -> vst:{room}:ntd
-- ARGV[1] -> now (ms)   ARGV[2] -> member
-- ARGV[3] -> 'sent' (delivered to the push service or SES: the registration goes, nsent + 1),
--            'gone' (refused for good: an expired push subscription, an address SES will not
--            take: the registration goes, nfail + 1) or 'retry' (due again at ARGV[4])
-- ARGV[4] -> retry: when (ms)
-- Returns {'ok'}, {'noroom'}, or {'nonotice'} when the notice is not due: sent or refused
-- already, or its place ended (its grant claimed, given up or reclaimed).
local m = ARGV[2]
if not redis.call('HGET', K_CFG, 'mode') then return {'noroom'} end
if not redis.call('ZSCORE', KEYS[10], m) then return {'nonotice'} end
if ARGV[3] == 'retry' then
  redis.call('ZADD', KEYS[10], ARGV[4], m)
  return {'ok'}
end
redis.call('ZREM', KEYS[10], m)
redis.call('HDEL', KEYS[9], m)
if ARGV[3] == 'sent' then
  redis.call('HINCRBY', K_ST, 'nsent', 1)
else
  redis.call('HINCRBY', K_ST, 'nfail', 1)
end
return {'ok'}
