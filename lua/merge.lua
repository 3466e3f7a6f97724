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
-- ARGV[3..] -> the arrivals read from the shards, in any order, two arguments each: the
--             sequence and the join time (ms), split by the engine, which sorts them
-- Returns {merged, mark, waiting}: how many went into the queue, the merged mark
-- (every sequence at or below it is merged, or left before it could be; kept as
-- the state's arrw, which poll reads) and the queue's count; or {'noroom'}.
-- Merging again what a failed tick merged (or a concurrent tick) does nothing:
-- only sequences above arrw are taken.
local now = tonumber(ARGV[1])
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
for i = 3, #ARGV - 1, 2 do consider(ARGV[i], ARGV[i + 1]) end
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
for i = 1, n, 1000 do
  local j = math.min(i + 999, n)
  -- Those who left before the merge (leave.lua records them) stay out.
  local gone = {}
  if anyleft then gone = redis.call('ZMSCORE', K_LEFT, unpack(take, i, j)) end
  local zs, hb, z = {}, {}, 0
  for k = i, j do
    if not gone[k - i + 1] then
      local m = take[k]
      zs[z + 1], zs[z + 2] = m, m
      hb[z + 1], hb[z + 2] = hbf(nums[k]), hbv(at[k], class)
      z = z + 2
    end
  end
  if z > 0 then
    added = added + redis.call('ZADD', K_Q, 'NX', unpack(zs))
    redis.call('HSET', K_HB, unpack(hb))
  end
end
if mark > done then
  redis.call('HSET', K_ST, 'arrw', member(mark))
else
  mark = done
end
waiting = redis.call('ZCARD', K_Q)
redis.call('HSET', K_CFG, 'waiting', waiting)
return {added, member(mark), waiting}
