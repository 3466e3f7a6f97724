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
// next ones, while the load stays high, take a quarter each 15 s (the load
// answers a cut only as the visitors admitted after it land:
// TestACutIsJudgedByTheLoadItMade). A load between 0.9 and 1 is cut by a
// quarter from the first.
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
		run(32, 1)
		if len(cuts) != 3 || cuts[0] != 300 || cuts[1] != 225 || math.Abs(cuts[2]-168.75) > 0.01 {
			t.Fatalf("back-offs in 32 s at 1.0 from 600: %v, want 300, 225, 168.75", cuts)
		}
		// The load falls, the pace climbs back to the top; a spell at 0.95 is cut by quarters.
		run(200, 0.3)
		cuts = nil
		run(17, 0.95)
		if len(cuts) != 2 || cuts[0] != 450 || cuts[1] != 337.5 {
			t.Errorf("back-offs in 17 s at 0.95 from 600: %v, want 450, 337.5", cuts)
		}
	})
}

// While a steered pace climbs back to admitPerMinute (the origin recovered),
// every waiting visitor is told one pace, which the near places pass under
// (about the rate) and the far ones over (nearer the top). From a pace the
// origin sawed down to (225 of 600, the bench's slow spell) the ETAs of the
// near place and of the last lie within 0.67–1.5× of their waits; told
// halfway to the top, the near ones were told 0.65 of theirs. From the floor
// (60 of 600, after a total loss) with 800 waiting both cannot: the near
// pass at about 105 a minute, the last at 300, 2.9 times it where the band
// spans 2.25; the near are told 0.67 of their pace and the far run long, not
// short (told halfway, the near ones waited 3 times their ETA). On a virtual
// clock, polling each second.
func TestAClimbingPaceTellsTheWaitOfTheClimb(t *testing.T) {
	for _, tc := range []struct {
		name      string
		full      int     // seconds the origin reports 1 before it recovers
		rate      float64 // the pace the climb starts from
		farLo     float64 // the least ratio of the last place's ETA to its wait
		nearPlace int
	}{
		{"from a saw", 17, 225, 0.67, 150},
		{"from the floor", 100, 60, 1, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
				for range tc.full { // the origin is full: the pace is cut
					step(1)
				}
				if st := e.stats(); st.RatePerMinute != tc.rate {
					t.Fatalf("after %d s at 1.0: rate %v, want %v", tc.full, st.RatePerMinute, tc.rate)
				}
				tk := e.enqueueN(800)
				// The origin recovers to 1,000 a minute: its load is the rate over
				// that, and the pace climbs by 180 a minute each minute to 600.
				recovered := func() { step(e.stats().RatePerMinute / 1000) }
				recovered()
				near, far := tk[tc.nearPlace-1], tk[len(tk)-1]
				eta := map[room.Ticket]float64{}
				for _, me := range []room.Ticket{near, far} {
					p := e.poll(me)
					if p.State != room.StateWaiting || p.RatePerMinute <= 0 {
						t.Fatalf("poll: %s at %v a minute, want waiting with a pace", p.State, p.RatePerMinute)
					}
					eta[me] = float64(p.Position) * 60 / p.RatePerMinute
				}
				wait := map[room.Ticket]int{}
				for s := 1; s <= 1200 && len(wait) < 2; s++ {
					recovered()
					for _, me := range []room.Ticket{near, far} {
						if _, ok := wait[me]; !ok && e.poll(me).State == room.StateAdmitted {
							wait[me] = s
						}
					}
				}
				if len(wait) < 2 {
					t.Fatalf("not both granted in 20 minutes: %v", wait)
				}
				if r := eta[near] / float64(wait[near]); r < 0.67 || r > 1.5 {
					t.Errorf("place %d: told %.0f s, granted after about %d s: %.2f× the wait", tc.nearPlace, eta[near], wait[near], r)
				}
				if r := eta[far] / float64(wait[far]); r < tc.farLo || (tc.farLo < 1 && r > 1.5) {
					t.Errorf("place 800: told %.0f s, granted after about %d s: %.2f× the wait", eta[far], wait[far], r)
				}
			})
		})
	}
}

// An origin that halves under a room at its setting is cut at once; its
// load counts the visitors admitted before the cut for some seconds after it
// (its window, and the seconds a visitor takes to land), so today's load
// judged against today's pace cut again and again (600, 300, 225, 169 in 10
// s, then climbed back: the saw of the bench's slow spell), and a visitor
// told the first cut's pace waited 0.6 of it (the bench, places 100-200).
// Within 15 s of a cut the load is judged at the pace that made it: the
// pace halves once, cuts a quarter when the load of the halved pace says so,
// and holds. Until then the room tells the pace of that quarter cut, and a
// visitor told the wait just after the halving waits within 0.67–1.5× of it (on a virtual clock, the origin's load computed
// from the room's own admissions).
func TestACutIsJudgedByTheLoadItMade(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin, c.MaxActive = 600, 60, 100_000
			c.ClaimTTLSeconds, c.SessionTTLSeconds, c.HeartbeatTTLSeconds = 3600, 86_400, 3600
		}))
		tk := e.enqueueN(3000)
		// admitted[i] is the room's admissions by second i (nobody consumes,
		// so Stats.Admitted counts them all). A visitor lands on the origin
		// (its booking arrives) 5 s after the grant, as a visitor who polls,
		// sees it and consumes does; the origin's load is the bookings of the
		// last 10 s over what it takes in 10 s, at most 1.
		const land = 5
		var admitted []int64
		var cuts []float64
		capacity := 1200.0
		step := func() {
			n := len(admitted) - land
			var last10 int64
			if n > 0 {
				last10 = admitted[n-1] - admitted[max(0, n-10)]
			}
			e.report(min(1, float64(last10)*6/capacity))
			e.clk.Advance(time.Second)
			if r := e.tick(); r.Pace != nil && r.Pace.Why == "backoff" {
				cuts = append(cuts, r.Pace.To)
			}
			admitted = append(admitted, e.stats().Admitted)
		}
		for range 20 {
			step()
		}
		capacity = 300 // the origin halves: the room admits twice what it takes
		for len(cuts) == 0 {
			step()
		}
		me := tk[admitted[len(admitted)-1]+100]
		p := e.poll(me)
		if p.State != room.StateWaiting || p.RatePerMinute <= 0 {
			t.Fatalf("poll: %s at %v a minute, want waiting with a pace", p.State, p.RatePerMinute)
		}
		if st := e.stats(); st.RatePerMinute != 300 || p.RatePerMinute != 225 || st.PacePerMinute != 225 {
			t.Errorf("just after the halving: rate %v, told %v (status %v), want 300 told at the quarter cut's 225",
				st.RatePerMinute, p.RatePerMinute, st.PacePerMinute)
		}
		eta := float64(p.Position) * 60 / p.RatePerMinute
		granted := 0
		for s := 1; s <= 120; s++ {
			step()
			if granted == 0 {
				if p = e.poll(me); p.State == room.StateAdmitted {
					granted = s
				}
			}
		}
		if len(cuts) != 2 || cuts[0] != 300 || cuts[1] != 225 {
			t.Errorf("back-offs in 2 minutes after the origin halved: %v, want 300, 225", cuts)
		}
		if granted == 0 {
			t.Fatalf("not granted in 2 minutes: %s", p.State)
		}
		if r := eta / float64(granted); r < 0.67 || r > 1.5 {
			t.Errorf("told %.0f s just after the first cut, granted after about %d s: %.2f× the wait", eta, granted, r)
		}
	})
}
