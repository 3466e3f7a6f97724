-- invite.lua: a join takes one use of an invitation (docs/API.md, "Invitations").
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9]  -> vst:{room}:inv     HASH  invitation id -> uses taken
-- KEYS[10] -> vst:{room}:invrev  HASH  invitation id -> revoked at (ms)
-- KEYS[11] -> vst:{room}:invlog  LIST  the uses, newest first: 'ms:use:returned(0|1):id:visitor', capped
-- ARGV[1] -> now (ms)
-- ARGV[2] -> invitation id (checked by its signature)
-- ARGV[3] -> its uses (the most it admits)
-- ARGV[4] -> visitor id of the join
-- ARGV[5] -> the log's cap (entries)
-- ARGV[6] -> 'take', or 'give' to give back a use taken for a join that was then refused
-- Returns {'ok', uses taken after it}, {'revoked'}, {'used'} (every use taken), or {'noroom'}.
local now, id, most, visitor = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
if not redis.call('HGET', K_CFG, 'mode') then return {'noroom'} end
if ARGV[6] == 'give' then
  local n = redis.call('HINCRBY', KEYS[9], id, -1)
  if n < 0 then n = redis.call('HINCRBY', KEYS[9], id, 1) end
  redis.call('LPUSH', KEYS[11], member(now) .. ':' .. n .. ':1:' .. id .. ':' .. visitor)
  redis.call('LTRIM', KEYS[11], 0, tonumber(ARGV[5]) - 1)
  return {'ok', n}
end
if redis.call('HEXISTS', KEYS[10], id) == 1 then return {'revoked'} end
local n = redis.call('HINCRBY', KEYS[9], id, 1)
if n > most then
  redis.call('HINCRBY', KEYS[9], id, -1)
  return {'used'}
end
redis.call('LPUSH', KEYS[11], member(now) .. ':' .. n .. ':0:' .. id .. ':' .. visitor)
redis.call('LTRIM', KEYS[11], 0, tonumber(ARGV[5]) - 1)
return {'ok', n}
