-- booking_close.lua: an open event is closed to holds, as one restored after a
-- total loss is (booking_define.lua), until booking_rebuild.lua puts back what
-- the origin recorded and reopens it. A region failover closes each event of
-- the standby's kit: its copy lost the last writes of the old region (the
-- cross-region replication lag), so seats the origin sold may show available.
-- Live holds stay: they can still be confirmed, extended and released while
-- the event is closed (only new holds are refused), and the rebuild settles
-- those the origin's record overrules.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV[1] -> now (ms)
-- Returns {'ok', closed ('1' when this call closed it, '' when it was closed
-- already), live holds, live orders}; {'noevent'}.
local now = tonumber(ARGV[1])
if redis.call('EXISTS', K_INV) == 0 then return {'noevent'} end
local was = redis.call('HGET', K_INV, 'recover')
local closed = ''
if was ~= '1' then
  redis.call('HSET', K_INV, 'recover', '1', 'closed', member(now))
  closed = '1'
end
return {'ok', closed, redis.call('HLEN', K_HOLD), tonumber(redis.call('HGET', K_INV, 'live')) or 0}
