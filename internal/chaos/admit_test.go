package chaos

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// allowance is the most a room may admit between start and end: the token
// bucket refills admitPerMinute × elapsed, starting empty; the cap (two
// seconds' worth, at least one) is added as slack for a bucket that was full.
func allowance(perMinute int64, elapsed time.Duration) int64 {
	return int64(float64(perMinute)*elapsed.Minutes()) + max(1, perMinute/30)
}

// admittedSoFar counts the grants of a room whose grants are never consumed.
func admittedSoFar(t *testing.T, rdb redis.UniversalClient, id string) int64 {
	t.Helper()
	k := roomdb.KeysFor(id)
	n, err := rdb.ZCard(context.Background(), k.Grants).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The engine clock stands still until set: a retried tick
// then runs with the very same time as the attempt that crashed.

// TestChaosDuplicateAdmit runs the admit function as it runs when things go
// wrong: several invocations ticking at once, ticks cut off half-way (their
// context cancelled mid-call, so the script may or may not have run) and
// retried at once with the same clock time, and two ticks for the very same
// instant in parallel. The token bucket must keep the total within the rate,
// and I1 and I2 must hold in a room whose capacity is what binds.
func TestChaosDuplicateAdmit(t *testing.T) {
	skipShort(t)
	s := startServer(t)
	rdb := prodClient(t, s.Addr)
	direct := roomdb.New(rdb)
	bg := context.Background()

	const perMinute = 1200 // 20 a second, cap 40
	rateRoom, capRoom := newRoom(t), newRoom(t)
	rateCfg := chaosConfig(1_000_000, perMinute) // capacity never binds: only the rate does
	rateCfg.ClaimTTLSeconds, rateCfg.HeartbeatTTLSeconds = 3600, 3600
	capCfg := chaosConfig(5, 6000) // the rate never binds: only capacity does
	period := scale(3*time.Second, 30*time.Second)

	start := time.Now()
	put(t, direct, rateRoom, rateCfg)
	put(t, direct, capRoom, capCfg)
	// More waiting than the period can admit, so the queue never runs dry.
	queue := int(allowance(perMinute, period+10*time.Second))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < queue; i += 8 {
				if _, err := direct.Enqueue(bg, rateRoom, fmt.Sprintf("v%d", i)); err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	sam := watch(rdb, capRoom, capCfg.MaxActive, true)
	led := newLedger()
	n := scale(100, 600)
	cr := startCrowd(crowdOpts{engines: []*roomdb.Engine{direct}, rooms: []string{capRoom}, n: n,
		poll: pace(n, 50*time.Millisecond), hold: 30 * time.Millisecond, ledger: led})

	ctx, stop := context.WithCancel(bg)
	rooms := []string{rateRoom, capRoom}
	var cut, loops sync.WaitGroup
	var cancelled atomic.Int64
	// Three invocations of the admit function at once.
	for range 3 {
		loops.Go(func() {
			for ctx.Err() == nil {
				for _, id := range rooms {
					direct.Tick(ctx, id)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	// Two that crash half-way through a tick and are retried at once, same time.
	for range 2 {
		loops.Go(func() {
			clk := testkit.FixedClock(time.Now())
			eng := roomdb.New(rdb, roomdb.WithClock(clk.Now))
			for ctx.Err() == nil {
				clk.Set(time.Now())
				for _, id := range rooms {
					cctx, cancel := context.WithTimeout(ctx, time.Duration(mrand.Int64N(int64(time.Millisecond))))
					if _, err := eng.Tick(cctx, id); err != nil {
						cancelled.Add(1)
					}
					cancel()
					eng.Tick(ctx, id)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	// Two ticks for the very same instant, in parallel.
	loops.Go(func() {
		clk := testkit.FixedClock(time.Now())
		eng := roomdb.New(rdb, roomdb.WithClock(clk.Now))
		for ctx.Err() == nil {
			clk.Set(time.Now())
			for range 2 {
				cut.Go(func() {
					for _, id := range rooms {
						eng.Tick(ctx, id)
					}
				})
			}
			cut.Wait()
			time.Sleep(5 * time.Millisecond)
		}
	})

	time.Sleep(period)
	finished := cr.wait(crowdLimit())
	stop()
	loops.Wait()
	elapsed := time.Since(start)

	got, most := admittedSoFar(t, rdb, rateRoom), allowance(perMinute, elapsed)
	t.Logf("admitted %d in %s at %d/min with 6 tickers (%d ticks cut off half-way); allowance %d",
		got, elapsed.Round(time.Millisecond), perMinute, cancelled.Load(), most)
	if got > most {
		t.Errorf("duplicate or retried ticks admitted %d, more than the rate allows (%d)", got, most)
	}
	if got == 0 {
		t.Errorf("nothing admitted: the tickers did not run")
	}
	sam.finish(t)
	led.check(t)
	cr.check(t, finished)
}

// TestChaosClockSkew runs engines whose clocks are up to 5 s apart over one
// Redis, as Lambda instances on different hosts would be: visitors, the origin
// and two admit functions (on the two most skewed clocks) each use any of them.
// I1, I2 and queue order hold, nobody is evicted (heartbeats last 60 s, far
// more than the skew), and the rate holds within the skew.
func TestChaosClockSkew(t *testing.T) {
	skipShort(t)
	s := startServer(t)
	rdb := prodClient(t, s.Addr)
	offsets := []time.Duration{-5 * time.Second, -2 * time.Second, 0, 3 * time.Second, 5 * time.Second}
	var engines []*roomdb.Engine
	for _, off := range offsets {
		engines = append(engines, roomdb.New(rdb, roomdb.WithClock(func() time.Time { return time.Now().Add(off) })))
	}
	const perMinute = 6000
	cfg := chaosConfig(10, perMinute)
	id := newRoom(t)
	start := time.Now()
	put(t, engines[0], id, cfg)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sam := watch(rdb, id, cfg.MaxActive, true)
	a1 := startAdmitter(ctx, engines[0], []string{id}, cfg, 50*time.Millisecond, 0)
	a2 := startAdmitter(ctx, engines[len(engines)-1], []string{id}, cfg, 50*time.Millisecond, 0)
	led := newLedger()
	n := scale(200, 1500)
	cr := startCrowd(crowdOpts{engines: engines, rooms: []string{id}, n: n,
		poll: pace(n, 100*time.Millisecond), hold: 50 * time.Millisecond, ledger: led, arrive: time.Second})
	finished := cr.wait(crowdLimit())
	stop()
	a1.wg.Wait()
	a2.wg.Wait()
	elapsed := time.Since(start)

	sam.finish(t)
	led.check(t)
	cr.check(t, finished)
	st, err := engines[2].Stats(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Evicted != 0 {
		t.Errorf("%d visitors evicted: skewed clocks made fresh heartbeats look stale", st.Evicted)
	}
	// The bucket refills by the furthest-ahead clock it has seen, so the
	// allowance stretches by the spread of the clocks (10 s).
	got, most := a1.admitted.Load()+a2.admitted.Load(), allowance(perMinute, elapsed+10*time.Second)
	t.Logf("admitted %d in %s with clocks %v; allowance %d", got, elapsed.Round(time.Millisecond), offsets, most)
	if got > most {
		t.Errorf("skewed tickers admitted %d, more than the rate allows (%d)", got, most)
	}
}
