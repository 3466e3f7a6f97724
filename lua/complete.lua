-- complete.lua: the origin ends a session early (or gives up a grant never consumed); the slot frees at once.
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9] -> vst:{room}:served:<day> SET the day's served visitors (lib.lua serve)
-- KEYS[10..12] -> vst:{room}:ntc, ntd, ntg: a grant given up takes its notice with it
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the entry token's sequence)
-- ARGV[3] -> audience (the entry token's aud): must be the room's originUrl
-- Returns {'ok'}, {'nogrant'} (no such session or grant: already ended or
-- expired), {'audience'} (the token is for another origin: nothing changes), or {'noroom'}.
local now = tonumber(ARGV[1])
local m = ARGV[2]
if not load_cfg() then return {'noroom'} end
if redis.call('HGET', K_CFG, 'originUrl') ~= ARGV[3] then return {'audience'} end
if redis.call('ZREM', K_ACT, m) == 1 then return {'ok'} end
if redis.call('ZREM', K_ADM, m) == 1 then
  -- A grant given up before use: record it as used so the token cannot be redeemed after.
  redis.call('ZADD', K_USED, 'GT', now, m)
  serve(KEYS[9], m, now)
  -- As consume.lua: a poll never restores it.
  if tonumber(m) > head() then redis.call('ZADD', K_LEFT, m, m) end
  redis.call('HINCRBY', K_ST, 'lapsed', 1) -- ended unused (tick.lua's history)
  notice_forget(KEYS[10], KEYS[11], KEYS[12], {m})
  return {'ok'}
end
return {'nogrant'}
