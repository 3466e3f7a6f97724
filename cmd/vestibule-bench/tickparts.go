package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/lua"
)

// tickParts are the tick script and variants that leave out one of the
// commands its admission loop makes per batch of grants (the text each drops,
// found once in lua.Tick, and what stands in for it).
var tickParts = []struct{ name, drop, with string }{
	{"the tick script", "", ""},
	{"without the grants' ZADD", "  if g > 0 then redis.call('ZADD', K_ADM, unpack(grants)) end\n", ""},
	{"without the admitted heartbeats' HDEL", "  redis.call('HDEL', K_HB, unpack(fields))\n", ""},
	{"without the admitted heartbeats' HMGET", "  local seen = redis.call('HMGET', K_HB, unpack(fields))\n  local grants",
		"  local seen = {}\n  local grants"},
	{"without the trail's HSET", "  trail_put(trail, now, tv, tn)\n", ""},
}

// benchTickParts takes a tick admitting 10,000 apart (-only tickparts; not
// in the default run). One queue of 1,000,000; the tick script and each
// variant of tickParts run in turn, 8 ticks each, inside one Redis, so the
// machine's swings weigh on all alike; the grants set grows to 320,000, as a
// claim time of a few minutes holds a fast on-sale's grants. Rows: each
// one's median tick against the tick script's.
func benchTickParts(ctx context.Context) ([]Row, error) {
	rdb, stop, err := benchRedis(8)
	if err != nil {
		return nil, err
	}
	defer stop()
	now := time.Now().Truncate(time.Second)
	e := roomdb.New(rdb, roomdb.WithClock(func() time.Time { return now }))
	const roomID = "bench-tickparts"
	cfg := benchRoomConfig()
	cfg.AdmitPerMinute = 300_000 // the bucket holds two seconds of rate: 10,000
	cfg.MaxActive = 1            // raised by 10,000 before each tick
	if _, err := e.PutConfig(ctx, roomID, cfg); err != nil {
		return nil, err
	}
	if err := fill(ctx, rdb, roomID, 1_000_000, now.UnixMilli()); err != nil {
		return nil, err
	}
	scripts := make([]*redis.Script, len(tickParts))
	for i, p := range tickParts {
		src := lua.Tick
		if p.drop != "" {
			if n := strings.Count(src, p.drop); n != 1 {
				return nil, fmt.Errorf("tick part %q: the text to drop is in the tick script %d times", p.name, n)
			}
			src = strings.Replace(src, p.drop, p.with, 1)
		}
		scripts[i] = redis.NewScript(src)
		if err := scripts[i].Load(ctx, rdb).Err(); err != nil {
			return nil, err
		}
	}
	// As the engine's tick: the history, the notices' keys, then the trail (ARGV[4]).
	k := roomdb.KeysFor(roomID)
	keys := append(append(append(k.List(), k.History()), k.NoticeKeys()...), k.Trail(now.UnixMilli()))
	ds := make([][]time.Duration, len(tickParts))
	for round := range 8 * len(tickParts) {
		cfg.MaxActive += 10_000
		if _, err := e.PutConfig(ctx, roomID, cfg); err != nil {
			return nil, err
		}
		now = now.Add(2 * time.Second)
		i := round % len(tickParts)
		start := time.Now()
		r, err := scripts[i].EvalSha(ctx, rdb, keys, now.UnixMilli(), 2000, 0, 1).Slice()
		el := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tickParts[i].name, err)
		}
		if admitted, _ := r[0].(int64); admitted != 10_000 {
			return nil, fmt.Errorf("%s admitted %v, want 10000", tickParts[i].name, r[0])
		}
		ds[i] = append(ds[i], el)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var rows []Row
	var whole float64
	for i, d := range ds {
		slices.Sort(d)
		median := ms(d[len(d)/2])
		logf("tick part %s: median %.1f ms, fastest %.1f ms of %d", tickParts[i].name, median, ms(d[0]), len(d))
		if i == 0 {
			whole = median
		}
		rows = append(rows, row("tick admitting 10,000 of 1,000,000, "+tickParts[i].name+" (median)", median, "ms", whole, nil))
	}
	return rows, nil
}
