-- poll.lua: a visitor with a ticket asks where they stand; it is their heartbeat.
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- ARGV[2] -> member (the ticket's sequence, decimal)
-- ARGV[3] -> score (the ticket's draw if it has one, else its sequence)
-- ARGV[4] -> min interval (ms) between polls of one visitor; 0 for none
-- ARGV[5] -> the settings version the caller has cached ('' for none)
-- Returns the place shape of lib.lua's reply (in the pre-queue, position is the
-- place at the opening, not shown to the visitor), state one of 'prequeue', 'waiting',
-- 'paused', 'closed', 'admitted' (deadline = claim deadline), 'active' (deadline =
-- session end), 'expired'; or {'noroom'} for an unknown room, or {'slow', wait ms}
-- when a waiting visitor polls again sooner than the min interval. A place in the
-- queue gets a new heartbeat with its told class (lib.lua told): the reply's
-- 'poll within' is the budget the caller's poll policy must stay within.
-- A member found nowhere whose score the head has not passed (lib.lua passed),
-- and who did not leave, is restored at that score (I4): eviction and data loss
-- are one case.
-- ARRIVING is the budget (ms) a poll before the merge gets: the next tick's
-- (roomdb.arrivingPoll, which a join on an arrival shard is told too).
local ARRIVING = 2000
local now = tonumber(ARGV[1])
local m = ARGV[2]
local score = tonumber(ARGV[3])

local cfg = load_cfg()
if not cfg then return {'noroom'} end
cfg.known = ARGV[5]

local rank = redis.call('ZRANK', K_Q, m)
local nohb = false -- no heartbeat here
local notified = false -- the place has a notice: its heartbeat keeps the class NOTIFIED (lib.lua)
local f = hbf(m)
if not rank then
  local d = redis.call('ZSCORE', K_ADM, m)
  if d then
    if tonumber(d) < now then return reply(cfg, 'expired', m, '', 0, 0, 0) end
    return reply(cfg, 'admitted', m, '', 0, 0, tonumber(d))
  end
  local e = redis.call('ZSCORE', K_ACT, m)
  if e then return reply(cfg, 'active', m, '', 0, 0, tonumber(e)) end
  -- A visitor who left (or was drained, drain.lua) has no place, even in a closed room.
  if redis.call('ZSCORE', K_LEFT, m) then return reply(cfg, 'expired', m, '', 0, 0, 0) end
  -- A ticket of a deleted incarnation of the room (lib.lua buried) is dead in this one.
  if buried(tonumber(m)) then return reply(cfg, 'expired', m, '', 0, 0, 0) end
  if cfg.mode == 'closed' then return reply(cfg, 'closed', m, '', 0, redis.call('ZCARD', K_Q), 0) end
  -- A join to a room whose joins are spread waits in an arrival list until
  -- the tick merges it (merge.lua): above the merged mark it is not lost but
  -- arriving. It is not restored (it would overtake earlier arrivals still
  -- buffered); its place is an estimate, and it should come back after the tick.
  if cfg.shards > 0 and tonumber(m) > (tonumber(redis.call('HGET', K_ST, 'arrw')) or 0) then
    return reply(cfg, 'waiting', m, '', cfg.waiting + 1, cfg.waiting + 1, 0, ARRIVING)
  end
  if passed(cfg, now, tonumber(m), score) or redis.call('ZSCORE', K_USED, m) then
    return reply(cfg, 'expired', m, '', 0, 0, 0)
  end
  redis.call('ZADD', K_Q, ARGV[3], m)
  redis.call('HINCRBY', K_ST, 'restored', 1)
  nohb = true
  rank = redis.call('ZRANK', K_Q, m)
  -- A restore follows a loss that may have taken the queue but not the count: set it exact.
  cfg.waiting = redis.call('ZCARD', K_Q)
  redis.call('HSET', K_CFG, 'waiting', cfg.waiting)
else
  -- The heartbeat is read on every poll: for the min interval, and for its
  -- class (a place with a notice keeps NOTIFIED, below).
  local minInterval = tonumber(ARGV[4]) or 0
  local v = redis.call('HGET', K_HB, f)
  local seen = hbt(v)
  if seen and minInterval > 0 and now - seen < minInterval and now >= seen then
    return {'slow', minInterval - (now - seen)}
  end
  if not v then nohb = true elseif math.floor(hbraw(v) / SEEN) == NOTIFIED then notified = true end
end

-- Nobody is admitted from a closed or paused room, nor before the opening: no ETA.
local state, pos = 'waiting', rank + 1
if cfg.mode == 'closed' then
  state = 'closed'
elseif cfg.opensAt > now then
  state = 'prequeue'
elseif cfg.mode == 'paused' then
  state = 'paused'
end
local class, within
if state == 'waiting' then class, within = told(cfg, pos) else class, within = told(cfg) end
-- A visitor of an arrival shard with no heartbeat here, behind the zone, keeps it on
-- the shard (spoll.lua): the shard had none (a loss, a restore, a merge whose
-- heartbeats it could not write). No heartbeat here; a negative budget asks the
-- engine to start it there (spoll.lua's adopt).
if nohb and state ~= 'closed' and cfg.zone and pos > cfg.zone and on_shard(tonumber(m), cfg.shards) then
  within = -within
else
  if notified then class = NOTIFIED end
  cfg.notified = notified
  redis.call('HSET', K_HB, f, hbv(now, class))
end
-- The count kept with the settings (lib.lua: no ZCARD); never below the position.
local waiting = math.max(cfg.waiting, pos)
-- A pre-queued visitor's position is not shown (a lottery's draw stays hidden
-- until the opening) but goes back in the reply's position field: the place
-- they will have at the opening, by which the poll policy spreads the opening's
-- polls (internal/pollpolicy; the engine moves it to Place.OpeningRank). A
-- closed room's visitor's place is not shown either, but the poll policy
-- bounds its told poll by it (the room may open again).
return reply(cfg, state, m, '', pos, waiting, 0, within)
