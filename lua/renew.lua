-- renew.lua: an active visitor renews a gated session (/.vestibule/renew): its
-- end moves to min(now + idle, start + longest), never earlier, where idle is
-- sessionIdleSeconds (sessionTTLSeconds when 0) and longest maxSessionSeconds
-- (sessionTTLSeconds when 0). No session is held past its longest life.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the session's sequence)
-- ARGV[3] -> audience: must be the room's originUrl
-- ARGV[4] -> the session's start (ms), from the session cookie Vestibule signed
-- Returns {'ok', session end (ms)} (the end it has now, moved or not),
-- {'nogrant'} (no such session: completed, expired or never consumed),
-- {'audience'} (another origin: nothing changes), or {'noroom'}.
local now = tonumber(ARGV[1])
local m = ARGV[2]
local start = math.min(tonumber(ARGV[4]), now)

local cfg = load_cfg()
if not cfg then return {'noroom'} end
if redis.call('HGET', K_CFG, 'originUrl') ~= ARGV[3] then return {'audience'} end

local ends = tonumber(redis.call('ZSCORE', K_ACT, m))
-- A session whose end has passed is over, whether or not a tick removed it.
if not ends or ends <= now then return {'nogrant'} end
-- room.Config.SessionLimits: the idle window is sessionIdleSeconds, or
-- sessionTTL without it; the longest life maxSessionSeconds, or sessionTTL
-- without it (then a room with neither renews nothing).
local g = redis.call('HMGET', K_CFG, 'sessionIdleSeconds', 'maxSessionSeconds')
local idle = (tonumber(g[1]) or 0) * 1000
if idle == 0 then idle = cfg.sessionTTL end
local max = (tonumber(g[2]) or 0) * 1000
if max == 0 then max = cfg.sessionTTL end
local want = math.min(now + idle, start + max)
if want > ends then
  -- XX: only a session that exists; GT: never earlier.
  redis.call('ZADD', K_ACT, 'XX', 'GT', want, m)
  ends = want
end
return {'ok', member(ends)}
