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
// each waiting place is told its own pace on the climb: its places over the
// time the climb takes to pass them. The near places pass at about the rate,
// the far ones nearer the top. One pace told to all could not hold both: from
// the floor (60 of 600, after a total loss) with 800 waiting, the near pass
// at about 105 a minute and the last at 300, 2.9 times it where the band
// 0.67–1.5 spans 2.25 (told one pace, place 800 was told 1.86 times its wait).
// Told their own, every place lies within the band, from a saw (225, the
// bench's slow spell) and from the floor; the status route shows the climb
// each place is told from. On a virtual clock, polling each second.
func TestAClimbingPaceTellsEachPlaceItsWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		full int     // seconds the origin reports 1 before it recovers
		rate float64 // the pace the climb starts from
	}{
		{"from a saw", 17, 225},
		{"from the floor", 100, 60},
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
				if st := e.stats(); st.RatePerMinute != tc.rate || st.Climb != nil {
					t.Fatalf("after %d s at 1.0: rate %v, climb %+v, want %v and no climb", tc.full, st.RatePerMinute, st.Climb, tc.rate)
				}
				tk := e.enqueueN(800)
				// The origin recovers to 1,000 a minute: its load is the rate over
				// that, and the pace climbs by 180 a minute each minute to 600.
				recovered := func() { step(e.stats().RatePerMinute / 1000) }
				recovered()
				st := e.stats()
				if c := st.Climb; c == nil || c.RatePerMinute < tc.rate || c.RatePerMinute > tc.rate+5 ||
					c.SlopePerMinute != 180 || c.TopPerMinute != 600 {
					t.Fatalf("status during the climb: %+v, want from about %v by 180 a minute to 600", c, tc.rate)
				}
				places := []int{60, 150, 400, 800}
				eta := map[int]float64{}
				for _, n := range places {
					p := e.poll(tk[n-1])
					if p.State != room.StateWaiting || p.RatePerMinute <= 0 {
						t.Fatalf("poll: %s at %v a minute, want waiting with a pace", p.State, p.RatePerMinute)
					}
					// The place's own pace is the climb's for its position, as the
					// page computes it from the status route.
					if own := st.Climb.PaceAt(float64(p.Position)); math.Abs(own-p.RatePerMinute) > 0.01*own {
						t.Errorf("place %d: told %v a minute, the climb of the status route gives %v", n, p.RatePerMinute, own)
					}
					eta[n] = float64(p.Position) * 60 / p.RatePerMinute
				}
				if eta[800]/800 >= eta[60]/60 {
					t.Errorf("place 800 told %.0f s, place 60 %.0f s: the far places pass faster on the climb", eta[800], eta[60])
				}
				wait := map[int]int{}
				for s := 1; s <= 1200 && len(wait) < len(places); s++ {
					recovered()
					for _, n := range places {
						if _, ok := wait[n]; !ok && e.poll(tk[n-1]).State == room.StateAdmitted {
							wait[n] = s
						}
					}
				}
				if len(wait) < len(places) {
					t.Fatalf("not all granted in 20 minutes: %v", wait)
				}
				for _, n := range places {
					if r := eta[n] / float64(wait[n]); r < 0.67 || r > 1.5 {
						t.Errorf("place %d: told %.0f s, granted after about %d s: %.2f× the wait", n, eta[n], wait[n], r)
					}
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

// The far places an arrival shard answers are told their own pace on a
// climb too, as the room's shard tells the near ones: the ticks publish the
// climb to the shards with the pace (merge.lua, arrtrim.lua), and a shard's
// poll makes its place's pace from it (spoll.lua), for the position it
// estimates.
func TestAShardTellsEachFarPlaceItsPaceOnAClimb(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin = 600, 60
		}))
		for range 100 { // the origin is full: the pace falls to the floor
			e.report(1)
			e.clk.Advance(time.Second)
			e.tick()
		}
		tickets := e.joinFar(3000)
		e.report(0.06) // the origin recovers: the pace climbs
		e.clk.Advance(time.Second)
		e.tick()
		st := e.stats()
		if st.Climb == nil {
			t.Fatalf("no climb after the recovery: %+v", st)
		}
		var last float64
		for _, i := range []int{1000, 2000, 2999} {
			p := e.poll(tickets[i])
			if !e.shardBeat(tickets[i]) {
				t.Fatalf("place %d: not answered on its shard", p.Position)
			}
			own := st.Climb.PaceAt(float64(p.Position))
			if p.State != room.StateWaiting || math.Abs(p.RatePerMinute-own) > 0.01*own || p.RatePerMinute <= last {
				t.Errorf("place %d: %s at %v a minute, want its own pace on the climb, %.1f, above the nearer place's %.1f",
					p.Position, p.State, p.RatePerMinute, own, last)
			}
			last = p.RatePerMinute
		}
	})
}
