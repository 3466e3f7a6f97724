-- lib.lua: shared by every room script; lua.go puts it in front of each one.
-- It only defines locals: everything here runs on every call, so it stays small
-- (the cost of a script is mostly its redis.call count, see docs/ENGINE.md).
--
-- Every room script takes the same KEYS, all under the room's hash tag {room}:
-- KEYS[1] -> vst:{room}:cfg   HASH  room settings (+ seed, ver, rate, waiting: the count of q,
--                                   kept by every script that changes q, so poll needs no ZCARD;
--                                   full: '1' while the tick finds every slot taken, share: the
--                                   share of the front admitted, not skipped; see pace())
-- KEYS[2] -> vst:{room}:st    HASH  engine state: seq, head, tokens, refill, ring r0..r59, sweep, epoch, created, floor, dead, tickat, counters
-- KEYS[3] -> vst:{room}:q     ZSET  waiting (and pre-queue): member seq, score seq or draw
-- KEYS[4] -> vst:{room}:hb    HASH  heartbeats: field = seq as 7-byte integer, value = told class x 2^42 + last seen (ms), 6 bytes
-- KEYS[5] -> vst:{room}:adm   ZSET  grants: member seq, score claim deadline (ms)
-- KEYS[6] -> vst:{room}:act   ZSET  sessions: member seq, score session end (ms)
-- KEYS[7] -> vst:{room}:used  ZSET  consumed grants: member seq, score consume time (ms), or the end of the recovery window
-- KEYS[8] -> vst:{room}:left  ZSET  visitors who left: member seq, score queue score
--
-- Replies (named in internal/roomdb/reply.go):
-- * one word for an outcome: 'ok', 'noroom' (unknown room: no settings),
--   'nogrant' (no such grant or session), 'closed', 'consumed', 'expired',
--   'audience' (an entry token for another origin), 'slow' (+ wait in ms),
--   'created', 'updated', 'busy' (tick: another tick ran less than the guard ago);
-- * the place shape of reply() below, by position:
--   1 state ('prequeue', 'waiting', 'paused', 'closed', 'admitted', 'active', 'expired')
--   2 seq (decimal)   3 draw ('' for none)   4 position (1-based, 0 when not waiting)
--   5 waiting         6 deadline (ms: claim deadline, or session end when active; 0 for none)
--   7 pace (admissions a minute the room does for whoever waits, x 1000: pace() below)   8 settings version
--   9 poll within (ms): the longest the engine holds a waiting place without a poll,
--     beyond the heartbeat grace (heartbeatTTLSeconds); 0 when not in the queue
--   10.. the settings as field, value pairs (settings() below), when sent;
-- * the counts of tick.lua and stats.lua, by position (their headers).
local K_CFG, K_ST, K_Q, K_HB, K_ADM, K_ACT, K_USED, K_LEFT =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

-- load_cfg returns the settings as a table (times in ms), or nil when the room
-- is unknown. cfg.ver is the settings' version ('<fence>.<random>', new per
-- PUT): replies carry it instead of the settings, which the Go side caches by
-- version.
local function load_cfg()
  local v = redis.call('HMGET', K_CFG, 'mode', 'maxActive', 'admitPerMinute', 'sessionTTLSeconds',
    'claimTTLSeconds', 'heartbeatTTLSeconds', 'opensAt', 'ver', 'rate', 'joinChallengeBits', 'clientEnqueuePerMinute',
    'waiting', 'arrk', 'full', 'share', 'inviteOnly')
  if not v[1] then return nil end
  return {
    mode = v[1],
    maxActive = tonumber(v[2]),
    rate = tonumber(v[3]),
    sessionTTL = tonumber(v[4]) * 1000,
    claimTTL = tonumber(v[5]) * 1000,
    hbTTL = tonumber(v[6]) * 1000,
    opensAt = tonumber(v[7]) or 0,
    ver = v[8] or '',
    measured = v[9] or '0',
    challengeBits = tonumber(v[10]) or 0,
    clientLimit = tonumber(v[11]) or 0,
    waiting = tonumber(v[12]) or 0,
    -- arrk: the most arrival shards the room's joins ever spread over (config.lua).
    shards = tonumber(v[13]) or 0,
    -- full: '1' while the ticks find every slot taken (tick.lua), else '0' or absent.
    full = v[14] or '0',
    -- share: the share of the front admitted rather than skipped as stale (tick.lua), 0.5–1.
    share = tonumber(v[15]) or 1,
    -- inviteOnly: '1' when only invited visitors may join (enqueue.lua).
    inviteOnly = v[16] == '1',
  }
