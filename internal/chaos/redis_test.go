package chaos

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestChaosRedisRestart kills Redis mid-crowd and starts it again, with
// append-only persistence (fsync on every write) and without persistence. The
// crowd, the admit loop and the origin keep going on the same engine and
// client; the admit loop re-seeds the room when its config was lost.
func TestChaosRedisRestart(t *testing.T) {
	skipShort(t)
	for _, mode := range []struct {
		name    string
		extra   []string
		durable bool
	}{
		{"appendonly", []string{"appendonly", "yes", "appendfsync", "always"}, true},
		{"nopersistence", nil, false},
	} {
		t.Run(mode.name, func(t *testing.T) {
			s := startServer(t, mode.extra...)
			rdb := prodClient(t, s.Addr)
			eng := roomdb.New(rdb)
			cfg := chaosConfig(20, 6000)
			id := newRoom(t)
			put(t, eng, id, cfg)

			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			sam := watch(rdb, id, cfg.MaxActive, true)
			// After a data loss nobody is admitted until every waiting visitor has
			// polled again (see admitter and docs/SECURITY.md).
			n := scale(200, 1500)
			poll := pace(n, 150*time.Millisecond)
			adm := startAdmitter(ctx, eng, []string{id}, cfg, 50*time.Millisecond, graceAfterLoss(poll))
			led := newLedger()
			cr := startCrowd(crowdOpts{engines: []*roomdb.Engine{eng}, rooms: []string{id}, n: n,
				poll: poll, hold: 60 * time.Millisecond, ledger: led, arrive: 500 * time.Millisecond})

			if !testkit.WaitFor(30*time.Second, func() bool { return cr.served.Load() >= int64(n/3) }) {
				t.Fatalf("crowd did not get going: %d served", cr.served.Load())
			}
			servedBefore := cr.served.Load()
			killAt := time.Now()
			s.Stop()
			cr.markOK()
			time.Sleep(scale(300*time.Millisecond, 3*time.Second))
			if err := s.Restart(); err != nil {
				t.Fatalf("restart: %v", err)
			}
			upAt := time.Now()
			testkit.WaitFor(30*time.Second, func() bool { return !cr.firstOKAfterMark().IsZero() })
			firstOK := cr.firstOKAfterMark()
			finished := cr.wait(crowdLimit())
			stop()
			adm.wg.Wait()

			if firstOK.IsZero() {
				t.Errorf("no call succeeded after the restart")
			} else {
				t.Logf("RECOVERY %s: redis down %s; first successful call %s after the process was back, %s after the kill",
					mode.name, upAt.Sub(killAt).Round(time.Millisecond), firstOK.Sub(upAt).Round(time.Millisecond),
					firstOK.Sub(killAt).Round(time.Millisecond))
			}
			restored, _ := rdb.HGet(context.Background(), roomdb.KeysFor(id).State, "restored").Int64()
			t.Logf("%d served before the kill; room re-seeded %d times; %d places restored from tickets",
				servedBefore, adm.reseeded.Load(), restored)
			sam.finish(t)
			led.check(t)
			cr.check(t, finished)
			if mode.durable {
				if adm.reseeded.Load() != 0 {
					t.Errorf("the room's config was lost despite appendfsync always")
				}
				// The origin's own count of sessions: nothing lost, so I1 holds there too.
				if p := cr.peakInflight.Load(); p > cfg.MaxActive {
					t.Errorf("I1 at the origin: %d sessions at once, maxActive %d", p, cfg.MaxActive)
				}
			} else {
				t.Logf("origin peak %d sessions with maxActive %d: sessions active at the loss are forgotten", cr.peakInflight.Load(), cfg.MaxActive)
			}
			// A served visitor who comes back with the ticket gets nothing more.
			if mode.durable {
				for _, st := range cr.servedTickets(20) {
					assertServed(t, st.eng, st.t)
				}
			}
		})
	}
	t.Run("served ticket after data loss", servedAfterLoss)
}

// assertServed checks that a served visitor's ticket and grant are spent (I2).
func assertServed(t *testing.T, eng *roomdb.Engine, tk room.Ticket) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callBudget)
	defer cancel()
	p, err := eng.Poll(ctx, tk)
	if err != nil || p.State != room.StateExpired {
		t.Errorf("served ticket %d polled again: %v %v, want expired", tk.Seq, p.State, err)
	}
	if _, err := eng.Consume(ctx, tk.Room, tk.Seq, chaosOrigin); err == nil {
		t.Errorf("I2: served grant %d consumed again", tk.Seq)
	}
}

