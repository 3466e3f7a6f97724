-- stats.lua: a snapshot of a room, with its settings (the status route reads both at once).
-- KEYS: the room's keys (lib.lua)
-- ARGV[1] -> now (ms)
-- Returns {waiting, admitted, active, admitted last minute, evicted, consumed,
-- replays refused, the pre-queue lottery's seed ('' for none), the pace of a place joining now x 1000
-- (lib.lua pace), the safety net ('1' on), why it last switched, why the pace is where it is (pace.lua
-- pace_tick), the admission rate x 1000 (lib.lua steer_rate: under the pace while a steered pace
-- climbs), the notices' counts (docs/ENGINE.md, "Notices"): sign-ups, sent, failed and turns saved
-- ever, and the places with a registration now (HLEN of KEYS[9], vst:{room}:ntc; 0 without it), the
-- climb in places (the rate, its slope a minute and its top, each x 1000; 0 0 0 when the pace does not
-- climb: each place's own pace is then the climb's), then the settings as field, value pairs (lib.lua
-- settings)}, or {'noroom'}.
local now = tonumber(ARGV[1])
local cfg = load_cfg()
if not cfg then return {'noroom'} end
local c = redis.call('HMGET', K_ST, 'evicted', 'consumed', 'replays', 'nsignups', 'nsent', 'nfail', 'nsaved')
local registered = 0
if KEYS[9] then registered = redis.call('HLEN', KEYS[9]) end
local waiting = redis.call('ZCARD', K_Q)
local cr, cs, ct = 0, 0, 0
if cfg.full ~= '1' and cfg.slope > 0 then
  cr, cs, ct = math.floor(cfg.rate / cfg.share * 1000), math.floor(cfg.slope / cfg.share * 1000),
    math.floor(cfg.top / cfg.share * 1000)
end
return settings({waiting, redis.call('ZCARD', K_ADM), redis.call('ZCARD', K_ACT),
  admitted_last_minute(now), tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0,
  redis.call('HGET', K_CFG, 'seed') or '', math.floor(pace(cfg, waiting + 1) * 1000), cfg.net,
  redis.call('HGET', K_CFG, 'netwhy') or '', redis.call('HGET', K_CFG, 'effwhy') or '',
  math.floor(cfg.rate * 1000), tonumber(c[4]) or 0, tonumber(c[5]) or 0, tonumber(c[6]) or 0, tonumber(c[7]) or 0,
  registered, cr, cs, ct})
