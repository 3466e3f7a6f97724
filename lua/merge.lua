-- merge.lua: the last step of a tick (after its admissions) in a room whose joins are spread
-- (joinShards > 0; docs/ENGINE.md, "Arrival shards"): the arrivals at or below
-- the watermark go into the queue, in sequence order, behind everyone there.
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9] -> vst:{room}:arr  LIST  the room's own arrivals (enqueue.lua), in order
-- An arrival is 'sequence:join time (ms)': the join is the visitor's first
-- heartbeat, so the first poll after the merge is not refused as too soon.
-- ARGV[1] -> now (ms)
-- ARGV[2] -> the lowest of the arrival shards' marks (arrivals.lua): every arrival
--            not read from them is above it; '' when no shard was read
-- ARGV[3] -> '1' on the tick's last merge call: it also samples the queue (the progress below)
-- ARGV[4..] -> the arrivals read from the shards, in any order, two arguments each: the
--             sequence and the join time (ms), split by the engine, which sorts them
-- Returns {merged, mark, waiting, near, class, pace, zone, head, grace, climb, stride, rank, score, …}: how
-- many went into the queue, the merged mark (every sequence at or below it is merged, or left
-- before it could be; kept as the state's arrw, which poll reads), the queue's count; then what
-- the arrival shards keep for their visitors' polls (spoll.lua, written by arrtrim.lua): near,
-- the score at the zone's end (the arrivals at or below it got their heartbeat here, those
-- above it get it on their shard); class, the told class of their first heartbeat; the pace
-- (x 1000); zone, the positions whose polls go to the room's shard; the head; the grace (ms,
-- for the shards' sweeps); the climb while the pace climbs ('rate slope top' in places a
-- minute, '' for none: each far place's own pace, lib.lua pace); and on the last
-- call the progress: stride, then the queue's score at every stride-th rank from 0 (at most
-- SAMPLES of them); or {'noroom'}.
-- Merging again what a failed tick merged (or a concurrent tick) does nothing:
-- only sequences above arrw are taken.
local now = tonumber(ARGV[1])
-- SAMPLES is the most points of the progress a tick publishes.
local SAMPLES = 256
local cfg = load_cfg()
if not cfg then return {'noroom'} end
local st = redis.call('HMGET', K_ST, 'arrw', 'seq')
local done = tonumber(st[1]) or 0
-- The room's own shard takes part as a source too: its last sequence rises to
-- the server's time, so the joins it takes after this call are above the mark.
local mark = math.max(tonumber(st[2]) or 0, server_us())
redis.call('HSET', K_ST, 'seq', member(mark))
if ARGV[2] ~= '' then mark = math.min(mark, tonumber(ARGV[2])) end
-- An arrival's member is its sequence as arrive.lua or enqueue.lua wrote it
-- (lib.lua member), so it is taken as it is. The merge runs once per join, so
-- its loops count instead of using # and the room's own entries split with
-- find instead of a pattern (docs/ENGINE.md, "Scripts": what the parts of a
-- script cost).
local take, nums, at, n = {}, {}, {}, 0
local find, sub = string.find, string.sub
local oldest = now - 1000
local function consider(a, b)
  local s = tonumber(a)
  if s > mark then return false end
  if s > done then
    n = n + 1
    take[n], nums[n] = a, s
    b = tonumber(b)
    if b < oldest then b = oldest elseif b > now then b = now end
    at[n] = b
  end
  return true
end
for i = 4, #ARGV - 1, 2 do consider(ARGV[i], ARGV[i + 1]) end
local mine = redis.call('LRANGE', KEYS[9], 0, -1)
local own = 0 -- the room's own arrivals at or below the mark: a prefix, the list is in order
for i = 1, #mine do
  local x = mine[i]
  local c = find(x, ':', 1, true)
  if not consider(sub(x, 1, c - 1), sub(x, c + 1)) then break end
  own = i
