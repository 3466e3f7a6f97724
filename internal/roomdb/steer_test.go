package roomdb_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// netSwitch is one switch of the safety net a tick reported, with its time.
type netSwitch struct {
	at time.Time
	room.NetChange
}

// steerEnv is an auto room with the net's thresholds: through below 120
// arrivals a minute, queued above, calm below 60 for 180 s.
func steerEnv(t *testing.T, rdb redis.UniversalClient) *env {
	e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
		c.Mode, c.MaxActive, c.AdmitPerMinute = room.ModeAuto, 100_000, 60_000
		c.QueueAbovePerMinute, c.QueueBelowPerMinute, c.CalmSeconds = 120, 60, 180
		c.ClaimTTLSeconds, c.SessionTTLSeconds = 3600, 86_400
	}))
	e.clk.Advance(time.Second) // the bucket fills
	return e
}

// tickNet ticks and records the net's switch, if any.
func (e *env) tickNet(log *[]netSwitch) {
	e.t.Helper()
	if r := e.tick(); r.Net != nil {
		*log = append(*log, netSwitch{e.clk.Now(), *r.Net})
	}
}

// The net of an auto room: arrivals below queueAbovePerMinute go through at
// once; above it the room queues, and keeps queueing under a trickle that
// hovers at the threshold (no flapping: the calm needs arrivals below
// queueBelowPerMinute); it stops only once nobody waits and arrivals stayed
// below queueBelowPerMinute for calmSeconds. Without the net, auto admits
// anyone at once whenever the queue is empty and a token is there, so the
// hovering trickle went through between its bursts.
func TestNetThresholdsAndCalmSpell(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := steerEnv(t, rdb)
		var log []netSwitch
		n := 0
		join := func() room.Place { n++; return e.enqueue("v" + strconv.Itoa(n)) }
		// One arrival every 2 s (30 a minute): each through at once.
		for range 60 {
			if p := join(); p.State != room.StateAdmitted {
				t.Fatalf("arrival %d at 30 a minute: %s, want admitted at once", n, p.State)
			}
			e.clk.Advance(time.Second)
			e.tickNet(&log)
			e.clk.Advance(time.Second)
			e.tickNet(&log)
		}
		if len(log) != 0 {
			t.Fatalf("the net switched under 30 arrivals a minute: %+v", log)
		}
		if st := e.stats(); st.Net != room.NetOff {
			t.Fatalf("status: net %q, want off", st.Net)
		}
		// A trickle hovering at the threshold, 100 to 140 a minute (alternating
		// 7 and 5 arrivals in 3 s), for ten minutes.
		through := 0
		for i := range 200 {
			k := 7
			if i%2 == 1 {
				k = 5
			}
			for range k {
				if p := join(); p.State == room.StateAdmitted && len(log) > 0 {
					through++
				}
			}
			for range 3 {
				e.clk.Advance(time.Second)
				e.tickNet(&log)
			}
		}
		if len(log) != 1 || !log[0].On || log[0].Why != "arrivals" {
			t.Fatalf("switches under the hovering trickle: %+v, want one: on for arrivals", log)
		}
		if through != 0 {
			t.Errorf("%d arrivals went through at once after the net went on, want 0", through)
		}
		if st := e.stats(); st.Net != room.NetOn || st.NetWhy != "arrivals" {
			t.Errorf("status: net %q (%q), want on (arrivals)", st.Net, st.NetWhy)
		}
		// The trickle stops: the queue empties at the next ticks, the
		// arrivals' rate falls below 60 within seconds; the calm spell is 180 s.
		quiet := time.Time{}
		for range 600 {
			e.clk.Advance(time.Second)
			e.tickNet(&log)
			if quiet.IsZero() && e.stats().Waiting == 0 && e.arrivalRate() < 60 {
				quiet = e.clk.Now()
			}
			if len(log) == 2 {
				break
			}
		}
		if len(log) != 2 || log[1].On || log[1].Why != "calm" {
			t.Fatalf("switches after the trickle stopped: %+v, want off for calm", log)
		}
		if calm := log[1].at.Sub(quiet); calm < 180*time.Second || calm > 182*time.Second {
			t.Errorf("off %v after the room went quiet, want the calm spell, 180 s", calm)
		}
		if p := join(); p.State != room.StateAdmitted {
			t.Errorf("an arrival after the calm: %s, want admitted at once", p.State)
		}
	})
}

