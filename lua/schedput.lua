-- schedput.lua: plans a change in a room's schedule, or replaces the one of its id, within the cap.
-- KEYS[1] -> vst:{room}:sched   HASH  the schedule: field = the change's id, value = its JSON
-- KEYS[2] -> vst:{room}:schedv  HASH  the schedule's version: v, bumped by every change of the schedule
-- ARGV[1] -> the change's id
-- ARGV[2] -> the change (JSON)
-- ARGV[3] -> the most changes the schedule holds (room.ScheduleKeep)
-- Returns {'ok'}, or {'full'} (nothing stored) when the change is new and the schedule holds the most.
-- The count and the write are one step, so planners at once cannot pass the cap together.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return {'full'}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], 'v', 1)
return {'ok'}