end

-- open_for_arrivals reports whether a room's joins go to arrival lists rather
-- than straight into the queue: its joins are or were spread (arrk > 0: once
-- spread, always merged, so a join after joinShards went back to 0 cannot
-- overtake one still on a shard) and it queues them now (queue or auto,
-- opened). Pre-queue draws and passthrough grants are never buffered.
local function open_for_arrivals(cfg, now)
  return cfg.shards > 0 and (cfg.mode == 'queue' or cfg.mode == 'auto') and cfg.opensAt <= now
end

-- limit_client is the per-client join limit, a GCRA (generic cell rate
-- algorithm: one timestamp per client, no counters to reset): per_minute joins a
-- minute with a burst of a tenth of it (at least 1); 0 turns it off. key is the
-- client's STRING (theoretical arrival time, ms, expiring when idle). Returns 0
-- when the join may go ahead (and counts it), else the wait (ms).
local function limit_client(per_minute, key, now)
  if per_minute <= 0 or not key then return 0 end
  local interval = 60000 / per_minute
  local burst = math.max(1, math.floor(per_minute / 10))
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local allow_at = tat - interval * (burst - 1)
  if now < allow_at then return math.ceil(allow_at - now) end
  local new_tat = tat + interval
  redis.call('SET', key, string.format('%.0f', new_tat), 'PX', math.ceil(new_tat - now) + 1000)
  return 0
end

-- Numbers go to Redis as strings made here: Redis turns a Lua number argument
-- into text with %.14g, which loses the digits of a 16-digit sequence.
local function member(n) return string.format('%.0f', n) end

-- server_us is the Redis server's time in microseconds: the floor of every
-- sequence (the one use of server time, on purpose: numbers issued after a
-- data loss stay above every ticket issued before it).
local function server_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- next_seq is the next sequence a source issues: above its last one, at least
-- server_us, and of the source's residue r modulo 16 (the room's own shard 0,
-- arrival shard i i + 1: room.SeqResidues), so two sources never issue the same number.
local function next_seq(last, r)
  local s = math.max((last or 0) + 1, server_us())
  return s + (r - s) % 16
end

-- fence_of is the fence of a settings version, which roomdb.Engine.PutConfig writes as
-- '<fence>.<random>' (fence.lua issues the fence); 0 for a version before fences.
local function fence_of(ver)
  local f = string.match(ver or '', '^(%d+)%.')
  return f and tonumber(f) or 0
end

-- arrival_seq is the sequence of an arrival list's entry, 'sequence:join ms'
-- (arrive.lua, enqueue.lua), as the decimal string it was written as; find
-- and sub, as merge.lua splits entries, cost half a pattern match.
local function arrival_seq(x) return string.sub(x, 1, string.find(x, ':', 1, true) - 1) end
local function num(x) return string.format('%.17g', x) end

-- Heartbeats are a HASH of fixed-width binary strings, the smallest allocations
-- jemalloc has for them (16 and 8 bytes): the field is the sequence as a 7-byte
-- big-endian integer (sequences stay below 2^53), the value a 6-byte one,
-- class x 2^42 + last seen (ms; below 2^42 until 2109). The class says when the
-- visitor was told to poll again at the latest: within told_ms(class) of last
-- seen (quarter octaves from 1 s to 12.9 h, rounded up from the engine's
-- budget); class 0 (a value written before classes, or by a tool) is none. A
-- visitor is stale once silent for told_ms(class) + the grace (heartbeatTTLSeconds).
-- Redis's struct library packs them (C, fast on the tick's path); the
-- embedded Redis of `make dev` (miniredis) has none, so there the same bytes
-- are made by arithmetic. rawget: reading a missing global raises in Redis.
local S = rawget(_G, 'struct')
local function be(n, width)
  if S then return S.pack('>I' .. width, n) end
  local b = {}
  for i = width, 1, -1 do
    local low = n % 256
    b[i] = low
    n = (n - low) / 256
  end
  return string.char(unpack(b))
