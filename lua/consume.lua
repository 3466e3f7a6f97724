-- consume.lua: the origin redeems a grant; it becomes an active session exactly once.
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9] -> vst:{room}:served:<day> SET the day's served visitors (lib.lua serve)
-- KEYS[10..12] -> vst:{room}:ntc, ntd, ntg: a notified grant's registration ends here; its turn
--                 counts as saved (nsaved in st) when claimed after the window a visitor without a
--                 notice would have had (claimTTLSeconds from the grant: docs/ENGINE.md, "Notices")
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the entry token's sequence)
-- ARGV[3] -> audience (the entry token's aud): must be the room's originUrl
-- The session ends after sessionTTLSeconds; in a gated room with
-- sessionIdleSeconds, after that (at most its longest life, maxSessionSeconds
-- or else sessionTTLSeconds): room.Config.SessionLimits.
-- Returns {'ok', session end (ms)}, {'consumed'} (already), {'expired'},
-- {'nogrant'} (no such grant), {'audience'} (the token is for another origin:
-- nothing changes), or {'noroom'}.
local now = tonumber(ARGV[1])
local m = ARGV[2]

local cfg = load_cfg()
if not cfg then return {'noroom'} end
if redis.call('HGET', K_CFG, 'originUrl') ~= ARGV[3] then return {'audience'} end

local d = redis.call('ZSCORE', K_ADM, m)
if d then
  redis.call('ZREM', K_ADM, m)
  if tonumber(d) < now then return {'expired'} end
  local ends = now + cfg.sessionTTL
  -- A gated room with sessionIdleSeconds: the session first lasts its idle
  -- window (renew.lua extends it on navigations), never past its longest life.
  local g = redis.call('HMGET', K_CFG, 'gate', 'sessionIdleSeconds', 'maxSessionSeconds')
  local idle = (tonumber(g[2]) or 0) * 1000
  if g[1] == '1' and idle > 0 then
    local max = (tonumber(g[3]) or 0) * 1000
    if max == 0 then max = cfg.sessionTTL end
    ends = now + math.min(idle, max)
  end
  redis.call('ZADD', K_ACT, ends, m)
  -- GT: a record kept to the end of a recovery window (tick.lua) stays that long.
  redis.call('ZADD', K_USED, 'GT', now, m)
  serve(KEYS[9], m, now)
  -- A sequence above the head (a bypass holder's: its place never moves the
  -- head) is kept in left until the head passes it, so that a poll of its
  -- ticket, which asks at the sequence, never restores it once used is
  -- trimmed (poll.lua). While the head is a pre-queue draw every sequence is
  -- above it: those are kept too, though their tickets ask at their draws.
  if tonumber(m) > head() then redis.call('ZADD', K_LEFT, m, m) end
  redis.call('HINCRBY', K_ST, 'consumed', 1)
  if KEYS[12] and redis.call('ZREM', KEYS[12], m) == 1 then
    if now > tonumber(d) - cfg.notify + cfg.claimTTL then redis.call('HINCRBY', K_ST, 'nsaved', 1) end
    notice_forget(KEYS[10], KEYS[11], nil, {m})
  end
  return {'ok', member(ends)}
end
if redis.call('ZSCORE', K_ACT, m) or redis.call('ZSCORE', K_USED, m) then
  redis.call('HINCRBY', K_ST, 'replays', 1)
  return {'consumed'}
end
return {'nogrant'}