// servedAfterLoss: a visitor consumes the grant, Redis loses everything, the
// visitor polls with the old ticket. The room comes back from the durable
// store without an admin call (durable.Queue), with the head the admit loop
// recorded as its floor: the ticket is expired and its grant is never granted
// again (I2), though the recovery window would otherwise restore it (I4).
func servedAfterLoss(t *testing.T) {
	s := startServer(t)
	rdb := prodClient(t, s.Addr)
	ctx := context.Background()
	clk := testkit.FixedClock(time.Now())
	eng := roomdb.New(rdb, roomdb.WithClock(clk.Now))
	q := durable.New(eng, durable.Options{Store: durable.Disk{Dir: t.TempDir()}, Clock: clk.Now})
	cfg := chaosConfig(5, 600)
	id := newRoom(t)
	if _, err := q.PutConfig(ctx, id, cfg); err != nil {
		t.Fatal(err)
	}
	a, err := q.Join(ctx, id, "visitor-a", room.JoinProof{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if r, err := q.Tick(ctx, id); err != nil || r.Admitted != 1 {
		t.Fatalf("tick = %+v, %v; want one admitted", r, err)
	}
	if _, err := q.Consume(ctx, id, a.Ticket.Seq, chaosOrigin); err != nil {
		t.Fatalf("consume: %v", err)
	}
	if err := q.Complete(ctx, id, a.Ticket.Seq, chaosOrigin); err != nil {
		t.Fatalf("complete: %v", err)
	}
	assertServed(t, eng, a.Ticket)

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// No admin call: the poll finds the room missing and restores it.
	var p room.Place
	err = whileRedisStarts(func() (err error) {
		p, err = q.Poll(ctx, a.Ticket)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, err := q.Tick(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, again := q.Consume(ctx, id, a.Ticket.Seq, chaosOrigin)
	if p.State != room.StateExpired || again == nil {
		t.Errorf("I2 after a total loss: a served ticket polls as %q and its second consume returns %v; want expired and an error", p.State, again)
	}
}

// TestChaosRedisUnreachable takes Redis away for a while, killed (connections
// refused) and frozen (connections hang: a partition or a stalled host). Every
// engine call fails with ErrUnavailable at the client timeout, well inside the
// call budget, and everything works again on the same client when Redis is back.
func TestChaosRedisUnreachable(t *testing.T) {
	skipShort(t)
	s := startServer(t, "appendonly", "yes", "appendfsync", "always")
	rdb := prodClient(t, s.Addr)
	eng := roomdb.New(rdb)
	cfg := chaosConfig(5, 600)
	cfg.ClientEnqueuePerMinute = 6000
	id := newRoom(t)
	put(t, eng, id, cfg)
	ctx := context.Background()
	var tickets []room.Ticket
	for i := range 10 {
		p, err := eng.Enqueue(ctx, id, "waiting-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, p.Ticket)
	}
	nobody := room.Ticket{Room: id, Visitor: "nobody", Seq: 1}
	visitor := 0
	ops := []struct {
		name string
		f    func(context.Context) error
	}{
		{"enqueue", func(ctx context.Context) error {
			visitor++
			_, err := eng.Enqueue(ctx, id, "late-"+strconv.Itoa(visitor))
			return err
		}},
		{"poll", func(ctx context.Context) error { _, err := eng.Poll(ctx, tickets[0]); return err }},
		{"leave", func(ctx context.Context) error { return eng.Leave(ctx, nobody) }},
		{"consume", func(ctx context.Context) error { _, err := eng.Consume(ctx, id, 1, chaosOrigin); return err }},
		{"complete", func(ctx context.Context) error { return eng.Complete(ctx, id, 1, chaosOrigin) }},
		{"tick", func(ctx context.Context) error { _, err := eng.Tick(ctx, id); return err }},
		{"stats", func(ctx context.Context) error { _, err := eng.Stats(ctx, id); return err }},
		{"getconfig", func(ctx context.Context) error { _, err := eng.GetConfig(ctx, id); return err }},
		{"putconfig", func(ctx context.Context) error { _, err := eng.PutConfig(ctx, id, cfg); return err }},
		{"rooms", func(ctx context.Context) error { _, err := eng.Rooms(ctx); return err }},
		{"allowenqueue", func(ctx context.Context) error { return eng.AllowEnqueue(ctx, id, "198.51.100.7") }},
	}
	// runAll runs every op at once (as concurrent requests would) and returns their errors and slowest time.
	runAll := func() ([]error, time.Duration) {
		errs := make([]error, len(ops))
		var slowest time.Duration
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, op := range ops {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), callBudget)
				defer cancel()
				start := time.Now()
				err := op.f(ctx)
				if err != nil && ctx.Err() != nil {
					err = fmt.Errorf("ran into the %s budget: %w", callBudget, err)
				}
				mu.Lock()
				errs[i], slowest = err, max(slowest, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		return errs, slowest
	}

	for _, fault := range []struct {
		name        string
		apply, lift func() error
	}{
		{"killed", func() error { s.Stop(); return nil }, s.Restart},
		{"frozen", s.Pause, s.Resume},
	} {
		t.Run(fault.name, func(t *testing.T) {
			if err := fault.apply(); err != nil {
				t.Fatal(err)
			}
			var slowest time.Duration
			rounds := 0
			for end := time.Now().Add(scale(time.Second, 10*time.Second)); rounds == 0 || time.Now().Before(end); rounds++ {
				errs, d := runAll()
				slowest = max(slowest, d)
				for i, err := range errs {
					if !errors.Is(err, room.ErrUnavailable) || strings.Contains(fmt.Sprint(err), "budget") {
						t.Errorf("%s while Redis is %s: %v; want ErrUnavailable at the client timeout", ops[i].name, fault.name, err)
					}
				}
			}
			t.Logf("%d rounds of %d calls while %s: all ErrUnavailable, slowest %s", rounds, len(ops), fault.name, slowest.Round(time.Millisecond))

			liftAt := time.Now()
			if err := fault.lift(); err != nil {
				t.Fatal(err)
			}
			var last []error
			back := testkit.WaitFor(30*time.Second, func() bool {
				errs, _ := runAll()
				last = errs
				for _, err := range errs {
					if err != nil && !errors.Is(err, room.ErrUnknownGrant) {
						return false
					}
				}
				return true
			})
			if !back {
				t.Fatalf("not every call works again 30 s after Redis came back: %v", last)
			}
			t.Logf("RECOVERY %s: every call works again %s after Redis was back", fault.name, time.Since(liftAt).Round(time.Millisecond))
			for _, tk := range tickets[1:] {
				// The recovery calls tick, so the front of the queue may be admitted by now.
				p, err := eng.Poll(ctx, tk)
				if err != nil || p.State != room.StateWaiting && p.State != room.StateAdmitted {
					t.Errorf("I4: waiting visitor %d after the outage: %v %v", tk.Seq, p.State, err)
				}
			}
		})
	}
}

// TestChaosRedisSlow slows Redis down mid-crowd: CLIENT PAUSE (writes held for
// 2 s: every script waits) and DEBUG SLEEP (the whole server stalls for 1 s).
// Calls fail at the client timeout instead of piling up, connections and
// goroutines come back to where they were, and the state stays consistent.
func TestChaosRedisSlow(t *testing.T) {
	skipShort(t)
	s := startServer(t, "enable-debug-command", "yes")
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { admin.Close() })
	rdb := prodClient(t, s.Addr)
	eng := roomdb.New(rdb)
	cfg := chaosConfig(10, 6000)
	id := newRoom(t)
	put(t, eng, id, cfg)
	bg := context.Background()
	if err := admin.Ping(bg).Err(); err != nil {
		t.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()

	ctx, stop := context.WithCancel(bg)
	defer stop()
	sam := watch(rdb, id, cfg.MaxActive, true)
	adm := startAdmitter(ctx, eng, []string{id}, cfg, 50*time.Millisecond, 0)
	led := newLedger()
	n := scale(150, 1000)
	cr := startCrowd(crowdOpts{engines: []*roomdb.Engine{eng}, rooms: []string{id}, n: n,
		poll: pace(n, 100*time.Millisecond), hold: 50 * time.Millisecond, ledger: led, arrive: 300 * time.Millisecond})
	if !testkit.WaitFor(30*time.Second, func() bool { return cr.served.Load() >= int64(n/5) }) {
		t.Fatalf("crowd did not get going: %d served", cr.served.Load())
	}

	before := cr.unavailable.Load()
	if err := admin.Do(bg, "CLIENT", "PAUSE", 2000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	time.Sleep(2200 * time.Millisecond)
	paused := cr.unavailable.Load() - before
	before = cr.unavailable.Load()
	if err := admin.Do(bg, "DEBUG", "SLEEP", 1).Err(); err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	slept := cr.unavailable.Load() - before
	t.Logf("calls failed with ErrUnavailable: %d during CLIENT PAUSE, %d during DEBUG SLEEP", paused, slept)
	if paused == 0 || slept == 0 {
		t.Errorf("no call timed out during a fault: the fault did not bite")
	}

	finished := cr.wait(crowdLimit())
	stop()
	adm.wg.Wait()
	sam.finish(t)
	led.check(t)
	cr.check(t, finished)

	// No pile-up: the server's connections settle back to about the client's
	// pool (timed-out connections are closed, not left queued: hundreds of
	// calls timed out), and every goroutine the calls started is gone. The
	// margin is the admin connection and go-redis dialling a few connections
	// beyond PoolSize while others are being discarded (21 seen for a pool of 20).
	pool := rdb.Options().PoolSize
	var clients int
	if !testkit.WaitFor(5*time.Second, func() bool {
		info, err := admin.Info(bg, "clients").Result()
		if err != nil {
			return false
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "connected_clients:"); ok {
				clients, _ = strconv.Atoi(v)
			}
		}
		return clients <= pool+5
	}) {
		list, _ := admin.ClientList(bg).Result()
		t.Errorf("%d connections on the server after the faults; the pool holds at most %d:\n%s", clients, pool, list)
	}
	var now int
	if !testkit.WaitFor(5*time.Second, func() bool { now = runtime.NumGoroutine(); return now <= goroutines+3 }) {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before the crowd, %d after it stopped\n%s", goroutines, now, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("goroutines %d before, %d after; %d server connections after (pool %d)", goroutines, now, clients, pool)
}