// arrivalRate is the auto room's arrival rate (ar in st) decayed to now.
func (e *env) arrivalRate() float64 {
	e.t.Helper()
	v, err := e.rdb.HMGet(e.ctx, e.keys.State, "ar", "art").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	ar, _ := strconv.ParseFloat(str(v[0]), 64)
	art, _ := strconv.ParseInt(str(v[1]), 10, 64)
	return ar * math.Exp(-float64(e.clk.Now().UnixMilli()-art)/10000)
}

func str(v any) string { s, _ := v.(string); return s }

// The net switches on when the room is full or the bucket is empty, so a
// room that queued someone never lets a later arrival pass them, and stays on
// for the calm spell after the queue emptied.
func TestNetSwitchesOnWhenFull(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := steerEnv(t, rdb)
		e.put(func() room.Config {
			c := baseConfig()
			c.Mode, c.MaxActive, c.CalmSeconds = room.ModeAuto, 1, 30
			return c
		}())
		e.clk.Advance(time.Second)
		var log []netSwitch
		first := e.enqueue("first")
		if first.State != room.StateAdmitted {
			t.Fatalf("first: %s, want admitted", first.State)
		}
		second := e.enqueue("second")
		if second.State != room.StateWaiting {
			t.Fatalf("second in a full room: %s, want waiting", second.State)
		}
		e.tickNet(&log)
		if len(log) != 1 || !log[0].On || log[0].Why != "full" {
			t.Fatalf("switches: %+v, want on for full", log)
		}
		e.consume(first.Ticket.Seq)
		if err := e.eng.Complete(e.ctx, e.room, first.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		e.tickNet(&log) // admits second
		e.consume(second.Ticket.Seq)
		if err := e.eng.Complete(e.ctx, e.room, second.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		// A slot is free and nobody waits, but the calm spell holds the net.
		e.clk.Advance(time.Second)
		if p := e.enqueue("third"); p.State != room.StateWaiting {
			t.Errorf("third, within the calm spell: %s, want waiting", p.State)
		}
	})
}

// Across a total loss of Redis, the room comes back (durable's restore:
// floor, then the settings) with the net on and the pace at its floor.
func TestSteeringAfterTotalLoss(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := *cfgWith(func(c *room.Config) {
			c.Mode, c.AdmitPerMinute, c.AdmitPerMinuteMin = room.ModeAuto, 600, 60
		})
		e := newEnv(t, rdb, &cfg)
		for range 200 {
			e.clk.Advance(time.Second)
			e.tick()
		}
		if st := e.stats(); st.Net != room.NetOff || st.PacePerMinute != 600 || st.PaceWhy != "top" {
			t.Fatalf("before the loss: net %q, pace %v (%s), want off at 600 (top)", st.Net, st.PacePerMinute, st.PaceWhy)
		}
		if err := rdb.Del(e.ctx, e.keys.List()...).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.eng.Head(e.ctx, e.room, 1); err != nil {
			t.Fatal(err)
		}
		e.put(cfg)
		st := e.stats()
		if st.Net != room.NetOn || st.NetWhy != "restored" || st.PacePerMinute != 60 {
			t.Errorf("after the loss: net %q (%s), pace %v, want on (restored) at 60", st.Net, st.NetWhy, st.PacePerMinute)
		}
		if p := e.enqueue("after"); p.State != room.StateWaiting {
			t.Errorf("a join after the loss: %s, want waiting (the net is on)", p.State)
		}
		// A new room (no floor) starts with the net off.
		fresh := newEnv(t, rdb, &cfg)
		if st := fresh.stats(); st.Net != room.NetOff {
			t.Errorf("a new room: net %q, want off", st.Net)
		}
	})
}

// report records the origin's load.
func (e *env) report(load float64) {
	e.t.Helper()
	if err := e.eng.ReportLoad(e.ctx, e.room, load); err != nil {
		e.t.Fatalf("ReportLoad: %v", err)
	}
}