end
local SEEN = 4398046511104 -- 2^42
-- Constant formats: building '>I7' per call doubles the cost of packing the
-- thousands of fields a tick reads.
local function hbf(m)
  if S then return S.pack('>I7', tonumber(m)) end
  return be(tonumber(m), 7)
end
local function hbv(t, class)
  local n = (class or 0) * SEEN + t
  if S then return S.pack('>I6', n) end
  return be(n, 6)
end
local function hbraw(v)
  if not v then return nil end
  if S then return (S.unpack('>I6', v)) end
  local n = 0
  for i = 1, #v do n = n * 256 + string.byte(v, i) end
  return n
end
-- told_ms is the silence class c allows before the grace (room.ToldMS),
-- remembered per call: a tick reads thousands of heartbeats of a few classes.
local TOLD = {[0] = 0}
local function told_ms(c)
  local t = TOLD[c]
  if not t then
    t = math.floor(1000 * 2 ^ ((c - 1) / 4) + 0.5)
    TOLD[c] = t
  end
  return t
end
-- hbt returns a heartbeat's last seen (ms) and the time (ms) it is due by
-- (last seen + its told silence), or nil for none.
local function hbt(v)
  local n = hbraw(v)
  if not n then return nil end
  local c = math.floor(n / SEEN)
  local seen = n - c * SEEN
  return seen, seen + told_ms(c)
end

-- MAX_TOLD is the longest a waiting visitor is told to stay away (ms,
-- room.MaxPollAfter); SLACK is what the poll policy may add to the ETA to land
-- just after the visitor's admission tick (room.PollSlack).
local MAX_TOLD, SLACK = 300000, 5000

-- pace is how many places a minute the line moves for whoever waits now, the
-- rate every ETA and told poll is made from (docs/ENGINE.md, "The pace"). Its
-- admissions are the configured rate while a slot is free (a full bucket and
-- a free slot admit at the next tick, whatever was measured while few came);
-- once the ticks find every slot taken (cfg.full), the rate slots free at: the
-- admissions measured, at least every slot once per longest hold (sessionTTL
-- or claimTTL), never above the configured rate, so a lower rate is believed
-- at once. The line moves faster than its admissions by the visitors ahead
-- skipped as stale (cfg.share: the share of the front admitted, at least a
-- half); cfg.measured is already the front's speed (admissions over it).
local function pace(cfg)
  if cfg.full ~= '1' then return cfg.rate / cfg.share end
  local floor = cfg.maxActive * 60000 / math.max(cfg.sessionTTL, cfg.claimTTL)
  return math.min(cfg.rate, math.max((tonumber(cfg.measured) or 0) * cfg.share, floor)) / cfg.share
end

-- told is the heartbeat class of a place: how long the engine holds it without
-- a poll, beyond the grace. A waiting visitor at position pos is told to poll
-- by its ETA at the latest (position over the pace, plus SLACK), never later
-- than MAX_TOLD; anywhere nobody is admitted from (pre-queue, paused, closed),
-- MAX_TOLD. Returns the class and its budget (ms), which the reply carries:
-- the poll policy (internal/pollpolicy) tells no more than that.
local function told(cfg, pos)
  local budget = MAX_TOLD
  if pos then
    budget = math.min(MAX_TOLD, math.floor(pos * 60000 / pace(cfg)) + SLACK)
  end
  local c = 1
  if budget > 1000 then c = 1 + math.ceil(4 * math.log(budget / 1000) / math.log(2) - 1e-9) end
  if told_ms(c) < budget then c = c + 1 end
  return c, budget
end
local function head() return tonumber(redis.call('HGET', K_ST, 'head')) or -1 end

-- recovery returns the end (ms) of the room's recovery window and its epoch
-- (the sequence floor when the room was created), or nil outside the window. A
-- room re-created after a data loss cannot know which tickets are still out
-- there: for the longest told poll and two heartbeat graces, a ticket issued before the room's epoch
-- comes back even if the head passed it (I4), unless it was served (recorded in
-- used until the window ends) or left.
local function recovery(cfg, now, st_created, st_epoch)
  local created, epoch = tonumber(st_created), tonumber(st_epoch)
  if not created or not epoch then return nil end
  local ends = created + MAX_TOLD + 2 * cfg.hbTTL
  if now >= ends then return nil end
  return ends, epoch
end

