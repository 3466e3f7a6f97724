-- spoll.lua: a poll of a visitor who joined on an arrival shard, on that shard, while
-- far from the front (docs/ENGINE.md, "Heartbeats on the arrival shards"). It touches no
-- key of the room's slot: the heartbeat is the shard's, the position an estimate from
-- the progress the ticks publish (arrtrim.lua), within half a stride of the exact rank
-- plus what one tick moves.
-- KEYS[1] -> vst:{room~i}:st   HASH  v (fence), w, arrw, pace, zone, head, stride, climb (arrtrim.lua)
-- KEYS[2] -> vst:{room~i}:hb   HASH  the shard's heartbeats (lib.lua shf, hbv)
-- KEYS[3] -> vst:{room~i}:prog ZSET  the progress: member = rank from 0, score = the queue's score there
-- ARGV[1] -> now (ms)   ARGV[2] -> the ticket's sequence (decimal)
-- ARGV[3] -> the fence of the settings the engine holds (lib.lua fence_of)
-- ARGV[4] -> the room's mode   ARGV[5] -> its opensAt (ms, 0 for none)
-- ARGV[6] -> the room's admitPerMinute   ARGV[7] -> min interval between polls (ms), 0 for none
-- ARGV[8] -> to adopt, the exact position the room's shard found the visitor at, far and
--            with no heartbeat of its own (poll.lua): the heartbeat starts here; else 0
-- Returns {state, position, waiting, pace x 1000, within} (state 'waiting', 'paused' or
-- 'prequeue'); {'slow', wait ms}; {'stale'} when a change of the settings fenced the shard
-- after the engine's (the engine reads them again); or {'room'}: ask the room's shard,
-- which knows: no progress published yet, a join not merged yet, no heartbeat here (a
-- leave, a loss, a visitor never seen here), a visitor the shard sent to the room before
-- (class ROOM_HOME), a closed room, or a place within the zone (then marked ROOM_HOME:
-- from now on the room's shard keeps the visitor's heartbeat).
local now = tonumber(ARGV[1])
local m = ARGV[2]
local seq = tonumber(m)
local st = redis.call('HMGET', KEYS[1], 'v', 'w', 'arrw', 'pace', 'zone', 'stride', 'climb')
if tonumber(ARGV[3]) < (tonumber(st[1]) or 0) then return {'stale'} end
if not st[4] or ARGV[4] == 'closed' or seq > (tonumber(st[3]) or 0) then return {'room'} end
local adopt = tonumber(ARGV[8]) > 0
local f = shf(seq)
local cur = hbraw(redis.call('HGET', KEYS[2], f))
if not cur then
  -- A heartbeat (or marker) written before shf, in hbf's field: it moves to shf's.
  local old = hbf(seq)
  local v = redis.call('HGET', KEYS[2], old)
  if v then
    redis.call('HSET', KEYS[2], f, v)
    redis.call('HDEL', KEYS[2], old)
    cur = hbraw(v)
  end
end
local seen
if cur then
  local c = math.floor(cur / SEEN)
  if c == ROOM_HOME then return {'room'} end
  seen = cur - c * SEEN
elseif not adopt then
  return {'room'}
end
local minInterval = tonumber(ARGV[7]) or 0
if seen and minInterval > 0 and now - seen < minInterval and now >= seen then
  return {'slow', minInterval - (now - seen)}
end
-- The position: the last published rank at or below the score, plus half a stride
-- (the exact rank is within the stride after it, or the queue's end).
local waiting, stride, zone = tonumber(st[2]) or 0, tonumber(st[6]) or 1, tonumber(st[5]) or 0
local pos = tonumber(ARGV[8])
if not adopt then
  local g = redis.call('ZRANGE', KEYS[3], m, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if not g[1] then return {'room'} end
  local rank = tonumber(g[1])
  pos = rank + 1
  if tonumber(g[2]) < seq then pos = pos + math.floor(math.min(stride, math.max(1, waiting - rank)) / 2) end
end
if pos <= zone and not adopt then
  redis.call('HSET', KEYS[2], f, hbv(now, ROOM_HOME))
  return {'room'}
end
local pace = (tonumber(st[4]) or 0) / 1000
if pace <= 0 then pace = tonumber(ARGV[6]) end
-- While the pace climbs, the place's own pace on the climb (lib.lua pace): its
-- places over the minutes the climb takes to pass them.
if st[7] and st[7] ~= '' and pos > 0 then
  local r, k, top = string.match(st[7], '^(%S+) (%S+) (%S+)$')
  r, k, top = tonumber(r), tonumber(k), tonumber(top)
  if r and k and top and top > 0 then pace = pos / climb_minutes(r, k, top, pos) end
end
local state, class, budget = 'waiting', nil, nil
if tonumber(ARGV[5]) > now then
  state = 'prequeue'
  class, budget = told_at()
elseif ARGV[4] == 'paused' then
  state = 'paused'
  class, budget = told_at()
else
  -- Told to come back by the ETA (lib.lua told_at), and before the front, at twice the
  -- configured rate, could reach the zone (merge.lua): the zone holds the grace and
  -- 10 s of that speed beyond the estimate's error, so a visitor who comes back
  -- within the told poll and the grace finds the front at least 5 s of it away.
  local rate = tonumber(ARGV[6])
  class, budget = told_at(pos, pace, math.floor((pos - zone) * 60000 / (2 * rate)) + SLACK)
end
redis.call('HSET', KEYS[2], f, hbv(now, class))
return {state, pos, math.max(waiting, pos), math.floor(pace * 1000), budget}
