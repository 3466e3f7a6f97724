package roomdb_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// The ticks keep a day of history, a point a minute, whatever the number
// of ticks in a minute; points older than a day drop out.
func TestHistory(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds, c.ClaimTTLSeconds = 60, 1000, 3600, 3600
		}))
		e.clk.Set(e.clk.Now().Truncate(time.Minute).Add(time.Second))
		if h, err := e.eng.History(t.Context(), e.room); err != nil || len(h) != 0 {
			t.Fatalf("before any tick: %v %v", h, err)
		}
		e.enqueueN(100)
		start := e.clk.Now().Truncate(time.Minute)
		for m := range room.HistoryMinutes + 10 {
			for range 3 { // several ticks a minute write one point
				e.tick()
				e.clk.Advance(10 * time.Second)
			}
			e.clk.Set(start.Add(time.Duration(m+1)*time.Minute + time.Second))
		}
		e.clk.Set(start.Add((room.HistoryMinutes+9)*time.Minute + 30*time.Second))
		h, err := e.eng.History(t.Context(), e.room)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != room.HistoryMinutes {
			t.Fatalf("%d points, want %d", len(h), room.HistoryMinutes)
		}
		for i, p := range h {
			if want := start.Add(time.Duration(10+i) * time.Minute); !p.Minute.Equal(want) {
				t.Fatalf("point %d at %s, want %s", i, p.Minute, want)
			}
		}
		// Minute 10's first tick: 100 joined, at most 2 admitted a tick (the
		// bucket's cap), 3 ticks a minute, none claimed yet.
		first := h[0]
		if first.Admitted+first.Waiting != 100 || first.Admitted < 40 || first.Active != 0 || first.AdmittedLastMinute != 6 {
			t.Fatalf("first point: %+v", first)
		}
		if last := h[len(h)-1]; last.Waiting != 0 || last.AdmittedLastMinute != 0 {
			t.Fatalf("last point: %+v", last)
		}
		// A day later without ticks, nothing is left.
		e.clk.Advance(25 * time.Hour)
		if h, _ := e.eng.History(t.Context(), e.room); len(h) != 0 {
			t.Fatalf("stale points: %v", h)
		}
	})
}
