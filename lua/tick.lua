-- tick.lua: one admission tick of one room.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> batch: the most waiting visitors one call checks for a stale heartbeat
-- ARGV[3] -> guard (ms; 0 or absent: none): a tick asked with a guard does nothing and returns
--            {'busy'} when any tick ran less than that long before now (the state's tickat);
--            visitors' requests drive a quiet room's ticks this way, one per room per guard
-- ARGV[4] -> 1 when the last key, after KEYS[12], is the day's trail, vst:{room}:trail:<day> (lib.lua trail_put):
--            each place the tick admits is recorded there with its last poll and the admission,
--            each it evicts with its last poll
-- KEYS[9] -> vst:{room}:hist HASH  the room's last day, one point a minute (below)
-- KEYS[10] -> vst:{room}:ntc HASH  notice registrations: member -> 'expires ms:sealed address' (notice.lua)
-- KEYS[11] -> vst:{room}:ntd ZSET  notices due: member -> when to send (ms)
-- KEYS[12] -> vst:{room}:ntg ZSET  notified grants: member -> their claim deadline (ms)
-- Returns {admitted, evicted, grants reclaimed, sessions ended, arrival shards, notices due}, or {'noroom'}, or {'busy'}
-- (arrival shards: the settings' arrk, the most the room's joins ever spread over, so the engine's merge
-- needs no read of its own; 0 for a room that never spread); a tick that
-- changed something adds, for its admission event (internal/admission), {…, lowest sequence admitted,
-- highest sequence admitted (both 0 when none), waiting, admitted, active} (the counts after the tick);
-- a tick that switched the safety net or stepped the pace worth a report adds pace.lua steer's five to
-- that, and answers it even when no count changed.
-- The first tick of each minute (ms / 60000) writes that minute's point, the counts at the end
-- of the tick, to the history ring: field = minute % 1440 (room.HistoryMinutes), value =
-- 'minute:waiting:admitted:active:admitted in the last 60 s:evicted ever' (the state's histmin
-- is the last minute written), then ':left ever:lapsed ever' (the state's counters: waiting
-- visitors who left by the leave route; grants that ended unused, reclaimed at their claim
-- deadline or given up), then ':notices sent ever:notices failed ever:turns saved ever' (docs/ENGINE.md,
-- "Notices"). A hash of at most 2 x 1440 fields (with the waits below).
-- The waits: each visitor the tick admits from the queue waited now - its join time, the sequence
-- read as Redis time in µs (lib.lua next_seq), or, for a pre-queue arrival, now - opensAt. The tick
-- counts them in log-spaced buckets (room.WaitBucket: 0 below 1 s, then four a doubling) in the
-- state's fields w<bucket>, for the minute in wm; the first tick of the next minute moves them to
-- the history as field 'w' .. minute % 1440, value 'minute:bucket=count,…'.
-- The peak: the most visitors waiting at any tick of the minute (the queue's count before
-- the tick's admissions, or after them), kept in the state's fields qp (the count) for the
-- minute qpm; the first tick of the next minute moves it to the history as field
-- 'p' .. minute % 1440, value 'minute:most waiting' (a burst that joins and is admitted
-- within a minute has no point of its own: the point counts the first tick's queue).
-- Every tick that runs records now as tickat.
-- Notices (docs/ENGINE.md, "Notices"): a place whose heartbeat has the class NOTIFIED (lib.lua)
-- is granted the notified claim window (notifiedClaimTTLSeconds) instead of claimTTLSeconds and
-- its notice becomes due (ntd, ntg); a notified grant that ends unclaimed takes its registration
-- with it, a notice never sent counting as failed. 'notices due' is how many are due now: the
-- notify function sends them (functions/notify, from this tick's event).
-- Reclaims expired grants and sessions always; in a paused or closed room and
-- before opensAt it does nothing else. In passthrough it admits up to `batch`
-- of those who were waiting when the room switched, without capacity or rate. Otherwise it refills
-- the admission bucket by elapsed time, sweeps the next `batch` waiting visitors less those it
-- will admit from the sweep cursor (wrapping around) and evicts the stale ones, and admits
-- min(floor(tokens), maxActive - admitted - active) in score order, skipping
-- (evicting) stale visitors, carrying the fraction of a token.
local now = tonumber(ARGV[1])
local batch = tonumber(ARGV[2])
-- The waits' buckets (room.WaitBucket, room.WaitBuckets): 0 below 1 s, then
-- bucket b holds waits in [2^((b-1)/4), 2^(b/4)) s; the last holds every longer one.
local WAIT_BUCKETS = 81
local WAIT_PER_LN = 4 / math.log(2)

local cfg = load_cfg()
if not cfg then return {'noroom'} end
if ARGV[4] == '1' then cfg.trail = KEYS[#KEYS] end
local st = redis.call('HMGET', K_ST, 'head', 'tokens', 'refill', 'sweep', 'created', 'epoch', 'since', 'oldest',
  'hbgrace', 'hbgraceuntil', 'tickat', 'histmin', 'evicted', 'fa', 'fs', 'fl', 'wm', 'left', 'lapsed',
  'nsent', 'nfail', 'nsaved')
local guard = tonumber(ARGV[3]) or 0
local last = tonumber(st[11])
if guard > 0 and last and now >= last and now - last < guard then return {'busy'} end
redis.call('HSET', K_ST, 'tickat', tostring(now))
local top = tonumber(st[1]) or -1
local rec_end, epoch = recovery(cfg, now, st[5], st[6])

local reclaimed = redis.call('ZREMRANGEBYSCORE', K_ADM, '-inf', '(' .. now)
-- A notified grant that ended unclaimed: its registration goes with it, and a
-- notice still due was never sent (failed).
local K_NTC, K_NTD, K_NTG = KEYS[10], KEYS[11], KEYS[12]
local nfailed = 0
if K_NTG then
  local over = redis.call('ZRANGEBYSCORE', K_NTG, '-inf', '(' .. now)
  for i = 1, #over, 1000 do nfailed = nfailed + notice_forget(K_NTC, K_NTD, K_NTG, over, i, math.min(i + 999, #over)) end
  if nfailed > 0 then redis.call('HINCRBY', K_ST, 'nfail', nfailed) end
end
local ended = redis.call('ZREMRANGEBYSCORE', K_ACT, '-inf', '(' .. now)
-- A consumed grant's token expires by its claim deadline; keep the record that long (plus leeway).
redis.call('ZREMRANGEBYSCORE', K_USED, '-inf', '(' .. (now - cfg.claimTTL - 60000))
-- A leaver's record goes once the head passed the place for good: in a
-- recovery window, tickets from before the epoch may come back past the head.
if rec_end then
  redis.call('ZREMRANGEBYSCORE', K_LEFT, member(epoch), num(top))
else
  redis.call('ZREMRANGEBYSCORE', K_LEFT, '-inf', num(top))
end

local admitted, evicted, skipped = 0, 0, 0 -- skipped: stale visitors evicted at the front
local waits = {} -- bucket -> visitors admitted with that wait (room.WaitBucket)
local full = cfg.full -- '1' while the ticks find every slot taken (below)
local lo, hi -- the lowest and highest sequence admitted (for the admission event)
-- flush_waits moves the waits counted in an earlier minute to the history,
-- then adds this tick's to the current minute's.
local function flush_waits(minute)
  local wm = tonumber(st[17])
  if wm and wm ~= minute then
    local fields = {}
    for b = 0, WAIT_BUCKETS - 1 do fields[b + 1] = 'w' .. b end
    local got = redis.call('HMGET', K_ST, unpack(fields))
    local parts = {}
    for b = 0, WAIT_BUCKETS - 1 do
      if got[b + 1] then parts[#parts + 1] = b .. '=' .. got[b + 1] end
    end
    if #parts > 0 and KEYS[9] then
      redis.call('HSET', KEYS[9], 'w' .. (wm % 1440), member(wm) .. ':' .. table.concat(parts, ','))
    end
    redis.call('HDEL', K_ST, 'wm', unpack(fields))
    wm = nil
  end
  local any = false
  for b, n in pairs(waits) do
    redis.call('HINCRBY', K_ST, 'w' .. b, n)
    any = true
  end
  if any and not wm then redis.call('HSET', K_ST, 'wm', member(minute)) end
end

-- keep_peak counts the queue's count at this tick, before (the count the
-- scripts keep, lib.lua) and after it (waiting), in the minute's peak, and
-- moves an earlier minute's peak to the history.
local function keep_peak(minute, waiting)
  local most = math.max(cfg.waiting, waiting)
  local kept = redis.call('HMGET', K_ST, 'qpm', 'qp')
  local qpm, qp = tonumber(kept[1]), tonumber(kept[2]) or 0
  if qpm == minute then
    if most > qp then redis.call('HSET', K_ST, 'qp', most) end
    return
  end
  if qpm and qp > 0 and KEYS[9] then
    redis.call('HSET', KEYS[9], 'p' .. (qpm % 1440), member(qpm) .. ':' .. qp)
  end
  redis.call('HSET', K_ST, 'qpm', member(minute), 'qp', most)
end

local function finish()
  if evicted > 0 then redis.call('HINCRBY', K_ST, 'evicted', evicted) end
  count_admissions(now, admitted)
  -- The rate estimate: admissions in the last minute, scaled up while the room
  -- has been admitting for less than a minute (since = the last idle instant).
  -- It lives in the settings hash, so poll and enqueue read it with the settings.
  local sum = admitted_last_minute(now)
  local since = tonumber(st[7]) or now
  if sum == 0 then
    since = now
    redis.call('HSET', K_ST, 'since', tostring(now))
  end
  local window = math.min(60000, math.max(1000, now - since))
  -- The front moves faster than admissions when visitors ahead who left are
  -- skipped there, so the rate visitors are told (their ETA, their next poll,
  -- the page's count) is the front's speed: admissions over the share of the
  -- front that was admitted (fa, fs: admitted and skipped, decayed by 0.95 a
  -- tick that moved the front), counted at most double.
  local fa, fs = tonumber(st[14]) or 0, tonumber(st[15]) or 0
  if admitted + skipped > 0 then
    fa, fs = fa * 0.95 + admitted, fs * 0.95 + skipped
    redis.call('HSET', K_ST, 'fa', num(fa), 'fs', num(fs))
  end
  local share = 1
  if fa > 0 then share = math.max(0.5, fa / (fa + fs)) end
  local rate = tostring(math.floor(sum * 60000 / window / share))
  -- The share, for the pace (lib.lua): in twentieths, written when it moves,
  -- so the pace pages count at does not change with every tick.
  share = string.format('%.2f', math.floor(share * 20 + 0.5) / 20)
  -- The queue's count, exact once a tick whatever changed the queue (lib.lua).
  local waiting = redis.call('ZCARD', K_Q)
  if rate ~= cfg.measured or waiting ~= cfg.waiting or full ~= cfg.full or tonumber(share) ~= cfg.share then
    redis.call('HSET', K_CFG, 'rate', rate, 'waiting', waiting, 'full', full, 'share', share)
  end
  local minute = math.floor(now / 60000)
  local lapsed = (tonumber(st[19]) or 0) + reclaimed
  if reclaimed > 0 then redis.call('HINCRBY', K_ST, 'lapsed', reclaimed) end
  if KEYS[9] and minute ~= tonumber(st[12]) then
    redis.call('HSET', KEYS[9], tostring(minute % 1440), table.concat({member(minute), waiting,
      redis.call('ZCARD', K_ADM), redis.call('ZCARD', K_ACT), sum, (tonumber(st[13]) or 0) + evicted,
      tonumber(st[18]) or 0, lapsed, tonumber(st[20]) or 0, (tonumber(st[21]) or 0) + nfailed,
      tonumber(st[22]) or 0}, ':'))
    redis.call('HSET', K_ST, 'histmin', member(minute))
  end
  flush_waits(minute)
  keep_peak(minute, waiting)
  local steered = steer(cfg, now, waiting)
  local due = 0
  if K_NTD then due = redis.call('ZCOUNT', K_NTD, '-inf', now) end
  if admitted + evicted + reclaimed + ended + due == 0 and not steered then
    return {admitted, evicted, reclaimed, ended, cfg.shards, 0}
  end
  local out = {admitted, evicted, reclaimed, ended, cfg.shards, due, member(lo or 0), member(hi or 0),
    redis.call('ZCARD', K_Q), redis.call('ZCARD', K_ADM), redis.call('ZCARD', K_ACT)}
  if steered then for i = 1, #steered do out[#out + 1] = steered[i] end end
  return out
end

if cfg.mode == 'paused' or cfg.mode == 'closed' or cfg.opensAt > now then
  return finish()
end

-- Stale means silent for longer than the told poll (the heartbeat's class,
-- lib.lua) plus the grace (heartbeatTTLSeconds), or the grace before it was
-- shortened, while that one still applies (config.lua): a heartbeat is stale
-- when it was due before the cutoff.
local hbwindow = cfg.hbTTL
if st[10] and now < tonumber(st[10]) then hbwindow = math.max(hbwindow, tonumber(st[9])) end
local cutoff = now - hbwindow
-- evict removes stale visitors from the queue and their heartbeats; their
-- last polls (trail: field, value pairs) go to the trail.
local function evict(members, fields, trail)
  for i = 1, #members, 1000 do
    local j = math.min(i + 999, #members)
    redis.call('ZREM', K_Q, unpack(members, i, j))
    redis.call('HDEL', K_HB, unpack(fields, i, j))
    notice_forget(K_NTC, nil, nil, members, i, j)
  end
  trail_put(cfg.trail, now, trail, #trail)
  evicted = evicted + #members
end

-- The sweep: the heartbeat HASH has no order, so eviction walks the queue from
-- a cursor (the last score checked), at most `batch` a tick less what the tick
-- admits (below), wrapping around. A queue shorter than that is checked whole, and then `oldest` keeps
-- the earliest time a heartbeat is due, but no later than now: every heartbeat
-- written later is seen after now, so until that time passes the cutoff nobody
-- can be stale, and the sweep is skipped.
local tokens, refilled = refill(cfg, now, st[2], st[3])
local free = free_slots(cfg)
local n = math.min(math.floor(tokens), free)
-- passthrough admits everyone: drain those who waited before the switch.
if cfg.mode == 'passthrough' then n = batch end
-- A tick reads at most `batch` of the queue beside what it admits: the sweep
-- checks what the admissions leave of it (the admissions check the front's
-- heartbeats themselves, and a tick admitting thousands stays short).
local budget = batch - math.min(n, batch)

if budget > 0 and not (st[8] and cutoff <= tonumber(st[8])) then
  local cur = st[4]
  local got
  if cur then
    got = redis.call('ZRANGEBYSCORE', K_Q, '(' .. cur, '+inf', 'WITHSCORES', 'LIMIT', 0, budget)
    if #got < 2 * budget then
      local more = redis.call('ZRANGEBYSCORE', K_Q, '-inf', cur, 'WITHSCORES', 'LIMIT', 0, budget - #got / 2)
      for i = 1, #more do got[#got + 1] = more[i] end
    end
  else
    got = redis.call('ZRANGEBYSCORE', K_Q, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, budget)
  end
  local count = #got / 2
  local oldest = now
  local maxclass = told_class(FAR_TOLD)
  local stale, stalef, fresh, gone = {}, {}, {}, {}
  for i = 1, count, 1000 do
    local fields = {}
    for j = i, math.min(i + 999, count) do fields[#fields + 1] = hbf(got[2 * j - 1]) end
    local seen = redis.call('HMGET', K_HB, unpack(fields))
    for k = 1, #fields do
      local last_seen, t = hbt(seen[k])
      if not t then
        -- No heartbeat: a visitor of an arrival shard keeps it there while far
        -- from the front (the shard's sweep checks it); any other lost it with a
        -- partial data loss: it starts now, with the longest told poll the
        -- visitor may have been given.
        if not (cfg.shards > 0 and on_shard(tonumber(got[2 * (i + k - 1) - 1]), cfg.shards)) then
          fresh[#fresh + 1] = fields[k]
          fresh[#fresh + 1] = hbv(now, maxclass)
        end
      elseif t < cutoff then
        stale[#stale + 1] = got[2 * (i + k - 1) - 1]
        stalef[#stalef + 1] = fields[k]
        if cfg.trail then
          gone[#gone + 1] = fields[k]
          gone[#gone + 1] = trail_value(last_seen, 0)
        end
      elseif t < oldest then
        oldest = t
      end
    end
  end
  if #stale > 0 then evict(stale, stalef, gone) end
  for i = 1, #fresh, 2000 do
    redis.call('HSET', K_HB, unpack(fresh, i, math.min(i + 1999, #fresh)))
  end
  if count < budget then
    -- The whole queue was checked.
    if cur then redis.call('HDEL', K_ST, 'sweep') end
    redis.call('HSET', K_ST, 'oldest', tostring(oldest))
  else
    redis.call('HSET', K_ST, 'sweep', got[#got])
    if st[8] then redis.call('HDEL', K_ST, 'oldest') end
  end
end

local deadline = num(now + cfg.claimTTL)
-- A place with a notice (class NOTIFIED) is granted the notified window.
local ndeadline = deadline
if cfg.notify > cfg.claimTTL then ndeadline = num(now + cfg.notify) end
local ntold, nt = {}, 0 -- the notified grants of this tick
local keep = rec_end and num(rec_end)
-- The admission loop runs once per visitor admitted: hbf and hbt inlined, the
-- struct functions and math.floor held in locals (docs/ENGINE.md, "Scripts").
local floor, pack, unpk, log = math.floor, S and S.pack, S and S.unpack, math.log
-- The waits (above): the opening as a sequence, the bucket being counted, the
-- sequences it holds (wlo, whi], and how many of this tick so far.
local opened = cfg.opensAt * 1000
local wb, wlo, whi, wn = 0, 0, -1, 0
-- The trail (lib.lua trail_put): each place's last poll with the admission
-- (now) or, stale, none; written once a batch.
local trail, zero6 = cfg.trail, be(0, 6)
local now6 = be(now, 6)
local newtop = top
local pops = 0
while admitted < n and pops < n + batch do
  -- The front of the queue by rank, without scores, then removed by rank:
  -- cheaper than ZPOPMIN, which deletes one by one and formats every score.
  local got = redis.call('ZRANGE', K_Q, 0, math.min(n - admitted, 2000) - 1)
  local k = #got
  if k == 0 then break end
  -- One command per batch, not per visitor: the batch's heartbeats, then one
  -- HDEL and one ZADD (every grant of a tick shares its deadline).
  -- Each member is turned into a number once (hbf and lo/hi use it); the
  -- grants and served lists grow by counters, not the length operator.
  local fields, nums = {}, {}
  for i = 1, k do
    local s = tonumber(got[i])
    nums[i] = s
    if pack then fields[i] = pack('>I7', s) else fields[i] = hbf(s) end
  end
  local seen = redis.call('HMGET', K_HB, unpack(fields))
  local grants, served, g, sv = {}, {}, 0, 0
  local tv, tn = {}, 0
  local last
  local gone, gn = {}, 0 -- the stale ones skipped: their registrations go (lib.lua notice_forget)
  for i = 1, k do
    -- Stale: the heartbeat was due (last seen + its told silence) before the cutoff.
    local v, due, c, t = seen[i], nil, nil, 0
    if v then
      local x
      if unpk then x = unpk('>I6', v) else x = hbraw(v) end
      c = floor(x / SEEN)
      t = x - c * SEEN
      due = t + (TOLD[c] or told_ms(c))
    end
    pops = pops + 1
    if trail then
      tv[tn + 1] = fields[i]
      if pack then tv[tn + 2] = pack('>I6', t) else tv[tn + 2] = be(t, 6) end
      tn = tn + 2
    end
    if due and due < cutoff then
      evicted = evicted + 1
      skipped = skipped + 1
      if trail then tv[tn] = tv[tn] .. zero6 end
      if c == NOTIFIED then
        gn = gn + 1
        gone[gn] = got[i]
      end
    else
      if trail then tv[tn] = tv[tn] .. now6 end
      local m = got[i]
      if c == NOTIFIED then
        grants[g + 1] = ndeadline
        nt = nt + 1
        ntold[nt] = m
      else
        grants[g + 1] = deadline
      end
      grants[g + 2] = m
      g = g + 2
      admitted = admitted + 1
      last = m
      local s = nums[i]
      if not lo or s < lo then lo = s end
      if not hi or s > hi then hi = s end
      -- In a recovery window, a ticket from before the epoch may come back past
      -- the head: record that it was served, until the window ends.
      if keep and s < epoch then
        served[sv + 1] = keep
        served[sv + 2] = m
        sv = sv + 2
      end
      -- The wait, from the join (the sequence's µs) or the opening: counted in
      -- the bucket of the visitor before while the sequence is in its range
      -- (neighbours in the queue joined together), else found by its log.
      local j = s
      if j < opened then j = opened end
      if j > wlo and j <= whi then
        wn = wn + 1
      else
        if wn > 0 then waits[wb] = (waits[wb] or 0) + wn end
        local w = now - j / 1000
        if w < 1000 then
          wb, wlo, whi = 0, (now - 1000) * 1000, math.huge
        else
          wb = math.min(WAIT_BUCKETS - 1, floor(log(w / 1000) * WAIT_PER_LN) + 1)
          wlo, whi = (now - 1000 * 2 ^ (wb / 4)) * 1000, (now - 1000 * 2 ^ ((wb - 1) / 4)) * 1000
          if wb == WAIT_BUCKETS - 1 then wlo = -math.huge end
          -- the log's rounding at a bound: keep s inside the range it counts in
          if j <= wlo then wlo = j - 1 elseif j > whi then whi = j end
        end
        wn = 1
      end
    end
  end
  -- The head is the highest score admitted: the queue is in score order, so
  -- it is the last one granted. A visitor skipped as stale keeps the right to
  -- come back while the head is below them.
  if last then
    local score = tonumber(redis.call('ZSCORE', K_Q, last))
    if score > newtop then newtop = score end
  end
  redis.call('ZREMRANGEBYRANK', K_Q, 0, k - 1)
  redis.call('HDEL', K_HB, unpack(fields))
  if g > 0 then redis.call('ZADD', K_ADM, unpack(grants)) end
  if sv > 0 then redis.call('ZADD', K_USED, 'GT', unpack(served)) end
  trail_put(trail, now, tv, tn)
  if gn > 0 then notice_forget(K_NTC, nil, nil, gone) end
end
if nt > 0 then notice_granted(cfg, now, ntold, deadline, ndeadline, K_NTC, K_NTD, K_NTG) end
if wn > 0 then waits[wb] = (waits[wb] or 0) + wn end
if newtop > top then redis.call('HSET', K_ST, 'head', num(newtop)) end
if cfg.mode ~= 'passthrough' then
  store_bucket(tokens - admitted, refilled)
  -- Is the room full: does the tick end with every slot taken? The share of
  -- recent ticks that did (fl, decayed by 0.9 a tick) decides, with some
  -- hysteresis, so a room that frees a slot now and then does not flip the
  -- pace (lib.lua pace) every second: full from 0.6 up, not full below 0.4.
  local fl = (tonumber(st[16]) or 0) * 0.9
  if free - admitted <= 0 then fl = fl + 0.1 end
  if fl >= 0.6 then full = '1' elseif fl < 0.4 then full = '0' end
  redis.call('HSET', K_ST, 'fl', tostring(fl))
end
return finish()
