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

// A burst that joins and is admitted within one minute is the minute's
// peak: every tick counts the queue, before and after its admissions, and
// the peak of the minute so far is read from the state before the next
// minute's first tick moves it to the history. The point itself still
// counts the minute's first tick's queue.
func TestHistoryPeakOfABurst(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.MaxActive, c.Mode = 600, 20, room.ModePaused
		}))
		start := e.clk.Now().Truncate(time.Minute).Add(time.Minute)
		e.clk.Set(start.Add(time.Second))
		e.tick() // the minute's point: nobody waits
		e.enqueueN(9)
		e.tick() // paused: the nine wait
		c := baseConfig()
		c.AdmitPerMinute, c.MaxActive = 600, 20
		e.put(c)
		e.clk.Advance(20 * time.Second)
		if r := e.tick(); r.Admitted != 9 {
			t.Fatalf("tick: %+v, want the nine admitted", r)
		}
		peakOf := func() room.HistoryPoint {
			t.Helper()
			h, err := e.eng.History(t.Context(), e.room)
			if err != nil || len(h) == 0 || !h[0].Minute.Equal(start) {
				t.Fatalf("history: %v %v", h, err)
			}
			return h[0]
		}
		if p := peakOf(); p.Waiting != 0 || p.PeakWaiting != 9 {
			t.Fatalf("the minute so far: waiting %d, peak %d; want 0, 9", p.Waiting, p.PeakWaiting)
		}
		e.clk.Set(start.Add(time.Minute + time.Second))
		e.tick() // moves the minute's peak to the history
		if p := peakOf(); p.Waiting != 0 || p.PeakWaiting != 9 {
			t.Fatalf("the minute kept: waiting %d, peak %d; want 0, 9", p.Waiting, p.PeakWaiting)
		}
	})
}
