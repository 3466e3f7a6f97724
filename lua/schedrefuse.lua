-- schedrefuse.lua: keeps a scheduled change that is not valid at its time in the schedule, refused, under
-- its lease, and gives the lease back.
-- KEYS[1] -> vst:{room}:schedlease:<id>  STRING  the lease: its holder's token, expiring (schedfree.lua)
-- KEYS[2] -> vst:{room}:sched            HASH    the schedule (schedput.lua)
-- KEYS[3] -> vst:{room}:schedv           HASH    the schedule's version (schedput.lua)
-- ARGV[1] -> the change's id
-- ARGV[2] -> the change, refused: its JSON with the reason and when
-- ARGV[3] -> the holder's token
-- Returns {'ok'}, {'lost'} (nothing done) when the lease ran out or another process holds it now, or
-- {'gone'} (the lease given back, nothing stored) when the change is no longer in the schedule (the room
-- was deleted). A holder whose lease ran out while it validated the change has no say over it any more:
-- another process may have applied, refused or cancelled it since, and a late refusal would undo that.
if redis.call('GET', KEYS[1]) ~= ARGV[3] then return {'lost'} end
redis.call('DEL', KEYS[1])
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return {'gone'} end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[3], 'v', 1)
return {'ok'}
