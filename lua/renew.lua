-- renew.lua: an active visitor renews a gated session (/.vestibule/renew): its
-- end moves to min(now + sessionTTL, start + maxSessionSeconds), never earlier.
-- sessionTTL is then the idle timeout, and no session is held past its maximum.
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
local max = (tonumber(redis.call('HGET', K_CFG, 'maxSessionSeconds')) or 0) * 1000
local want = math.min(now + cfg.sessionTTL, start + max)
if want > ends then
  -- XX: only a session that exists; GT: never earlier.
  redis.call('ZADD', K_ACT, 'XX', 'GT', want, m)
  ends = want
end
return {'ok', member(ends)}
