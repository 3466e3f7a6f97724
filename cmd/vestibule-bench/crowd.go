package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/sim"
)

// CrowdConfig is the crowd of the simulator figure: a burst of visitors into
// a room admitting 12,000 a minute with 4,000 slots, a fifth of them abandoning.
func CrowdConfig(visitors int) sim.Config {
	rc := room.DefaultConfig()
	rc.MaxActive, rc.AdmitPerMinute = 4_000, 12_000
	rc.ClaimTTLSeconds, rc.HeartbeatTTLSeconds, rc.SessionTTLSeconds = 60, 120, 600
	rc.OriginURL, rc.ClientEnqueuePerMinute = "http://127.0.0.1:9/origin", 0
	return sim.Config{
		Visitors: visitors, Shape: sim.Burst, Seed: 1,
		CloseTab: 0.10, NoConsume: 0.05, Leave: 0.05, AbandonAfter: time.Minute,
		ThinkMin: 10 * time.Second, ThinkMax: 40 * time.Second,
		Room: "bench-crowd", RoomConfig: rc, Workers: workers, MaxDuration: 2 * time.Hour,
	}
}

// benchCrowd plays the crowd in virtual time and compares it with the same
// crowd replayed against a page polling every 3 seconds.
func benchCrowd(ctx context.Context, visitors int, chart string) ([]Row, error) {
	rdb, stop, err := benchRedis(2 * workers)
	if err != nil {
		return nil, err
	}
	defer stop()
	d, err := sim.NewVirtual(rdb, time.Now().Truncate(time.Second), time.Second)
	if err != nil {
		return nil, err
	}
	c := CrowdConfig(visitors)
	res, err := sim.Run(ctx, d, d.AdminKey, c)
	if err != nil {
		return nil, err
	}
	s := res.Summarize()
	res.Replay(&s, 3*time.Second)
	s.WriteTable(os.Stderr)
	if chart != "" {
		title := fmt.Sprintf("%d visitors in a 10 s burst; maxActive %d, %d admitted/min (virtual time)",
			visitors, c.RoomConfig.MaxActive, c.RoomConfig.AdmitPerMinute)
		if err := res.Chart(chart, title); err != nil {
			return nil, err
		}
	}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	violations := float64(s.DoubleConsumes + s.ReplaysAllowed + s.Inversions + s.NotAdmitted)
	if s.MaxInUse > s.MaxActive {
		violations++
	}
	rows := []Row{
		row(fmt.Sprintf("crowd %d: requests per visitor-minute waiting", visitors), s.RequestsPerWaitMinute, "req/min", s.FixedRequestsPerWaitMinute, atMost(2)),
		row("crowd: grant→seen delay p50", sec(s.SeenP50), "s", sec(s.FixedSeenP50), atMost(2)),
		row("crowd: grant→seen delay p99", sec(s.SeenP99), "s", sec(s.FixedSeenP99), nil),
		row("crowd: time to drain", s.Drain.Seconds(), "s", 0, nil),
		row("crowd: invariant violations", violations, "", 0, atMost(0)),
	}
	return rows, nil
}
