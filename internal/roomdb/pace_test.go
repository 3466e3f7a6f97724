package roomdb_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// measured is the front's measured speed the ticks keep in the settings hash.
func (e *env) measured() float64 {
	e.t.Helper()
	v, err := e.rdb.HGet(e.ctx, e.keys.Config, "rate").Float64()
	if err != nil {
		e.t.Fatalf("measured rate: %v", err)
	}
	return v
}

// The pace (lib.lua pace) is what the room will do, not what it did: the
// configured rate while a slot is free, whatever a trickle measured; the pace
// slots free at once the room is full; never above the configured rate, and a
// change of the rate believed by the next reply, before any tick. Status and
// enqueue tell the same pace at the same moment.
func TestPace(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Run("a burst after a trickle: the configured rate, not the trickle's", func(t *testing.T) {
			e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.MaxActive = 600, 100 }))
			e.warm()
			// One visitor every 20 s for two minutes: admitted at once, each.
			for i := range 6 {
				e.enqueue("trickle" + strconv.Itoa(i))
				e.tick()
				e.clk.Advance(20 * time.Second)
				e.tick()
			}
			if m := e.measured(); m <= 0 || m >= 60 {
				t.Fatalf("the trickle measured %v a minute; the test needs a slow measured rate", m)
			}
			e.clk.Advance(time.Second)
			var last room.Place
			for i := range 250 {
				last = e.enqueue("burst" + strconv.Itoa(i))
			}
			if last.Position != 250 || last.RatePerMinute != 600 {
				t.Errorf("the 250th of the burst: position %d at %v a minute, want 250 at the configured 600", last.Position, last.RatePerMinute)
			}
			if st := e.stats(); st.PacePerMinute != last.RatePerMinute {
				t.Errorf("status tells %v a minute, enqueue %v", st.PacePerMinute, last.RatePerMinute)
			}
		})
		t.Run("the line moves faster by the visitors ahead skipped", func(t *testing.T) {
			// Half the front stale and skipped (a batch of one leaves the sweep
			// nothing): the admissions are the rate, the places twice as fast.
			e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.MaxActive = 600, 1000 }), roomdb.WithEvictBatch(1))
			ts := e.enqueueN(20)
			e.clk.Advance(pastNearTold)
			for _, tk := range ts[10:] {
				e.poll(tk)
			}
			if r := e.tick(); r.Admitted != 10 || r.Evicted != 10 {
				t.Fatalf("tick %+v, the test needs ten admitted and ten skipped", r)
			}
			if p := e.enqueue("late"); p.RatePerMinute != 1200 {
				t.Errorf("half the front skipped: %v places a minute, want 1200 (600 admissions ÷ 0.5)", p.RatePerMinute)
			}
		})
		t.Run("a lower rate is believed at once", func(t *testing.T) {
			e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.MaxActive = 60, 1000 }))
			e.warm()
			ts := e.enqueueN(40)
			for range 20 {
				e.tick()
				e.clk.Advance(time.Second)
			}
			if m := e.measured(); m < 50 {
				t.Fatalf("measured %v a minute, the test needs about 60", m)
			}
			e.put(*cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.MaxActive = 1, 1000 }))
			p := e.poll(ts[39])
			if p.State != room.StateWaiting || p.RatePerMinute != 1 {
				t.Errorf("after 60 → 1 a minute, before any tick: %s at %v a minute, want waiting at 1", p.State, p.RatePerMinute)
			}
			if p.PollWithin != room.FarPollAfter {
				t.Errorf("the budget at position %d and 1 a minute: %v, want the far one", p.Position, p.PollWithin)
			}
			if st := e.stats(); st.PacePerMinute != 1 {
				t.Errorf("status tells %v a minute, want 1", st.PacePerMinute)
			}
		})
		t.Run("a full room: the pace its slots free at", func(t *testing.T) {
			// Two slots, sessions of up to 100 s: each slot frees at least
			// every 100 s, so the pace is never below 1.2 a minute.
			cfg := cfgWith(func(c *room.Config) {
				c.AdmitPerMinute, c.MaxActive, c.SessionTTLSeconds, c.ClaimTTLSeconds = 600, 2, 100, 30
			})
			e := newEnv(t, rdb, cfg)
			e.warm()
			ts := e.enqueueN(12)
			e.tick()
			e.consume(ts[0].Seq)
			e.consume(ts[1].Seq)
			// A second later the ticks have not yet seen the room full long enough.
			e.clk.Advance(time.Second)
			e.tick()
			if p := e.poll(ts[11]); p.RatePerMinute != 600 {
				t.Errorf("full for one tick: %v a minute, want the configured 600 still", p.RatePerMinute)
			}
			for i := range 61 {
				e.clk.Advance(time.Second)
				e.tick()
				if i%10 == 0 {
					for _, tk := range ts[2:] {
						e.poll(tk) // the waiting keep their places
					}
				}
			}
			// Full for a minute, nobody admitted in it: the floor, two slots per 100 s.
			p := e.poll(ts[11])
			if want := 1.2; math.Abs(p.RatePerMinute-want) > 0.001 {
				t.Errorf("full, nothing measured: %v a minute, want the floor %v", p.RatePerMinute, want)
			}
			if st := e.stats(); st.PacePerMinute != p.RatePerMinute {
				t.Errorf("status tells %v a minute, poll %v", st.PacePerMinute, p.RatePerMinute)
			}
			// Sessions end every few seconds: the front's measured speed, under the rate.
			for i := range 6 {
				if err := e.eng.Complete(e.ctx, e.room, ts[i].Seq, origin); err != nil {
					t.Fatal(err)
				}
				e.tick()
				e.consume(ts[i+2].Seq)
				e.clk.Advance(5 * time.Second)
				e.tick()
				for _, tk := range ts[i+3:] {
					e.poll(tk)
				}
			}
			m := e.measured()
			p = e.poll(ts[11])
			if m <= 1.2 || m >= 600 || p.RatePerMinute != m {
				t.Errorf("full, %v a minute measured: told %v, want the measured rate", m, p.RatePerMinute)
			}
			// Raising maxActive frees slots: the configured rate at once.
			cfg.MaxActive = 100
			e.put(*cfg)
			if p := e.poll(ts[11]); p.RatePerMinute != 600 {
				t.Errorf("maxActive raised: %v a minute, want 600 at once", p.RatePerMinute)
			}
		})
	})
}
