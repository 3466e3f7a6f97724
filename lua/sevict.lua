-- sevict.lua: evicts from the room's queue the visitors an arrival shard's sweep found
-- stale (ssweep.lua), unless the room's shard holds a heartbeat of theirs that is not
-- stale (a visitor the shard sent to the room, or who polled it while the shard could
-- not be reached).
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)   ARGV[2..] -> the sequences (decimal)
-- KEYS[9] -> vst:{room}:ntc: the notice registrations of those evicted go with them
-- Returns the number evicted, or {'noroom'}.
local now = tonumber(ARGV[1])
local cfg = load_cfg()
if not cfg then return {'noroom'} end
local cutoff = now - cfg.hbTTL
local out = 0
for i = 2, #ARGV, 1000 do
  local j = math.min(i + 999, #ARGV)
  local fields, ms = {}, {}
  for k = i, j do
    fields[#fields + 1] = hbf(ARGV[k])
    ms[#ms + 1] = ARGV[k]
  end
  local seen = redis.call('HMGET', K_HB, unpack(fields))
  local gone, g = {}, 0
  for k = 1, #ms do
    local _, due = hbt(seen[k])
    if not due or due < cutoff then
      g = g + 1
      gone[g] = ms[k]
      if seen[k] then redis.call('HDEL', K_HB, fields[k]) end
    end
  end
  if g > 0 then
    out = out + redis.call('ZREM', K_Q, unpack(gone))
    notice_forget(KEYS[9], nil, nil, gone)
  end
end
if out > 0 then
  redis.call('HINCRBY', K_ST, 'evicted', out)
  redis.call('HINCRBY', K_CFG, 'waiting', -out)
end
return {out}
