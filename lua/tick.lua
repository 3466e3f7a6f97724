-- tick.lua: one admission tick of one room.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> batch: the most stale heartbeats evicted by one call
-- Returns {admitted, evicted, grants reclaimed, sessions ended}, or {'unknown'}.
-- Reclaims expired grants and sessions always; in a paused or closed room, in
-- passthrough and before opensAt it does nothing else. Otherwise it evicts stale
-- heartbeats, refills the admission bucket by elapsed time and admits
-- min(floor(tokens), maxActive - admitted - active) in score order, skipping
-- (evicting) stale visitors, carrying the fraction of a token.
local now = tonumber(ARGV[1])
local batch = tonumber(ARGV[2])

local cfg = load_cfg()
if not cfg then return {'unknown'} end

local reclaimed = redis.call('ZREMRANGEBYSCORE', K_ADM, '-inf', '(' .. now)
local ended = redis.call('ZREMRANGEBYSCORE', K_ACT, '-inf', '(' .. now)
-- A consumed grant's token expires by its claim deadline; keep the record that long (plus leeway).
redis.call('ZREMRANGEBYSCORE', K_USED, '-inf', '(' .. (now - cfg.claimTTL - 60000))
redis.call('ZREMRANGEBYSCORE', K_LEFT, '-inf', num(head()))

local admitted, evicted = 0, 0
local function finish()
  if evicted > 0 then redis.call('HINCRBY', K_ST, 'evicted', evicted) end
  count_admissions(now, admitted)
  -- The rate estimate: admissions in the last minute, scaled up while the room
  -- has been admitting for less than a minute (since = the last idle instant).
  local sum = admitted_last_minute(now)
  local since = tonumber(redis.call('HGET', K_ST, 'since')) or now
  if sum == 0 then
    since = now
    redis.call('HSET', K_ST, 'since', tostring(now))
  end
  local window = math.min(60000, math.max(1000, now - since))
  redis.call('HSET', K_ST, 'rate', math.floor(sum * 60000 / window))
  return {admitted, evicted, reclaimed, ended}
end

if cfg.mode == 'paused' or cfg.mode == 'closed' or cfg.mode == 'passthrough' or cfg.opensAt > now then
  return finish()
end

local cutoff = now - cfg.hbTTL
local stale = redis.call('ZRANGEBYSCORE', K_HB, '-inf', '(' .. cutoff, 'LIMIT', 0, batch)
for i = 1, #stale, 1000 do
  local chunk = {unpack(stale, i, math.min(i + 999, #stale))}
  redis.call('ZREM', K_Q, unpack(chunk))
  redis.call('ZREM', K_HB, unpack(chunk))
end
evicted = #stale

local tokens, refilled = refill(cfg, now)
local n = math.min(math.floor(tokens), free_slots(cfg))
local pops = 0
while admitted < n and pops < n + batch do
  local got = redis.call('ZPOPMIN', K_Q, math.min(n - admitted, 1000))
  if #got == 0 then break end
  -- One command per batch, not per visitor: the batch's heartbeats, then one
  -- ZREM and one ZADD (every grant of a tick shares its deadline).
  local members = {}
  for i = 1, #got, 2 do members[#members + 1] = got[i] end
  local seen = redis.call('ZMSCORE', K_HB, unpack(members))
  redis.call('ZREM', K_HB, unpack(members))
  local top = head()
  local deadline = num(now + cfg.claimTTL)
  local grants = {}
  for i = 1, #members do
    local m, score, t = members[i], tonumber(got[2 * i]), tonumber(seen[i])
    pops = pops + 1
    if t and t < cutoff then
      evicted = evicted + 1
    else
      grants[#grants + 1] = deadline
      grants[#grants + 1] = m
      admitted = admitted + 1
      -- The head is the highest score admitted: a visitor skipped as stale
      -- keeps the right to come back while the head is below them.
      if score > top then top = score end
    end
  end
  if #grants > 0 then
    redis.call('ZADD', K_ADM, unpack(grants))
    redis.call('HSET', K_ST, 'head', num(top))
  end
end
store_bucket(tokens - admitted, refilled)
return finish()
