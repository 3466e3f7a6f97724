-- pace.lua: the pace that follows the origin (docs/ENGINE.md, "Steering"),
-- shared by the room scripts after lib.lua, on which it builds; lua.go puts
-- the definitions a script uses of both in front of it. Each tick steps the
-- pace (pace_step: a cut, a hold or a climb), then plans the pace the ETAs are
-- told at (pace_plan); pace_tick reads their inputs and stores what they say.
--
-- At an origin load (Vestibule-Load, 0..1: load and loadat in st) of
-- LOAD_HIGH or more the pace backs off to BACKOFF of itself, at most once
-- every BACKOFF_EVERY ms (the load answers admissions seconds later; within
-- LOAD_MEMORY of a cut, only while the load scaled to the new pace stays
-- high), and the first cut of a spell at a load of LOAD_FULL (at least full:
-- the pace may be twice what the origin takes) to BACKOFF_FULL of itself; from
-- LOAD_OK to LOAD_HIGH it holds; below LOAD_OK, or with no report for
-- LOAD_STALE ms, it climbs by (admitPerMinute - admitPerMinuteMin) every
-- CLIMB_MS, by at most CLIMB_STEP_MS of it a tick (a late tick does not
-- jump). Never below admitPerMinuteMin, never above admitPerMinute.
local LOAD_HIGH, LOAD_OK, LOAD_STALE = 0.9, 0.75, 30000
local BACKOFF, BACKOFF_EVERY, CLIMB_MS, CLIMB_STEP_MS = 0.75, 5000, 180000, 5000
-- LOAD_MEMORY: how long after a cut the origin's load still counts visitors
-- admitted before it (its window, 10 s in docs/API.md, and the seconds a
-- visitor takes to land after the grant).
local LOAD_MEMORY = 15000
local LOAD_FULL, BACKOFF_FULL = 1, 0.5
-- HALVED: a cut from pre to rate was a halving (BACKOFF_FULL) when rate is at
-- most half of pre, to within this share: the rates are products of floats.
local HALVED = 0.999

-- pace_step is one tick's step of the effective rate old within lo..hi, for
-- the origin's load (nil: no report younger than LOAD_STALE); was is why the
-- last step left it where it is, since the ms since the last cut, pre the rate
-- before it (nil: no cut yet), dt the ms since the last step. Returns the new rate,
-- why ('backoff', 'floor', 'hold', 'climb', 'quiet' (climbing without reports),
-- 'top', or was: a high load too soon after a cut) and whether it cut.
local function pace_step(old, lo, hi, load, was, since, pre, dt)
  if load and load >= LOAD_HIGH then
    local rate, why, cut = old, was, false
    -- Within LOAD_MEMORY of a cut the load still counts the visitors admitted
    -- before it: judged at the pace that made it (load x rate / the rate
    -- before the cut), a cut that answered it is not cut again. (A cut
    -- stores the time and pre together: within LOAD_MEMORY of one, pre is.)
    local seen = load
    if since < LOAD_MEMORY then seen = load * old / pre end
    if seen >= LOAD_HIGH and since >= BACKOFF_EVERY then
      local f = BACKOFF
      if load >= LOAD_FULL and was ~= 'backoff' and was ~= 'floor' then f = BACKOFF_FULL end
      rate, why, cut = math.max(lo, old * f), 'backoff', true
    end
    if rate <= lo then why = 'floor' end
    return rate, why, cut
  end
  if load and load >= LOAD_OK then return old, 'hold', false end
  local rate, why = math.min(hi, old + (hi - lo) * math.min(CLIMB_STEP_MS, dt) / CLIMB_MS), 'climb'
  if not load then why = 'quiet' end
  if rate >= hi then why = 'top' end
  return rate, why, false
end

-- climb_plan is the one pace of the climb where no place is given (a place
-- is told its own: lib.lua pace): the pace the ticks publish to the arrival
-- shards for their far visitors. The near places (a wait of NEAR_MIN minutes,
-- the shortest whose ETA counts) pass at about the rate, the last of the
-- waiting nearer the top. Told the geometric mean of the two, both ETAs lie
-- equally far from their waits; when they are too far apart for both to lie
-- within 0.67-1.5 (far over near above 2.25: a climb from the floor with a
-- long line), the near ones are told 0.67 of the pace they see and the far
-- ones run long, since a wait longer than told is the worse for a visitor.
local NEAR_MIN = 0.5
local function climb_plan(rate, slope, top, waiting)
  local near = math.min(top, rate + slope * NEAR_MIN / 2)
  local far = near
  if waiting and waiting > 0 then far = math.max(near, waiting / climb_minutes(rate, slope, top, waiting)) end
  return math.min(math.sqrt(near * far), near / 0.67)
