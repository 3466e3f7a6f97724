-- lib.lua: shared by every room script; lua.go puts it in front of each one.
-- It only defines locals: everything here runs on every call, so it stays small
-- (the cost of a script is mostly its redis.call count, see docs/ENGINE.md).
--
-- Every room script takes the same KEYS, all under the room's hash tag {room}
-- (roomdb.Keys.List): KEYS[1] cfg, KEYS[2] st, KEYS[3] q, KEYS[4] hb, KEYS[5] adm,
-- KEYS[6] act, KEYS[7] used, KEYS[8] left (vst:{room}:cfg ...). What each key
-- holds, and every other key of a room: docs/ENGINE.md, "Keys" (the one table).
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
--   10 notice: 1 when the place holds a notice registration (its heartbeat's class
--     is NOTIFIED, as poll.lua read it: cfg.notified), else 0
--   11.. the settings as field, value pairs (settings() below), when sent;
-- * the counts of tick.lua and stats.lua, by position (their headers).
local K_CFG, K_ST, K_Q, K_HB, K_ADM, K_ACT, K_USED, K_LEFT =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

-- REGION is the region whose engine runs the script ('' for an engine of no
-- region): lua.InRegion writes it in (roomdb.WithRegion). fence_region below
-- compares it with the region a failover gave the room to.
local REGION = ''

-- fence_region raises the script's error, before the script writes, when the
-- room belongs to another region (region in cfg, given by claim.lua at a
-- failover): a late tick, consume or join of the old region's engine changes
-- nothing in a store the new region writes (roomdb.ErrFenced). A room no
-- failover claimed (owner nil) takes every engine's calls.
local function fence_region(owner)
  if owner and owner ~= REGION then
    error({err = 'FENCED room belongs to region ' .. owner .. ', not ' .. (REGION == '' and '(none)' or REGION)})
  end
end

-- steer_rate is the admission rate the room runs at: admitPerMinute, or,
-- while the pace follows the origin (admitPerMinuteMin > 0), the effective
-- rate the ticks steer (eff in cfg: pace.lua pace_tick), within admitPerMinuteMin..admitPerMinute
-- and admitPerMinute until a tick set one (a new room, whose origin has said
-- nothing yet; a room restored after a loss starts at its floor: steer_created).
-- Read with the settings, so a lower rate is believed by the next reply.
local function steer_rate(c, eff)
  if c.rateMin <= 0 then return c.configured end
  return math.min(c.configured, math.max(c.rateMin, tonumber(eff) or c.configured))
end

-- load_cfg returns the settings as a table (times in ms), or nil when the room
-- is unknown. cfg.ver is the settings' version ('<fence>.<random>', new per
-- PUT): replies carry it instead of the settings, which the Go side caches by
-- version.
local function load_cfg()
  local v = redis.call('HMGET', K_CFG, 'mode', 'maxActive', 'admitPerMinute', 'sessionTTLSeconds',
    'claimTTLSeconds', 'heartbeatTTLSeconds', 'opensAt', 'ver', 'rate', 'joinChallengeBits', 'clientEnqueuePerMinute',
    'waiting', 'arrk', 'full', 'share', 'zone', 'admitPerMinuteMin', 'eff', 'net', 'queueAbovePerMinute', 'inviteOnly', 'effplan',
    'notifiedClaimTTLSeconds', 'effslope', 'efftop', 'region')
  if not v[1] then return nil end
  fence_region(v[26])
  local c = {
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
    -- zone: in a room whose joins spread, the first places whose heartbeats the
    -- room's shard keeps (merge.lua); the visitors of arrival shards behind it keep
    -- theirs on their shard (spoll.lua).
    zone = tonumber(v[16]),
    -- The steering (steer_rate below): the configured rate, the pace's floor
    -- and its effective value; the net ('1' while it is on) and its threshold.
    configured = tonumber(v[3]),
    rateMin = tonumber(v[17]) or 0,
    net = v[19] or '0',
    queueAbove = tonumber(v[20]) or 0,
    -- inviteOnly: '1' when only invited visitors may join (enqueue.lua).
    inviteOnly = v[21] == '1',
    -- notify: the claim window (ms) of a visitor told of their turn by a
    -- notice; 0: the room offers none (lib.lua NOTIFIED, notice.lua).
    notify = (tonumber(v[23]) or 0) * 1000,
  }
  c.rate = steer_rate(c, v[18])
  -- plan: the pace the ETAs are told at (pace below): the rate, or while it
  -- climbs a pace of the climb ahead, after a halving the cut it may bring
  -- (pace.lua pace_tick); within admitPerMinuteMin..admitPerMinute.
  c.plan = c.rate
  if c.rateMin > 0 and v[22] then c.plan = math.min(c.configured, math.max(c.rateMin, tonumber(v[22]) or c.rate)) end
  -- While the steered pace climbs (pace.lua pace_tick), its slope (admissions a minute,
  -- each minute) and where it stops: each place's own pace follows the climb
  -- (pace below). 0 when it does not climb.
  c.slope, c.top = 0, c.rate
  if c.rateMin > 0 then
    c.slope = tonumber(v[24]) or 0
    c.top = math.min(c.configured, math.max(c.rate, tonumber(v[25]) or c.rate))
  end
  return c