-- passed reports whether the head passed a ticket's place for good. A room
-- restored from the durable store after a total loss has a floor (head.lua):
-- the admission head it had recorded; a ticket at or below it was admitted (or
-- passed over) before the loss and never comes back, in the recovery window or not.
local function passed(cfg, now, seq, score)
  local st = redis.call('HMGET', K_ST, 'head', 'created', 'epoch', 'floor')
  if score <= (tonumber(st[4]) or -1) then return true end
  if score > (tonumber(st[1]) or -1) then return false end
  local ends, epoch = recovery(cfg, now, st[2], st[3])
  return not (ends and seq < epoch)
end

-- buried reports whether a sequence was issued by an incarnation of the room
-- that was deleted: at or below its tombstone ('dead' in st, drop.lua, bury.lua).
-- Such a ticket never comes back, whatever the head, the floor or the epoch say.
local function buried(seq)
  return seq <= (tonumber(redis.call('HGET', K_ST, 'dead')) or -1)
end

-- refill adds admitPerMinute x elapsed to the admission bucket (cap: two
-- seconds of rate, at least one token) and returns the tokens now held. The
-- bucket's refill time is the lease: a second caller at the same instant finds
-- nothing new, so duplicate, concurrent or retried tickers admit nothing extra.
local function refill(cfg, now, tokens, last)
  tokens = tonumber(tokens) or 0
  last = tonumber(last) or now
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
  local v = redis.call('HMGET', K_ST, 'r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9',
    'r10', 'r11', 'r12', 'r13', 'r14', 'r15', 'r16', 'r17', 'r18', 'r19', 'r20', 'r21', 'r22', 'r23',
    'r24', 'r25', 'r26', 'r27', 'r28', 'r29', 'r30', 'r31', 'r32', 'r33', 'r34', 'r35', 'r36', 'r37',
    'r38', 'r39', 'r40', 'r41', 'r42', 'r43', 'r44', 'r45', 'r46', 'r47', 'r48', 'r49', 'r50', 'r51',
    'r52', 'r53', 'r54', 'r55', 'r56', 'r57', 'r58', 'r59')
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

-- remember records a join for support (roomdb's Visitor: the waiting page's
-- reference is the visitor id): in key, the day's reference HASH (field = visitor
-- id, value = sequence), which expires two days after its day ends. A script
-- whose caller keeps none passes no key (nil).
local function remember(key, visitor, m, now)
  if not key then return end
  redis.call('HSET', key, visitor, m)
  if redis.call('HLEN', key) == 1 then
    redis.call('EXPIREAT', key, (math.floor(now / 86400000) + 3) * 86400)
  end
end

-- grant turns a new arrival into an admission with a claim deadline.
local function grant(cfg, now, m, score)
  local deadline = now + cfg.claimTTL
  redis.call('ZADD', K_ADM, num(deadline), m)
  if score > head() then redis.call('HSET', K_ST, 'head', num(score)) end
  return deadline
end

local function free_slots(cfg)
  return cfg.maxActive - redis.call('ZCARD', K_ADM) - redis.call('ZCARD', K_ACT)
end

-- The fields of the settings hash that are the engine's own, not settings.
local INTERNAL = {seed = true, ver = true, rate = true, waiting = true, arrk = true, full = true, share = true}

-- settings appends the room's settings to out as field, value pairs (the
-- settings hash without its internal fields; the Go side reads them by name).
local function settings(out)
  local h = redis.call('HGETALL', K_CFG)
  for i = 1, #h, 2 do
    if not INTERNAL[h[i]] then
      out[#out + 1] = h[i]
      out[#out + 1] = h[i + 1]
    end
  end
  return out
end

-- reply is the place shape (see the header) every place-returning script
-- answers with; the settings follow when the caller's cached version
-- (cfg.known, from ARGV) is not the room's: no second round trip.
local function reply(cfg, state, m, draw, pos, waiting, deadline, within)
  -- A waiting place has no deadline: '0' without string.format (about 1 µs a call here).
  local d = '0'
  if deadline and deadline ~= 0 then d = member(deadline) end
  -- The pace in thousandths (a Lua number becomes an integer reply: no formatting).
  local out = {state, m or '', draw or '', pos or 0, waiting or 0, d, math.floor(pace(cfg) * 1000), cfg.ver,
    within or 0}
  if cfg.ver == '' or cfg.ver ~= cfg.known then settings(out) end
  return out
end
