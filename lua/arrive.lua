-- arrive.lua: a join through one of a room's arrival shards (joinShards > 0 and
-- the room open: docs/ENGINE.md, "Arrival shards"). Nothing here knows the
-- room's settings: the caller passes the ones it holds (confirmed within the
-- second by the room's own shard) and the tick merges what arrived (merge.lua).
-- KEYS[1] -> vst:{room~i}:st   HASH  seq (the last sequence issued here), w (the room's count at the last merge),
--                                   v (the fence of the last change of the settings)
-- KEYS[2] -> vst:{room~i}:arr  LIST  'sequence:join time (ms)' of the joins not merged yet, in order
-- then the keys ARGV[9] and ARGV[10] name: the proof's, vst:{room~i}:pow:<nonce> STRING a spent
-- join-challenge nonce, when ARGV[9] is 1; then the client's, vst:{room~i}:rl:<client> STRING its join
-- limiter (lib.lua limit_client), when ARGV[10] is 1
-- ARGV[1] -> now (ms)
-- ARGV[2] -> this shard's residue (i + 1)
-- ARGV[3] -> the room's joinChallengeBits   ARGV[4] -> bits proven   ARGV[5] -> with a proof, the challenge's time left (ms)
-- ARGV[6] -> the room's clientEnqueuePerMinute   ARGV[7] -> the room's joinShards
-- ARGV[8] -> the fence of the settings these are (lib.lua fence_of of their version)
-- ARGV[9] -> 1 when the join brings a proof, whose key is KEYS[3]; 0 for none
-- ARGV[10] -> 1 when the join counts for a client, whose limiter is the next key; 0 for none
-- ARGV[11] -> the visitor id when the last key is the shard's reference hash of the day
--             (vst:{room~i}:ref:<day>, lib.lua remember); '' (or absent) for none
-- Returns {'arrived', seq, position estimate}, or {'challenge', bits}, {'spent'},
-- {'limited', wait ms}, checked in enqueue.lua's order; first of all {'stale'}
-- when a change of the settings fenced this shard after them (fence.lua,
-- arrfence.lua): the caller reads them again.
local now = tonumber(ARGV[1])
local st = redis.call('HMGET', KEYS[1], 'seq', 'w', 'v')
if tonumber(ARGV[8]) < (tonumber(st[3]) or 0) then return {'stale'} end
local bits = tonumber(ARGV[3])
if bits > (tonumber(ARGV[4]) or 0) then return {'challenge', bits} end
local proof_key, limiter = nil, nil
local extra = 3
if ARGV[9] == '1' then proof_key, extra = KEYS[extra], extra + 1 end
if ARGV[10] == '1' then limiter = KEYS[extra] end
local wait = limit_client(tonumber(ARGV[6]), limiter, now)
if wait > 0 then return {'limited', wait} end
-- A proof is spent even where no challenge is asked now, refused only where one is (enqueue.lua).
if proof_key and not redis.call('SET', proof_key, '1', 'NX', 'PX', ARGV[5]) and bits > 0 then
  return {'spent'}
end
local m = member(next_seq(tonumber(st[1]), tonumber(ARGV[2])))
redis.call('HSET', KEYS[1], 'seq', m)
if (ARGV[11] or '') ~= '' then remember(KEYS[#KEYS], ARGV[11], m, now) end
local n = redis.call('RPUSH', KEYS[2], m .. ':' .. ARGV[1])
-- The shards fill about evenly: the count at the last merge, then this shard's share.
return {'arrived', m, (tonumber(st[2]) or 0) + n * tonumber(ARGV[7])}
