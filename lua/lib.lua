-- lib.lua: shared by every room script; lua.go puts it in front of each one.
--
-- Every room script takes the same KEYS, all under the room's hash tag {room}:
-- KEYS[1] -> vst:{room}:cfg   HASH  room settings (+ seed)
-- KEYS[2] -> vst:{room}:st    HASH  engine state: seq, head, tokens, refill, rate, ring r0..r59, counters
-- KEYS[3] -> vst:{room}:q     ZSET  waiting (and pre-queue): member seq, score seq or draw
-- KEYS[4] -> vst:{room}:hb    ZSET  heartbeats: member seq, score last seen (ms)
-- KEYS[5] -> vst:{room}:adm   ZSET  grants: member seq, score claim deadline (ms)
-- KEYS[6] -> vst:{room}:act   ZSET  sessions: member seq, score session end (ms)
-- KEYS[7] -> vst:{room}:used  ZSET  consumed grants: member seq, score consume time (ms)
-- KEYS[8] -> vst:{room}:left  ZSET  visitors who left: member seq, score queue score
local K_CFG, K_ST, K_Q, K_HB, K_ADM, K_ACT, K_USED, K_LEFT =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local CFG_FIELDS = {'mode', 'maxActive', 'admitPerMinute', 'sessionTTLSeconds', 'claimTTLSeconds',
  'heartbeatTTLSeconds', 'opensAt', 'originUrl', 'clientEnqueuePerMinute'}

-- load_cfg returns the settings as a table (times in ms) and the raw values
-- (returned to the caller with every place), or nil when the room is unknown.
local function load_cfg()
  local v = redis.call('HMGET', K_CFG, unpack(CFG_FIELDS))
  if not v[1] then return nil, nil end
  return {
    mode = v[1],
    maxActive = tonumber(v[2]),
    rate = tonumber(v[3]),
    sessionTTL = tonumber(v[4]) * 1000,
    claimTTL = tonumber(v[5]) * 1000,
    hbTTL = tonumber(v[6]) * 1000,
    opensAt = tonumber(v[7]) or 0,
  }, v
end

-- Numbers go to Redis as strings made here: Redis turns a Lua number argument
-- into text with %.14g, which loses the digits of a 16-digit sequence.
local function member(n) return string.format('%.0f', n) end
local function num(x) return string.format('%.17g', x) end

local function head() return tonumber(redis.call('HGET', K_ST, 'head')) or -1 end

local function raise_head(score)
  if score > head() then redis.call('HSET', K_ST, 'head', num(score)) end
end

-- refill adds admitPerMinute x elapsed to the admission bucket (cap: two
-- seconds of rate, at least one token) and returns the tokens now held. The
-- bucket's refill time is the lease: a second caller at the same instant finds
-- nothing new, so duplicate, concurrent or retried tickers admit nothing extra.
local function refill(cfg, now)
  local st = redis.call('HMGET', K_ST, 'tokens', 'refill')
  local tokens = tonumber(st[1]) or 0
  local last = tonumber(st[2]) or now
  local elapsed = now - last
  local cap = math.max(1, cfg.rate / 30)
  if elapsed > 0 then
    tokens = tokens + cfg.rate * elapsed / 60000
    last = now
  end
  -- Capped always, so lowering the rate takes effect at once.
  return math.min(cap, tokens), last
end

local function store_bucket(tokens, last)
  redis.call('HSET', K_ST, 'tokens', tostring(tokens), 'refill', tostring(last))
end

-- count_admissions adds n to the per-second ring used for the rate estimate.
local function count_admissions(now, n)
  if n <= 0 then return end
  local sec = math.floor(now / 1000)
  local f = 'r' .. (sec % 60)
  local cur = redis.call('HGET', K_ST, f)
  local s, c = 0, 0
  if cur then
    local a, b = string.match(cur, '^(%d+):(%d+)$')
    s, c = tonumber(a), tonumber(b)
  end
  if s ~= sec then c = 0 end
  redis.call('HSET', K_ST, f, sec .. ':' .. (c + n))
end

-- admitted_last_minute sums the ring over the 60 seconds before now.
local function admitted_last_minute(now)
  local fields = {}
  for i = 0, 59 do fields[i + 1] = 'r' .. i end
  local v = redis.call('HMGET', K_ST, unpack(fields))
  local sec = math.floor(now / 1000)
  local sum = 0
  for i = 1, 60 do
    if v[i] then
      local a, b = string.match(v[i], '^(%d+):(%d+)$')
      local s = tonumber(a)
      if s and s > sec - 60 and s <= sec then sum = sum + tonumber(b) end
    end
  end
  return sum
end

-- grant turns a member into an admission with a claim deadline.
local function grant(cfg, now, m, score)
  local deadline = now + cfg.claimTTL
  redis.call('ZADD', K_ADM, num(deadline), m)
  redis.call('ZREM', K_HB, m)
  raise_head(score)
  return deadline
end

local function free_slots(cfg)
  return cfg.maxActive - redis.call('ZCARD', K_ADM) - redis.call('ZCARD', K_ACT)
end

-- reply is the fixed shape every place-returning script answers with:
-- {state, seq, draw, position, waiting, deadline (ms), rate (admissions per minute, measured), cfg values...}
local function reply(state, m, draw, pos, waiting, deadline, raw)
  local rate = redis.call('HGET', K_ST, 'rate') or '0'
  local out = {state, m or '', draw or '', pos or 0, waiting or 0, member(deadline or 0), rate}
  for i = 1, #CFG_FIELDS do out[#out + 1] = raw[i] or '' end
  return out
end
