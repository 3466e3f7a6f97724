-- enqueue.lua: a new visitor joins the room.
-- KEYS: the room's keys (lib.lua), then
-- KEYS[9] -> vst:{room}:arr LIST the room's own arrivals (below), then the keys ARGV[5] and ARGV[6] name:
--   the proof's, vst:{room}:pow:<nonce> STRING a spent join-challenge nonce, expiring with the challenge,
--   when ARGV[5] is 'spend'; then the client's, vst:{room}:rl:<client> STRING its join limiter (lib.lua
--   limit_client), when ARGV[6] is 1
-- ARGV[1] -> now (ms, the caller's clock)
-- ARGV[2] -> visitor id (server-generated; salts the pre-queue draw)
-- ARGV[3] -> the settings version the caller has cached ('' or absent for none)
-- ARGV[4] -> join-challenge bits the caller verified (0: no proof)
-- ARGV[5] -> the join's proof: 'none' (or absent) for none; 'spend' to spend it here, in its key, for
--            ARGV[7] ms; for a proof the engine spends on its arrival shard instead (roomdb's Join: a
--            challenge issued while the room spread), 'shard-first' when it spent it now, 'shard-again'
--            when it was spent before
-- ARGV[6] -> 1 when the join counts for a client, whose limiter is a key; 0 (or absent) for none
-- ARGV[7] -> with 'spend', the challenge's time left (ms)
-- ARGV[8] -> 1 when the join holds an invitation the engine counted (an inviteOnly
--            room refuses any other with {'uninvited'}, after closed)
-- ARGV[9] -> 1 when the day's reference hash (lib.lua remember) is among the keys: the last,
--            or the one before the trail
-- ARGV[10] -> 1 when the last key is the day's trail, vst:{room}:trail:<day> (lib.lua
--             trail_put), where a join admitted at once is recorded
-- Returns the place shape of lib.lua's reply, state one of:
--   'prequeue' (draw set; position: the place at the opening, not shown), 'waiting', 'admitted' (deadline set;
--   auto, while the safety net is off: lib.lua net_join);
--   or {'noroom'} for an unknown room, {'closed'} for a closed one,
--   {'challenge', bits} when the room asks more work than proven, {'spent'} for a used proof,
--   {'limited', wait ms} when the client joined more often than clientEnqueuePerMinute.
-- Checked in this order, each refusal spending nothing after it: closed, the
-- challenge's work, the client's limit (a join refused for the work is not
-- counted), the proof's nonce (a limited join does not spend it; a join with
-- a proof spends it even in a room that asks none), then the join.
-- The sequence is lib.lua's next_seq: above the last, at least Redis server time
-- in microseconds (on purpose, so numbers issued after a data loss stay above
-- every ticket issued before it), ≡ 0 modulo 16 (arrival shards issue the others).
-- KEYS[9] -> vst:{room}:arr LIST the room's own arrivals: in a room whose joins
--             are spread (lib.lua open_for_arrivals) a join is appended there, not
--             queued, and the tick merges it (merge.lua); its position is an estimate
--             until then (the count, plus the arrivals before it).
local now = tonumber(ARGV[1])
local visitor = ARGV[2]

local cfg = load_cfg()
if not cfg then return {'noroom'} end
if cfg.mode == 'closed' then return {'closed'} end
if cfg.inviteOnly and ARGV[8] ~= '1' then return {'uninvited'} end
cfg.known = ARGV[3]
local last = #KEYS -- the reference hash's, after the trail's is taken off the end
if ARGV[10] == '1' then cfg.trail, last = KEYS[last], last - 1 end
-- The join challenge: enough work, and each proof joins once.
if cfg.challengeBits > (tonumber(ARGV[4]) or 0) then return {'challenge', cfg.challengeBits} end
local proof = ARGV[5] or 'none'
local proof_key, limiter = nil, nil
local extra = 10
if proof == 'spend' then proof_key, extra = KEYS[extra], extra + 1 end
if ARGV[6] == '1' then limiter = KEYS[extra] end
local wait = limit_client(cfg.clientLimit, limiter, now)
if wait > 0 then return {'limited', wait} end
-- A proof is spent whether or not the room asks one now (so a challenge turned
-- off and on again within its life does not let it join twice), and refused
-- as spent only where one is asked.
local spent = proof == 'shard-again' or (proof_key ~= nil and not redis.call('SET', proof_key, '1', 'NX', 'PX', ARGV[7]))
if spent and cfg.challengeBits > 0 then return {'spent'} end