// The pace of a room with admitPerMinuteMin follows the origin's load: it
// starts at admitPerMinute, climbs while the origin is quiet or below 0.75,
// backs off by a quarter while it reports 0.9 or more, at most every 5 s and,
// within 15 s of a cut, only if the load scaled to the new pace stays high (a
// load that holds still is cut once each 15 s; the first cut at a load of 1
// halves it: TestAFullOriginIsHalvedFirst),
// never below the floor nor above admitPerMinute, and holds between. Every
// step is believed by the next reply (a waiting visitor's pace and budget)
// and by the bucket (the admissions of a minute).
func TestPaceFollowsASlowingOrigin(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin, c.MaxActive = 600, 60, 100_000
			c.ClaimTTLSeconds, c.SessionTTLSeconds = 3600, 86_400
		}))
		var steps []room.PaceChange
		tick := func() {
			e.clk.Advance(time.Second)
			if r := e.tick(); r.Pace != nil {
				steps = append(steps, *r.Pace)
			}
		}
		if st := e.stats(); st.PacePerMinute != 600 {
			t.Fatalf("a new room's pace %v, want its setting 600", st.PacePerMinute)
		}
		for range 185 {
			tick()
		}
		if st := e.stats(); st.PacePerMinute != 600 || st.PaceWhy != "top" {
			t.Fatalf("after 185 s without a report: pace %v (%s), want 600 (top)", st.PacePerMinute, st.PaceWhy)
		}
		// The origin slows: 0.95 for 32 s.
		steps = nil
		for range 32 {
			e.report(0.95)
			tick()
		}
		var cuts []float64
		for _, s := range steps {
			if s.Why == "backoff" {
				cuts = append(cuts, s.To)
			}
		}
		if len(cuts) != 3 || cuts[0] != 450 || cuts[1] != 337.5 || math.Abs(cuts[2]-253.125) > 0.01 {
			t.Fatalf("back-offs in 32 s at 0.95: %v, want 450, 337.5, 253.125 (one each 15 s)", cuts)
		}
		// A waiting visitor is told the new pace at once.
		tk := e.enqueueN(30)
		p := e.poll(tk[29])
		if math.Abs(p.RatePerMinute-253.125) > 0.01 {
			t.Errorf("a waiting visitor's pace %v, want 253.125", p.RatePerMinute)
		}
		for range 90 {
			e.report(1)
			tick()
		}
		st := e.stats()
		if st.PacePerMinute != 60 || st.PaceWhy != "floor" {
			t.Errorf("after 90 s at 1.0: pace %v (%s), want the floor 60", st.PacePerMinute, st.PaceWhy)
		}
		// The bucket follows: a minute at the floor admits about 60 of a long queue.
		e.enqueueN(500)
		before := e.inUse()
		for range 60 {
			e.report(0.95)
			tick()
		}
		if got := e.inUse() - before; got < 55 || got > 62 {
			t.Errorf("admitted %d in a minute at the floor, want about 60", got)
		}
		// Between 0.75 and 0.9 it holds; below, it climbs.
		for range 10 {
			e.report(0.8)
			tick()
		}
		if st := e.stats(); st.PacePerMinute != 60 || st.PaceWhy != "hold" {
			t.Errorf("at 0.8: pace %v (%s), want 60 held", st.PacePerMinute, st.PaceWhy)
		}
		for range 20 {
			e.report(0.3)
			tick()
		}
		// Told a pace of the climb to where the origin will say 0.9 (120 ÷ 0.3 ×
		// 0.9 = 360): above the rate, under the top
		// (TestAClimbingPaceTellsEachPlaceItsWait).
		if st := e.stats(); st.RatePerMinute != 120 || st.PaceWhy != "climb" || st.PacePerMinute <= 120 || st.PacePerMinute >= 360 {
			t.Errorf("20 s at 0.3: rate %v (%s), told pace %v, want 120 climbing, told between it and 360",
				st.RatePerMinute, st.PaceWhy, st.PacePerMinute)
		}
	})
}

// A change of pace reaches waiting visitors as a PUT's does: the next reply.
// Without the steering, a room ran at admitPerMinute whatever the origin said.
func TestPaceIsNeverAboveTheSetting(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := *cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.AdmitPerMinuteMin = 600, 60 })
		e := newEnv(t, rdb, &cfg)
		for range 200 {
			e.clk.Advance(time.Second)
			e.tick()
		}
		cfg.AdmitPerMinute = 300
		e.put(cfg)
		if st := e.stats(); st.PacePerMinute != 300 {
			t.Errorf("after admitPerMinute 600 → 300: pace %v, want 300 at once", st.PacePerMinute)
		}
		cfg.AdmitPerMinuteMin = 0
		e.put(cfg)
		if st := e.stats(); st.PacePerMinute != 300 || st.PaceWhy != "" {
			t.Errorf("admitPerMinuteMin 0: pace %v (%q), want 300, not steered", st.PacePerMinute, st.PaceWhy)
		}
	})
}
