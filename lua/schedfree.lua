-- schedfree.lua: gives back a lease on a scheduled change, or removes the change under it.
-- KEYS[1] -> vst:{room}:schedlease:<id>  STRING  the lease: its holder's token, expiring
-- KEYS[2] -> vst:{room}:sched            HASH    the schedule (schedput.lua)
-- KEYS[3] -> vst:{room}:schedv           HASH    the schedule's version (schedput.lua)
-- ARGV[1] -> the holder's token
-- ARGV[2] -> the change's id, to remove it from the schedule with the lease ('' : the lease only)
-- Returns {'ok'}, or {'lost'} (nothing done) when the lease ran out or another process holds it
-- now: a holder never frees a lease, nor removes a change, that is no longer its own.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'lost'} end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '' and redis.call('HDEL', KEYS[2], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[3], 'v', 1)
end
return {'ok'}
