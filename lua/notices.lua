-- notices.lua: the notify function takes the notices due to send (docs/ENGINE.md, "Notices").
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9] -> vst:{room}:ntc  KEYS[10] -> vst:{room}:ntd  KEYS[11] -> vst:{room}:ntg (tick.lua)
-- ARGV[1] -> now (ms)   ARGV[2] -> the most to take   ARGV[3] -> lease (ms)
-- Returns {'ok', member, sealed address, claim deadline (ms), …} (three per notice, earliest due
-- first), or {'noroom'}. Each notice taken is due again after the lease, so one whose sender
-- died is sent again (a sender acks, noticeack.lua, well within it). A due notice whose
-- registration or grant is gone, or whose grant has run out (the next tick reclaims it), is
-- dropped.
local now, most, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if not redis.call('HGET', K_CFG, 'mode') then return {'noroom'} end
local due = redis.call('ZRANGEBYSCORE', KEYS[10], '-inf', now, 'LIMIT', 0, most)
local out = {'ok'}
for _, m in ipairs(due) do
  local r = redis.call('HGET', KEYS[9], m)
  local d = redis.call('ZSCORE', KEYS[11], m)
  local colon = r and string.find(r, ':', 1, true)
  if colon and d and tonumber(d) > now then
    redis.call('ZADD', KEYS[10], member(now + lease), m)
    out[#out + 1] = m
    out[#out + 1] = string.sub(r, colon + 1)
    out[#out + 1] = d
  else
    redis.call('ZREM', KEYS[10], m)
  end
end
return out
