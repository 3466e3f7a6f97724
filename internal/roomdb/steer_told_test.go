package roomdb_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// After a halving the room tells the pace of the quarter cut that follows
// when the site takes no more than the halved pace, and keeps telling it
// while the halved pace holds: its load judged from 15 s on may read a hold
// for a tick or two before it reads full and cuts (a site at the halved
// pace reads about 1, give or take a visitor landing late). Told the halved
// pace in that gap, visitors waited 0.64-0.68 of it when the cut came (the
// origin bench's slow spell); told the cut's, an ETA is at most 1.33 × the
// wait if it never comes. A climb ends it: the climb's own plan is told.
func TestTheQuarterCutIsToldWhileTheHalvedPaceHolds(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin, c.MaxActive = 600, 60, 100_000
			c.ClaimTTLSeconds, c.SessionTTLSeconds, c.HeartbeatTTLSeconds = 3600, 86_400, 3600
		}))
		tk := e.enqueueN(2000)
		e.tick()
		second := func(load float64) room.TickResult {
			e.report(load)
			e.clk.Advance(time.Second)
			return e.tick()
		}
		if r := second(1); r.Pace == nil || r.Pace.To != 300 {
			t.Fatalf("a full origin: pace step %+v, want halved to 300", r.Pace)
		}
		me := tk[len(tk)-1]
		told := func(when string, rate, want float64) {
			t.Helper()
			p := e.poll(me)
			if st := e.stats(); st.RatePerMinute != rate || p.RatePerMinute != want || st.PacePerMinute != want {
				t.Errorf("%s: rate %v, told %v (status %v), want %v told %v", when, st.RatePerMinute, p.RatePerMinute, st.PacePerMinute, rate, want)
			}
		}
		// The load still counts the visitors admitted at 600, then the halved
		// pace's own load reads a hold past 15 s.
		for range 14 {
			second(1)
		}
		told("14 s after the halving", 300, 225)
		for range 6 {
			if r := second(0.85); r.Pace != nil && r.Pace.Why == "backoff" {
				t.Fatalf("a load of 0.85 cut the pace: %+v", r.Pace)
			}
		}
		told("20 s after the halving, the halved pace holding", 300, 225)
		if r := second(0.95); r.Pace == nil || r.Pace.To != 225 {
			t.Fatalf("the halved pace's load high: pace step %+v, want the quarter cut to 225", r.Pace)
		}
		told("after the quarter cut", 225, 225)
		// A climb from 225 tells the climb's plan, above the rate.
		for range 3 {
			second(0.5)
		}
		p := e.poll(me)
		if st := e.stats(); st.PaceWhy != "climb" || p.RatePerMinute <= st.RatePerMinute {
			t.Errorf("climbing: %s at %v, told %v; want a climb told above its rate", st.PaceWhy, st.RatePerMinute, p.RatePerMinute)
		}
	})
}