end

-- open_for_arrivals reports whether a room's joins go to arrival lists rather
-- than straight into the queue: its joins are or were spread (arrk > 0: once
-- spread, always merged, so a join after joinShards went back to 0 cannot
-- overtake one still on a shard) and it queues them now (queue or auto,
-- opened). Pre-queue draws and passthrough grants are never buffered.
local function open_for_arrivals(cfg, now)
  return cfg.shards > 0 and (cfg.mode == 'queue' or cfg.mode == 'auto') and cfg.opensAt <= now
end

-- limit_gcra is a GCRA of one key (a STRING: the theoretical arrival time, ms,
-- expiring when idle): one event every interval ms, with a burst of burst.
-- Returns 0 when the event may go ahead (and counts it), else the wait (ms).
-- notice.lua limits sign-ups with it (limit_client is the join's own).
local function limit_gcra(interval, burst, key, now)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local allow_at = tat - interval * (burst - 1)
  if now < allow_at then return math.ceil(allow_at - now) end
  local new_tat = tat + interval
  redis.call('SET', key, string.format('%.0f', new_tat), 'PX', math.ceil(new_tat - now) + 1000)
  return 0
end

-- limit_client is the per-client join limit, a GCRA (generic cell rate
-- algorithm: one timestamp per client, no counters to reset): per_minute joins a
-- minute with a burst of a tenth of it (at least 1); 0 turns it off. key is the
-- client's STRING (theoretical arrival time, ms, expiring when idle). Returns 0
-- when the join may go ahead (and counts it), else the wait (ms).
local function limit_client(per_minute, key, now)
  if per_minute <= 0 or not key then return 0 end
  return limit_gcra(60000 / per_minute, math.max(1, math.floor(per_minute / 10)), key, now)
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
-- ROOM_HOME is the class of an arrival shard's heartbeat that says "ask the room's
-- shard" (spoll.lua): the visitor came near the front, or left. A marker, not a
-- heartbeat: the shard's sweep drops it once the head passes its sequence.
local ROOM_HOME = 63
-- hbseq is the sequence of a heartbeat field (hbf's inverse).
local function hbseq(f)
  if S then return (S.unpack('>I7', f)) end
  local n = 0
  for i = 1, #f do n = n * 256 + string.byte(f, i) end
  return n
end
-- shf is a visitor's field in an arrival shard's heartbeats: the sequence over 16
-- as a 6-byte big-endian integer. Every sequence a shard issues has the same residue
-- modulo 16 (the shard's number plus one), so the quotient names it there; a field
-- of 6 bytes is one 8-byte allocation in Redis where hbf's 7 take 16, 8 bytes less a
-- far visitor (docs/ENGINE.md, "Memory per waiting visitor"). It holds until the
-- sequences pass 16 x 2^48 µs, in 2112.
local function shf(m)
  local q = math.floor(tonumber(m) / 16)
  if S then return S.pack('>I6', q) end
  return be(q, 6)
end
-- shbase is the sequence of a shard's heartbeat field less its residue (shf's
-- inverse but for the residue, which is the shard's): a field of 7 bytes is hbf's,
-- written before shf, and its whole sequence.
local function shbase(f)
  if #f == 7 then return hbseq(f) end
  if S then return (S.unpack('>I6', f)) * 16 end
  local n = 0
  for i = 1, #f do n = n * 256 + string.byte(f, i) end
  return n * 16
end
-- NOTIFIED is the class of a place whose visitor asked for a notice of their
-- turn (notice.lua): such a visitor may have looked away, and a suspended tab
-- polls nothing, so the place is held NOTIFIED_MS (a day, a ticket's life)
-- without a poll; poll.lua keeps the class, and the tick grants the place the
-- notified claim window (room.NotifiedClass, docs/ENGINE.md "Notices").
local NOTIFIED, NOTIFIED_MS = 62, 86400000
-- told_ms is the silence class c allows before the grace (room.ToldMS),
-- remembered per call: a tick reads thousands of heartbeats of a few classes.
local TOLD = {[0] = 0, [NOTIFIED] = NOTIFIED_MS}
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

-- on_shard reports whether sequence s was issued by one of the room's arrival
-- shards (residue 1..shards, lib next_seq). In a room whose joins spread, such a
-- visitor's heartbeat lives on that shard while far from the front (spoll.lua,
-- docs/ENGINE.md "Heartbeats on the arrival shards"): no heartbeat of theirs on
-- the room's shard means "on the shard", not "lost".
local function on_shard(s, shards)
  local r = s % 16
  return r >= 1 and r <= shards
end

-- MAX_TOLD is the longest budget of a waiting visitor near their turn (ms,
-- room.MaxPollAfter), and the budget of the pre-queue and of a paused or closed
-- room; SLACK is what the poll policy may add to the ETA to land just after the
-- visitor's admission tick (room.PollSlack). Farther back a poll only has to
-- prove presence (the page's status reads show a change within the rule), so
-- the budget grows with the ETA, leaving FAR_LEFT of the wait, up to FAR_TOLD
-- (room.FarPollAfter, room.FarLeft): a visitor who left is evicted, after the
-- budget and the default grace of 2 minutes, still before the front comes near.
local MAX_TOLD, SLACK = 300000, 5000
local FAR_TOLD, FAR_LEFT = 600000, 300000

-- budget_of is the budget of a waiting place whose ETA is eta ms: the ETA plus
-- SLACK, at most MAX_TOLD; beyond MAX_TOLD + FAR_LEFT, the ETA less FAR_LEFT,
-- at most FAR_TOLD.
local function budget_of(eta)
  return math.max(math.min(MAX_TOLD, eta + SLACK), math.min(FAR_TOLD, eta - FAR_LEFT))
end

-- climb_minutes is how long places take to pass at a pace of rate a minute
-- climbing by slope a minute each minute up to top (places = rate t + slope
-- t^2 / 2 until the top, then top a minute).
local function climb_minutes(rate, slope, top, places)
  if slope <= 0 or rate >= top then return places / top end
  local t = (top - rate) / slope
  local at = rate * t + slope * t * t / 2
  if places <= at then return (math.sqrt(rate * rate + 2 * slope * places) - rate) / slope end
  return t + (places - at) / top
end

-- pace is how many places a minute the line moves for whoever waits now, the
-- rate every ETA and told poll is made from (docs/ENGINE.md, "The pace"). Its
-- admissions are the configured rate while a slot is free (a full bucket and
-- a free slot admit at the next tick, whatever was measured while few came;
-- while a steered pace climbs, the plan of its climb: pace.lua pace_plan);
-- once the ticks find every slot taken (cfg.full), the rate slots free at: the
-- admissions measured, at least every slot once per longest hold (sessionTTL
-- or claimTTL), never above the configured rate, so a lower rate is believed
-- at once. The line moves faster than its admissions by the visitors ahead
-- skipped as stale (cfg.share: the share of the front admitted, at least a
-- half); cfg.measured is already the front's speed (admissions over it).
-- While a steered pace climbs, the place at pos (when given) is told its own
-- pace: its places over the time the climb takes to pass them (climb_minutes),
-- so each place's ETA is its own wait on the climb; without a place, the
-- climb's one plan (pace.lua pace_plan).
local function pace(cfg, pos)
  if cfg.full ~= '1' then
    if pos and pos > 0 and cfg.slope > 0 then
      return pos / climb_minutes(cfg.rate, cfg.slope, cfg.top, pos * cfg.share)
    end
    return cfg.plan / cfg.share
  end
  local floor = cfg.maxActive * 60000 / math.max(cfg.sessionTTL, cfg.claimTTL)
  return math.min(cfg.rate, math.max((tonumber(cfg.measured) or 0) * cfg.share, floor)) / cfg.share
end

-- told_class is the smallest class whose silence covers budget ms (room.ToldClass).
local function told_class(budget)
  local c = 1
  if budget > 1000 then c = 1 + math.ceil(4 * math.log(budget / 1000) / math.log(2) - 1e-9) end
  if told_ms(c) < budget then c = c + 1 end
  return c
end

-- told_at is the heartbeat class of a place: how long the engine holds it
-- without a poll, beyond the grace. A waiting visitor at position pos of a
-- line that moves per_minute places a minute is told to poll by its ETA at the
-- latest (position over the pace, plus SLACK), never later than MAX_TOLD,
-- farther back the ETA less FAR_LEFT up to FAR_TOLD (budget_of), and no later
-- than cap ms when given (at least a second: spoll.lua's bound by the zone);
-- anywhere nobody is admitted from (pos nil: pre-queue, paused, closed),
-- MAX_TOLD. Returns the class and its budget (ms), which the reply carries:
-- the poll policy (internal/pollpolicy) tells no more than that.
local function told_at(pos, per_minute, cap)
  local budget = MAX_TOLD
  if pos then budget = budget_of(math.floor(pos * 60000 / per_minute)) end
  if cap then budget = math.max(1000, math.min(budget, cap)) end
  return told_class(budget), budget
end

-- told is told_at of a place of the room, at its pace (pace above).
local function told(cfg, pos)
  return told_at(pos, pos and pace(cfg, pos))
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
  local ends = created + FAR_TOLD + 2 * cfg.hbTTL
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
-- id, value = sequence), which expires at the end of the next day: a join is
-- known on its day and the next (docs/ENGINE.md, "Memory per join"). A script
-- whose caller keeps none passes no key (nil).
local function remember(key, visitor, m, now)
  if not key then return end
  redis.call('HSET', key, visitor, m)
  if redis.call('HLEN', key) == 1 then
    redis.call('EXPIREAT', key, (math.floor(now / 86400000) + 2) * 86400)
  end
end

-- serve records in key, the SET of the day's served visitors (roomdb's
-- Keys.Served: member = the sequence as hbf writes it), that the grant m was
-- consumed or given up. used keeps a grant only until its token would have
-- expired; this record keeps it served as long as support can look the
-- visitor up (was_served: restore.lua refuses it, visitor.lua says served).
-- The set expires at the end of the second day after its day, a day after the
-- reference hashes of that day (remember), whatever the functions' clocks.
local function serve(key, m, now)
  redis.call('SADD', key, hbf(m))
  if redis.call('SCARD', key) == 1 then
    redis.call('EXPIREAT', key, (math.floor(now / 86400000) + 3) * 86400)
  end
end

-- was_served reports whether m is in one of the served sets KEYS[from..] (serve).
local function was_served(m, from)
  local f = hbf(m)
  for i = from, #KEYS do
    if redis.call('SISMEMBER', KEYS[i], f) == 1 then return true end
  end
  return false
end

-- bypass_score is the queue score of a bypass invitation's join of sequence
-- seq (bypass.lua): seq / 2^53 - 1, in [-1, 0), ahead of every draw and
-- sequence, in join order among bypass holders.
local function bypass_score(seq) return num(seq / 9007199254740992 - 1) end

-- The trail (roomdb's Visitor; docs/OPERATING.md, "Support lookup") keeps
-- for support what a place's keys forget once it leaves the queue: its
-- heartbeat goes at the admission or the eviction, its grant at the consume.
-- In key, the trail HASH of the day it is written (roomdb's Keys.Trail):
-- field = hbf(m), value = trail_value(last poll, admission), 12 bytes; it
-- expires at the end of the second day after its day, as the served records
-- (serve) do, so a visitor support can find has theirs whatever the clocks.
-- cfg.trail is the key when the caller passes one (nil: none kept, e.g. a
-- tool filling a queue).
local function trail_value(seen, admitted) return be(seen, 6) .. be(admitted, 6) end
-- trail_put writes the n field, value items of fv to key.
local function trail_put(key, now, fv, n)
  if not key or n == 0 then return end
  for i = 1, n, 2000 do
    redis.call('HSET', key, unpack(fv, i, math.min(i + 1999, n)))
  end
  if redis.call('TTL', key) < 0 then
    redis.call('EXPIREAT', key, (math.floor(now / 86400000) + 3) * 86400)
  end
end

-- grant turns a new arrival into an admission with a claim deadline.
local function grant(cfg, now, m, score)
  local deadline = now + cfg.claimTTL
  redis.call('ZADD', K_ADM, num(deadline), m)
  -- Admitted on joining: no poll yet.
  if cfg.trail then trail_put(cfg.trail, now, {hbf(m), trail_value(0, now)}, 2) end
  if score > head() then redis.call('HSET', K_ST, 'head', num(score)) end
  return deadline
end

local function free_slots(cfg)
  return cfg.maxActive - redis.call('ZCARD', K_ADM) - redis.call('ZCARD', K_ACT)
end

-- The fields of the settings hash that are the engine's own, not settings.
local INTERNAL = {seed = true, ver = true, rate = true, waiting = true, arrk = true, full = true, share = true,
  zone = true, eff = true, effwhy = true, effplan = true, effslope = true, efftop = true, net = true, netwhy = true,
  netat = true, region = true, regionEpoch = true}

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
  local at
  if state == 'waiting' then at = pos end
  local out = {state, m or '', draw or '', pos or 0, waiting or 0, d, math.floor(pace(cfg, at) * 1000), cfg.ver,
    within or 0, cfg.notified and 1 or 0}
  if cfg.ver == '' or cfg.ver ~= cfg.known then settings(out) end
  return out
end

-- The steering (docs/ENGINE.md, "Steering"): an auto room's safety net, and
-- the pace that follows the origin's load. ARRIVAL_TAU is the time constant
-- (ms) of the arrival rate (ar in st, arrivals a minute, decayed
-- exponentially from art: a steady stream of n a minute reads n).
local ARRIVAL_TAU = 10000
local function arrival_rate(ar, art, now)
  ar, art = tonumber(ar) or 0, tonumber(art) or now
  if now > art then ar = ar * math.exp((art - now) / ARRIVAL_TAU) end
  return ar
end

-- net_on switches the net on, for why ('arrivals', 'queue', 'full', 'rate',
-- 'restored'); the next tick reports the switch (steer).
local function net_on(why, now)
  redis.call('HSET', K_CFG, 'net', '1', 'netwhy', why, 'netat', tostring(now))
  redis.call('HDEL', K_ST, 'calm')
end

-- net_join is an auto room's join (enqueue.lua). It counts the arrival and,
-- while the net is off, grants at once when arrivals are not above
-- queueAbovePerMinute, nobody waits, a slot is free and the bucket holds a
-- token; else it switches the net on. Returns the grant's deadline, or nil:
-- the visitor queues.
local function net_join(cfg, now, m, seq)
  local st = redis.call('HMGET', K_ST, 'ar', 'art', 'tokens', 'refill')
  local ar = arrival_rate(st[1], st[2], now) + 60000 / ARRIVAL_TAU
  redis.call('HSET', K_ST, 'ar', num(ar), 'art', tostring(now))
  if cfg.net == '1' then return nil end
  local why = 'arrivals'
  if cfg.queueAbove > 0 and ar > cfg.queueAbove then
    why = 'arrivals'
  elseif redis.call('ZCARD', K_Q) > 0 then
    why = 'queue'
  elseif free_slots(cfg) <= 0 then
    why = 'full'
  else
    local tokens, refilled = refill(cfg, now, st[3], st[4])
    if tokens >= 1 then
      store_bucket(tokens - 1, refilled)
      count_admissions(now, 1)
      return grant(cfg, now, m, seq)
    end
    why = 'rate'
  end
  net_on(why, now)
  return nil
end

-- net_tick is a tick's turn of an auto room's net: on when arrivals passed
-- queueAbovePerMinute or anyone waits (a restored place, a merged arrival);
-- off once arrivals stayed below queueBelowPerMinute (0: any) for calmSeconds
-- with nobody waiting (calm in st: when that spell began).
local function net_tick(cfg, now, waiting)
  local v = redis.call('HMGET', K_CFG, 'queueBelowPerMinute', 'calmSeconds')
  local st = redis.call('HMGET', K_ST, 'ar', 'art', 'calm')
  local ar = arrival_rate(st[1], st[2], now)
  if cfg.net ~= '1' then
    if cfg.queueAbove > 0 and ar > cfg.queueAbove then
      net_on('arrivals', now)
    elseif waiting > 0 then
      net_on('queue', now)
    end
    return
  end
  local below = tonumber(v[1]) or 0
  if waiting > 0 or (below > 0 and ar >= below) then
    if st[3] then redis.call('HDEL', K_ST, 'calm') end
    return
  end
  local calm = tonumber(st[3])
  if not calm then
    calm = now
    redis.call('HSET', K_ST, 'calm', tostring(now))
  end
  if now - calm >= (tonumber(v[2]) or 0) * 1000 then
    redis.call('HSET', K_CFG, 'net', '0', 'netwhy', 'calm', 'netat', tostring(now))
    redis.call('HDEL', K_ST, 'calm')
  end
end

-- steer_created is a new room's net and pace (config.lua): a room created
-- over a floor (restored after a total loss, head.lua) comes back with the net
-- on and its pace at admitPerMinuteMin; any other new room's pace starts at
-- admitPerMinute (steer_rate).
local function steer_created(now)
  if redis.call('HEXISTS', K_ST, 'floor') == 1 then
    net_on('restored', now)
    local lo = tonumber(redis.call('HGET', K_CFG, 'admitPerMinuteMin')) or 0
    if lo > 0 then redis.call('HSET', K_CFG, 'eff', num(lo), 'effwhy', 'floor') end
  end
end

-- notice_forget deletes the notice registrations of members[i..j] (their
-- sealed addresses, in ntc: vst:{room}:ntc), and, when given, their due
-- notices (ntd) and notified grants (ntg): a place that ends takes its address
-- with it (docs/ENGINE.md, "Notices"). A script whose caller passes no ntc
-- forgets nothing. Returns how many of them still had a notice due.
local function notice_forget(ntc, ntd, ntg, members, i, j)
  if not ntc or #members == 0 then return 0 end
  i, j = i or 1, j or #members
  redis.call('HDEL', ntc, unpack(members, i, j))
  local due = 0
  if ntd then due = redis.call('ZREM', ntd, unpack(members, i, j)) end
  if ntg then redis.call('ZREM', ntg, unpack(members, i, j)) end
  return due
end

-- notice_granted settles the grants a tick gave places with a notice (class
-- NOTIFIED; tick.lua granted them ndeadline): each whose registration stands
-- and has not expired becomes due now (ntd), its deadline kept in ntg; any
-- other (no registration, one past its ticket's life, or a room whose
-- notifiedClaimTTLSeconds is 0) gets the usual deadline and loses what is left
-- of its registration.
local function notice_granted(cfg, now, members, deadline, ndeadline, ntc, ntd, ntg)
  if not ntc then return end
  local regs = {}
  if cfg.notify > cfg.claimTTL then regs = redis.call('HMGET', ntc, unpack(members)) end
  local due, kept, back, drop, n, b, d = {}, {}, {}, {}, 0, 0, 0
  for i = 1, #members do
    local r, m = regs[i], members[i]
    local colon = r and string.find(r, ':', 1, true)
    local exp = colon and tonumber(string.sub(r, 1, colon - 1))
    if exp and exp > now then
      due[2 * n + 1], due[2 * n + 2] = now, m
      kept[2 * n + 1], kept[2 * n + 2] = ndeadline, m
      n = n + 1
    else
      back[2 * b + 1], back[2 * b + 2] = deadline, m
      b = b + 1
      d = d + 1
      drop[d] = m
    end
  end
  if n > 0 then
    redis.call('ZADD', ntd, unpack(due))
    redis.call('ZADD', ntg, unpack(kept))
  end
  if b > 0 then
    redis.call('ZADD', K_ADM, 'XX', unpack(back))
    redis.call('HDEL', ntc, unpack(drop))
  end
end
