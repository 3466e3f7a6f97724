package roomdb_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// I2 under contention: 1,000 goroutines redeem the same grant at once.
func TestConcurrentConsumeOfOneGrant(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(nil))
		e.warm()
		ts := e.enqueueN(1)
		e.tick()
		ok, replays, other := raceConsume(e, ts[0].Seq, 1000)
		if ok != 1 || replays != 999 || len(other) != 0 {
			t.Fatalf("1000 consumes: %d ok, %d already consumed, other errors %v; want 1, 999, none", ok, replays, other)
		}
		if s := e.stats(); s.Consumed != 1 || s.ReplaysRefused != 999 || s.Active != 1 {
			t.Errorf("stats after the race: %+v", s)
		}
	})
}

// raceConsume releases n goroutines at once on Consume(seq) and counts the answers.
func raceConsume(e *env, seq int64, n int) (ok, replays int64, other []error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := e.eng.Consume(e.ctx, e.room, seq, origin)
			switch {
			case err == nil:
				atomic.AddInt64(&ok, 1)
			case errors.Is(err, room.ErrAlreadyConsumed):
				atomic.AddInt64(&replays, 1)
			default:
				mu.Lock()
				other = append(other, err)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	return ok, replays, other
}

// I1 under two concurrent tick loops, a clock that keeps moving, visitors
// polling, consuming and completing, and one grant redeemed by 1,000 goroutines:
// a sampler reading admitted + active in one MULTI never sees more than maxActive,
// and every visitor gets through exactly once, in order.
func TestConcurrentTicksKeepCapacity(t *testing.T) {
	const visitors, maxActive = 200, 10
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.MaxActive, c.AdmitPerMinute = maxActive, 6000
			c.ClaimTTLSeconds, c.SessionTTLSeconds, c.HeartbeatTTLSeconds = 3600, 86400, 3600
		}))
		ts := e.enqueueN(visitors)
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()

		var bg sync.WaitGroup
		var ticks, peak atomic.Int64
		var tickErr atomic.Value
		for i := 0; i < 2; i++ { // two admit loops, as with an overlapping cron invocation
			bg.Add(1)
			go func() {
				defer bg.Done()
				for ctx.Err() == nil {
					if _, err := e.eng.Tick(ctx, e.room); err != nil && ctx.Err() == nil {
						tickErr.Store(err)
						return
					}
					ticks.Add(1)
				}
			}()
		}
		bg.Add(1)
		go func() { // the clock: 20 ms of room time per real millisecond
			defer bg.Done()
			for ctx.Err() == nil {
				e.clk.Advance(20 * time.Millisecond)
				time.Sleep(time.Millisecond)
			}
		}()
		var samples atomic.Int64
		bg.Add(1)
		go func() {
			defer bg.Done()
			for ctx.Err() == nil {
				n, err := inUse(ctx, e.rdb, e.keys)
				if err != nil {
					continue
				}
				samples.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
			}
		}()

		// The visitors: poll until admitted, consume, complete. The first grant
		// seen is redeemed by 1,000 goroutines at once.
		served := make([]bool, visitors)
		var order []int64
		raced := false
		deadline := time.Now().Add(2 * time.Minute) // a guard against a hang, not a timing assertion
		for len(order) < visitors {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d visitors served", len(order), visitors)
			}
			if err, _ := tickErr.Load().(error); err != nil {
				t.Fatalf("tick: %v", err)
			}
			progressed := false
			// Polled back to front: a visitor seen admitted before one ahead of
			// it is then seen waiting was admitted out of order (I3).
			var admitted []int
			for i := len(ts) - 1; i >= 0; i-- {
				if served[i] {
					continue
				}
				p := e.poll(ts[i])
				switch {
				case p.State == room.StateWaiting:
					if len(admitted) > 0 {
						t.Fatalf("visitor %d waits after visitor %d, behind it, was admitted (I3)", i, admitted[0])
					}
				case p.State == room.StateAdmitted && !p.Active:
					admitted = append(admitted, i)
				default:
					t.Fatalf("visitor %d polls %s (active %v), want waiting or admitted", i, p.State, p.Active)
				}
			}
			slices.Reverse(admitted)
			for _, i := range admitted {
				tk := ts[i]
				if !raced {
					raced = true
					ok, replays, other := raceConsume(e, tk.Seq, 1000)
					if ok != 1 || replays != 999 || len(other) != 0 {
						t.Errorf("1000 consumes under ticking: %d ok, %d already consumed, other %v", ok, replays, other)
					}
				} else {
					e.consume(tk.Seq)
				}
				if err := e.eng.Complete(e.ctx, e.room, tk.Seq, origin); err != nil {
					t.Fatal(err)
				}
				served[i] = true
				order = append(order, tk.Seq)
				progressed = true
			}
			if !progressed {
				time.Sleep(time.Millisecond)
			}
		}
		cancel()
		bg.Wait()
		if peak.Load() > maxActive {
			t.Errorf("sampler saw admitted+active = %d, above maxActive %d", peak.Load(), maxActive)
		}
		if peak.Load() == 0 || samples.Load() < 100 {
			t.Errorf("sampler took %d samples, peak %d: it did not watch the run", samples.Load(), peak.Load())
		}
		s := e.stats()
		if s.Consumed != visitors || s.Waiting != 0 || s.Admitted != 0 || s.Active != 0 {
			t.Errorf("stats after all were served: %+v", s)
		}
		t.Logf("%d ticks, %d samples, peak admitted+active %d", ticks.Load(), samples.Load(), peak.Load())
	})
}
