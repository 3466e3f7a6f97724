-- stats.lua: a snapshot of a room, with its settings (the status route reads both at once).
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- Returns {waiting, admitted, active, admitted last minute, evicted, consumed,
-- replays refused, the pre-queue lottery's seed ('' for none), the pace x 1000 (lib.lua pace), the safety
-- net ('1' on), why it last switched, why the pace is where it is (lib.lua pace_tick), the admission
-- rate x 1000 (lib.lua steer_rate: under the pace while a steered pace climbs), the notices' counts
-- (docs/ENGINE.md, "Notices"): sign-ups, sent, failed and turns saved ever, and the places with a
-- registration now (HLEN of KEYS[9], vst:{room}:ntc; 0 without it), then the settings as field,
-- value pairs (lib.lua settings)}, or {'noroom'}.
local now = tonumber(ARGV[1])
local cfg = load_cfg()
if not cfg then return {'noroom'} end
local c = redis.call('HMGET', K_ST, 'evicted', 'consumed', 'replays', 'nsignups', 'nsent', 'nfail', 'nsaved')
local registered = 0
if KEYS[9] then registered = redis.call('HLEN', KEYS[9]) end
return settings({redis.call('ZCARD', K_Q), redis.call('ZCARD', K_ADM), redis.call('ZCARD', K_ACT),
  admitted_last_minute(now), tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0,
  redis.call('HGET', K_CFG, 'seed') or '', math.floor(pace(cfg) * 1000), cfg.net,
  redis.call('HGET', K_CFG, 'netwhy') or '', redis.call('HGET', K_CFG, 'effwhy') or '',
  math.floor(cfg.rate * 1000), tonumber(c[4]) or 0, tonumber(c[5]) or 0, tonumber(c[6]) or 0, tonumber(c[7]) or 0,
  registered})