end

-- pace_plan is what the ETAs are told after a step to rate (why) within
-- lo..hi: the plan (the pace without a place: lib.lua load_cfg's plan) and,
-- while it climbs, its slope (a minute, each minute) and top (0 and rate
-- otherwise). The climb stops at hi or, by the origin's load, where the origin
-- will say LOAD_HIGH (its load grows with the pace: rate / load is what it
-- takes in full). While the pace a halving (from pre) left stands, the plan
-- is the cut it brings should the origin take no more than the halved pace: a
-- wait told at the halved pace runs short if that cut comes, one told at the
-- cut's runs 1.33 x long if it does not, and a wait longer than told is the
-- lesser harm. Not only until the halved pace's load is known (LOAD_MEMORY):
-- a site at that pace reads about full, and may read a hold for a tick or two
-- before the cut.
local function pace_plan(rate, why, lo, hi, load, waiting, pre)
  local plan, slope, top = rate, 0, rate
  if (why == 'backoff' or why == 'hold') and pre >= 2 * rate * HALVED then
    plan = math.max(lo, rate * BACKOFF)
  end
  if why == 'climb' or why == 'quiet' then
    top = hi
    if load and load > 0 then top = math.min(hi, math.max(rate, rate / load * LOAD_HIGH)) end
    slope = (hi - lo) * 60000 / CLIMB_MS
    plan = climb_plan(rate, slope, top, waiting)
  end
  return plan, slope, top
end

-- pace_tick is a tick's step of the pace, stored in cfg (eff, effwhy, effplan,
-- effslope, efftop) and st (effat: the last step; effcut, effpre: the last
-- cut and the rate before it). Returns the rate before and after and why,
-- when a step is worth a report (a back-off, or a change of why); else nil.
local function pace_tick(cfg, now, waiting)
  if cfg.rateMin <= 0 or (cfg.mode ~= 'queue' and cfg.mode ~= 'auto') then return nil end
  local st = redis.call('HMGET', K_ST, 'load', 'loadat', 'effat', 'effcut', 'effpre')
  local was = redis.call('HGET', K_CFG, 'effwhy') or ''
  local load = tonumber(st[1])
  if load and now - (tonumber(st[2]) or 0) > LOAD_STALE then load = nil end
  local old, lo, hi = cfg.rate, cfg.rateMin, cfg.configured
  local cutat, pre = tonumber(st[4]), tonumber(st[5])
  local rate, why, cut = pace_step(old, lo, hi, load, was, now - (cutat or 0), pre,
    math.max(0, now - (tonumber(st[3]) or now)))
  if cut then
    pre = old
    redis.call('HSET', K_ST, 'effcut', tostring(now), 'effpre', num(old))
  end
  local plan, slope, top = pace_plan(rate, why, lo, hi, load, waiting, pre or 0)
  redis.call('HSET', K_ST, 'effat', tostring(now))
  redis.call('HSET', K_CFG, 'eff', num(rate), 'effwhy', why, 'effplan', num(plan), 'effslope', num(slope), 'efftop', num(top))
  if (cut and rate < old) or why ~= was then return old, rate, why end
  return nil
end

-- steer is a tick's turn of the net (auto, opened: lib.lua net_tick) and the
-- pace. Returns nil, or what the tick reports (tick.lua): {net ('1', '0' or
-- '' when it did not switch since the last report), why, pace before x 1000,
-- after x 1000 (both 0 when it did not change), why ('' for none)}.
local function steer(cfg, now, waiting)
  if cfg.mode == 'auto' and cfg.opensAt <= now then net_tick(cfg, now, waiting) end
  local old, new, pwhy = pace_tick(cfg, now, waiting)
  local v = redis.call('HMGET', K_CFG, 'net', 'netwhy')
  local net, seen = v[1] or '0', redis.call('HGET', K_ST, 'netseen') or '0'
  if net == seen and not pwhy then return nil end
  local out = {'', '', 0, 0, ''}
  if net ~= seen then
    redis.call('HSET', K_ST, 'netseen', net)
    out[1], out[2] = net, v[2] or ''
  end
  if pwhy then out[3], out[4], out[5] = math.floor(old * 1000), math.floor(new * 1000), pwhy end
  return out
end
