package roomdb_test

import (
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A new steered room whose origin has said nothing yet runs at its setting:
// starting at admitPerMinuteMin would make its first visitors' ETAs (told at
// the floor) several times the wait that follows as the pace climbs. Only a
// room restored after a total loss starts at its floor (TestSteeringAfterTotalLoss).
func TestANewSteeredRoomStartsAtItsSetting(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin, c.MaxActive = 600, 60, 100_000
		}))
		if st := e.stats(); st.PacePerMinute != 600 {
			t.Fatalf("a new room's pace %v, want its setting 600", st.PacePerMinute)
		}
		tk := e.enqueueN(30)
		if p := e.poll(tk[29]); p.RatePerMinute != 600 {
			t.Errorf("a waiting visitor's pace %v, want 600", p.RatePerMinute)
		}
		e.clk.Advance(time.Second)
		e.tick()
		if st := e.stats(); st.PacePerMinute != 600 || st.PaceWhy != "top" {
			t.Errorf("after a tick without a report: pace %v (%s), want 600 (top)", st.PacePerMinute, st.PaceWhy)
		}
	})
}

// An origin that reports a load of 1 is at least full: the first cut of a
// spell halves the pace (from twice the capacity, one cut lands at it), the
// next ones, while the load stays high, take a quarter every 5 s. A load
// between 0.9 and 1 is cut by a quarter from the first.
func TestAFullOriginIsHalvedFirst(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin, c.MaxActive = 600, 60, 100_000
		}))
		var cuts []float64
		run := func(n int, load float64) {
			for range n {
				e.report(load)
				e.clk.Advance(time.Second)
				if r := e.tick(); r.Pace != nil && r.Pace.Why == "backoff" {
					cuts = append(cuts, r.Pace.To)
				}
			}
		}
		run(12, 1)
		if len(cuts) != 3 || cuts[0] != 300 || cuts[1] != 225 || math.Abs(cuts[2]-168.75) > 0.01 {
			t.Fatalf("back-offs in 12 s at 1.0 from 600: %v, want 300, 225, 168.75", cuts)
		}
		// The load falls, the pace climbs back to the top; a spell at 0.95 is cut by quarters.
		run(200, 0.3)
		cuts = nil
		run(7, 0.95)
		if len(cuts) != 2 || cuts[0] != 450 || cuts[1] != 337.5 {
			t.Errorf("back-offs in 7 s at 0.95 from 600: %v, want 450, 337.5", cuts)
		}
	})
}

// While a steered pace climbs back to admitPerMinute (the origin recovered),
// a waiting visitor is told the wait of the climb, not of the rate of the
// moment nor of the climb's top: the ETA (position ÷ the reply's pace) lies
// within 0.67–1.5× of the wait that follows, on a virtual clock.
func TestAClimbingPaceTellsTheWaitOfTheClimb(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin, c.MaxActive = 600, 60, 100_000
			c.ClaimTTLSeconds, c.SessionTTLSeconds, c.HeartbeatTTLSeconds = 3600, 86_400, 3600
		}))
		step := func(load float64) {
			e.report(load)
			e.clk.Advance(time.Second)
			e.tick()
		}
		for range 40 { // the origin is full: the pace falls to its floor
			step(1)
		}
		if st := e.stats(); st.RatePerMinute != 60 {
			t.Fatalf("after 40 s at 1.0: rate %v, want the floor 60", st.RatePerMinute)
		}
		tk := e.enqueueN(800)
		// The origin recovers to 1,000 a minute: its load is the rate over
		// that, and the pace climbs from 60 to 600 in 3 minutes.
		recovered := func() { step(e.stats().RatePerMinute / 1000) }
		recovered()
		me := tk[len(tk)-1]
		p := e.poll(me)
		if p.State != room.StateWaiting || p.RatePerMinute <= 0 {
			t.Fatalf("poll: %s at %v a minute, want waiting with a pace", p.State, p.RatePerMinute)
		}
		eta := float64(p.Position) * 60 / p.RatePerMinute
		for s := 1; s <= 1200; s++ {
			recovered()
			p = e.poll(me)
			if p.State == room.StateAdmitted {
				if r := eta / float64(s); r < 0.67 || r > 1.5 {
					t.Errorf("told %.0f s at position %d, granted after about %d s: %.2f× the wait", eta, len(tk), s, r)
				}
				return
			}
		}
		t.Fatalf("not granted in 20 minutes: %s", p.State)
	})
}