end
if own > 0 then redis.call('LTRIM', KEYS[9], own, -1) end
-- No sort: the queue orders them by score. Their heartbeats hold the join as
-- the last contact (no older than a second before the merge, for a merge held
-- back) and one told class for all, the one of the last place: no visitor is
-- expected back sooner than their own place allows.
local waiting = redis.call('ZCARD', K_Q)
local class
if cfg.mode ~= 'queue' and cfg.mode ~= 'auto' or cfg.opensAt > now then
  class = told(cfg)
else
  class = told(cfg, waiting + n)
end
local anyleft = redis.call('ZCARD', K_LEFT) > 0
local added = 0
local kept = {} -- the arrivals queued (not left), by index
for i = 1, n, 1000 do
  local j = math.min(i + 999, n)
  -- Those who left before the merge (leave.lua records them) stay out.
  local gone = {}
  if anyleft then gone = redis.call('ZMSCORE', K_LEFT, unpack(take, i, j)) end
  local zs, z = {}, 0
  for k = i, j do
    if not gone[k - i + 1] then
      local m = take[k]
      zs[z + 1], zs[z + 2] = m, m
      z = z + 2
      kept[k] = true
    end
  end
  if z > 0 then added = added + redis.call('ZADD', K_Q, 'NX', unpack(zs)) end
end
if mark > done then
  redis.call('HSET', K_ST, 'arrw', member(mark))
else
  mark = done
end
waiting = redis.call('ZCARD', K_Q)

-- The zone: the first places of the queue, whose polls go to the room's shard
-- (spoll.lua sends them here), so the admission pass sees their heartbeats. It is
-- as far as the front can move in a heartbeat grace and 10 s more at twice the
-- configured rate (the bound every told poll is made for: docs/ENGINE.md,
-- "Polling"), plus a full bucket and the progress's stride (the estimates'
-- error): a visitor told by their shard to come back before the front can reach
-- the zone is never at the front without a heartbeat here. Arrivals in the zone
-- get their heartbeat here, the others on their shard (arrtrim.lua).
local stride = math.max(1, math.ceil(waiting / SAMPLES))
local zone = stride + math.ceil(2 * cfg.rate * (cfg.hbTTL + 10000) / 60000) + math.ceil(cfg.rate / 30)
redis.call('HSET', K_CFG, 'waiting', waiting, 'zone', zone)
local near = mark
if waiting > zone then
  local b = redis.call('ZRANGE', K_Q, zone, zone, 'WITHSCORES')
  if b[2] then near = tonumber(b[2]) end
end
for i = 1, n, 1000 do
  local hb, h = {}, 0
  for k = i, math.min(i + 999, n) do
    local s = nums[k]
    if kept[k] and (s <= near or not on_shard(s, cfg.shards)) then
      hb[h + 1], hb[h + 2] = hbf(s), hbv(at[k], class)
      h = h + 2
    end
  end
  if h > 0 then redis.call('HSET', K_HB, unpack(hb)) end
end
-- The shards' sweeps evict only where the room's does (tick.lua): not while
-- paused or closed, nor before the opening (grace 0: no sweep).
local grace = cfg.hbTTL
if cfg.mode == 'paused' or cfg.mode == 'closed' or cfg.opensAt > now then grace = 0 end
-- While the pace climbs, the climb in places a minute ('rate slope top', '' for
-- none): a shard tells each far place its own pace on it, as the room's does
-- (lib.lua pace).
local climb = ''
if cfg.full ~= '1' and cfg.slope > 0 then
  climb = num(cfg.rate / cfg.share) .. ' ' .. num(cfg.slope / cfg.share) .. ' ' .. num(cfg.top / cfg.share)
end
local out = {added, member(mark), waiting, member(near), class, math.floor(pace(cfg) * 1000), zone, member(head()),
  grace, climb}
if ARGV[3] == '1' then
  -- The progress: the queue's score every stride places, from which a shard
  -- estimates a position within half a stride (spoll.lua).
  out[#out + 1] = stride
  for r = 0, waiting - 1, stride do
    local g = redis.call('ZRANGE', K_Q, r, r, 'WITHSCORES')
    if not g[2] then break end
    out[#out + 1] = r
    out[#out + 1] = g[2]
  end
end
return out