local seq = next_seq(tonumber(redis.call('HGET', K_ST, 'seq')), 0)
local m = member(seq)
redis.call('HSET', K_ST, 'seq', m)
if ARGV[9] == '1' then remember(KEYS[last], visitor, m, now) end

if cfg.mode == 'passthrough' then
  local deadline = grant(cfg, now, m, seq)
  count_admissions(now, 1)
  return reply(cfg, 'admitted', m, '', 0, redis.call('ZCARD', K_Q), deadline)
end

if cfg.opensAt > now then
  -- The lottery draw is for a room that has not opened yet. A room that already
  -- admitted or queues by sequence (an opening moved later while people wait)
  -- keeps ticket order: a draw in [0,1) would jump everyone already waiting.
  if head() < 1 and #redis.call('ZRANGEBYSCORE', K_Q, 1, '+inf', 'LIMIT', 0, 1) == 0 then
    local seed = redis.call('HGET', K_CFG, 'seed') or ''
    local draw = tonumber(string.sub(redis.sha1hex(seed .. visitor), 1, 13), 16) / 4503599627370496
    local class, within = told(cfg)
    redis.call('ZADD', K_Q, num(draw), m)
    redis.call('HSET', K_HB, hbf(m), hbv(now, class))
    local waiting = redis.call('HINCRBY', K_CFG, 'waiting', 1)
    return reply(cfg, 'prequeue', m, num(draw), redis.call('ZRANK', K_Q, m) + 1, waiting, 0, within)
  end
  local class, within = told(cfg)
  redis.call('ZADD', K_Q, m, m)
  redis.call('HSET', K_HB, hbf(m), hbv(now, class))
  -- In ticket order the newcomer is last: the count is their place.
  local waiting = redis.call('HINCRBY', K_CFG, 'waiting', 1)
  return reply(cfg, 'prequeue', m, '', waiting, waiting, 0, within)
end

if open_for_arrivals(cfg, now) then
  -- Never admitted at once (auto): an earlier join may still wait on a shard.
  local pos = cfg.waiting + redis.call('RPUSH', KEYS[9], m .. ':' .. ARGV[1])
  local _, within = told(cfg, pos)
  return reply(cfg, 'waiting', m, '', pos, pos, 0, within)
end

-- auto: through at once while the safety net is off (lib.lua net_join).
if cfg.mode == 'auto' then
  local deadline = net_join(cfg, now, m, seq)
  if deadline then return reply(cfg, 'admitted', m, '', 0, 0, deadline) end
end

-- The newest sequence is the highest score in the queue (restored places and
-- pre-queue draws are all below it), so the position is the count: no ZRANK.
-- The count is the settings hash's waiting, kept by every script that changes
-- the queue (and set exact by every tick). The heartbeat is written after the
-- count, so its class knows the position.
redis.call('ZADD', K_Q, m, m)
local waiting = redis.call('HINCRBY', K_CFG, 'waiting', 1)
local class, within
if cfg.mode == 'paused' then class, within = told(cfg) else class, within = told(cfg, waiting) end
redis.call('HSET', K_HB, hbf(m), hbv(now, class))
local state = 'waiting'
if cfg.mode == 'paused' then state = 'paused' end
return reply(cfg, state, m, '', waiting, waiting, 0, within)
