-- booking_ended.lua: which of a room's sessions ended. Not prefixed by booking_lib.lua.
-- KEYS[1] -> vst:{room}:act  ZSET  sessions: member seq, score session end (ms)
-- ARGV[1] -> now (ms)
-- ARGV[2 ..] -> sequences
-- Returns the sequences that are not in the set or whose end passed.
local out = {}
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
  local ends = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if not ends or tonumber(ends) < now then out[#out + 1] = ARGV[i] end
end
return out
