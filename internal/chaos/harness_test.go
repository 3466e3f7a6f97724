package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestMain stops every redis-server the suite started, even after a failure.
// go-redis logs every failed dial; during an outage that is thousands of lines.
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	os.Exit(redistest.Main(m))
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// skipShort skips a chaos test under -short: the suite kills, freezes and fails over
// redis-servers in real time, about 40 s, so make test runs its short form, make chaos
// its long one, and the fast tier (make test-short) neither.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the fault-injection suite runs in make test and make chaos")
	}
}

// long reports whether CHAOS=long asked for the long form (make chaos).
func long() bool { return os.Getenv("CHAOS") == "long" }

// scale returns short in the default form and long under CHAOS=long.
func scale[T any](short, long_ T) T {
	if long() {
		return long_
	}
	return short
}

// callBudget is the generous deadline every call of the suite runs under: a
// call that reaches it was not bounded by the client timeouts (app.RedisIOTimeout).
const callBudget = 3 * time.Second

// prodClient is the client production builds (app.NewRedis): short timeouts
// and no retries, so an outage turns into a prompt ErrUnavailable (a 503)
// instead of a Lambda waiting out its own timeout. It closes when the test ends.
func prodClient(t *testing.T, addr string) *redis.Client {
	return prodRedis(t, addr, false).(*redis.Client)
}

// prodCluster is production's cluster client, seeded with the first node: its
// short ClusterStateReloadInterval is what lets the rooms of a dead primary
// come back within about a second of the failover (TestChaosClusterFailover).
func prodCluster(t *testing.T, addrs []string) *redis.ClusterClient {
	return prodRedis(t, addrs[0], true).(*redis.ClusterClient)
}

// prodRedis is app.NewRedis's client of addr, closed when the test ends.
func prodRedis(t *testing.T, addr string, cluster bool) redis.UniversalClient {
	t.Helper()
	c, err := app.NewRedis("redis://"+addr, cluster, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startServer starts a redis-server for one test and stops it when the test ends.
func startServer(t *testing.T, extra ...string) *redistest.Server {
	t.Helper()
	s, err := redistest.Start(extra...)
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// chaosConfig is a room that turns visitors over quickly, so a short test sees
// many admissions: grants and heartbeats outlive any fault the suite injects,
// so a visitor who loses the place lost it to a fault, not to a timer.
// chaosOrigin is chaosConfig's origin URL: the audience of its entry tokens.
const chaosOrigin = "https://shop.example.com/checkout"

func chaosConfig(maxActive, perMinute int64) room.Config {
	c := room.DefaultConfig()
	c.OriginURL = chaosOrigin
	c.MaxActive = maxActive
	c.AdmitPerMinute = perMinute
	c.ClaimTTLSeconds = 60
	c.HeartbeatTTLSeconds = 60
	c.SessionTTLSeconds = 600
	c.ClientEnqueuePerMinute = 0
	return c
}

func newRoom(t *testing.T) string {
	b := make([]byte, 4)
	rand.Read(b)
	return "chaos-" + hex.EncodeToString(b)
}

// put stores a room's config, retrying while Redis comes up.
func put(t *testing.T, eng *roomdb.Engine, id string, cfg room.Config) {
	t.Helper()
	err := whileRedisStarts(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), callBudget)
		defer cancel()
		_, err := eng.PutConfig(ctx, id, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("PutConfig %s: %v", id, err)
	}
}

// whileRedisStarts calls f until it succeeds, at most 50 times 100 ms apart
// (Redis coming up), and returns its last error.
func whileRedisStarts(f func() error) error {
	var err error
	for range 50 {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func jitter(mean time.Duration) time.Duration {
	return mean/2 + time.Duration(mrand.Int64N(int64(mean)+1))
}

// ledger records every successful consume of the whole run: I2 says a
// (room, seq) is consumed successfully at most once, across every fault.
type ledger struct {
	mu      sync.Mutex
	seen    map[string]int
	doubles []string
}

func newLedger() *ledger { return &ledger{seen: map[string]int{}} }

func (l *ledger) consumed(roomID string, seq int64) {
	k := roomID + "/" + strconv.FormatInt(seq, 10)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[k]++
	if l.seen[k] == 2 {
		l.doubles = append(l.doubles, k)
	}
}

// check fails the test if any grant was consumed twice (I2).
func (l *ledger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.doubles) > 0 {
		t.Errorf("I2: %d grants consumed successfully more than once, e.g. %v", len(l.doubles), l.doubles[:min(5, len(l.doubles))])
	}
}

// sampler reads a room's state in one MULTI every few milliseconds and checks
// I1 (admitted + active ≤ maxActive) and, in queue mode, I3 (every waiting
// score is above the head, the highest score admitted: nobody was admitted
// past a visitor still waiting; a ticket from before the room's epoch, back in
// a recovery window, is the exception by design). Reads that fail during a
// fault are counted, not judged.
type sampler struct {
	rdb       redis.UniversalClient
	room      string
	keys      roomdb.Keys
	maxActive int64
	ordered   bool
	stop      chan struct{}
	done      chan struct{}

	samples, failed int
	peak            int64
	violations      []string
}

func watch(rdb redis.UniversalClient, roomID string, maxActive int64, ordered bool) *sampler {
	s := &sampler{rdb: rdb, room: roomID, keys: roomdb.KeysFor(roomID), maxActive: maxActive, ordered: ordered,
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		s.sample()
		time.Sleep(3 * time.Millisecond)
	}
}

func (s *sampler) sample() {
	ctx, cancel := context.WithTimeout(context.Background(), callBudget)
	defer cancel()
	var adm, act *redis.IntCmd
	var first *redis.ZSliceCmd
	var head, epoch *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		adm = p.ZCard(ctx, s.keys.Grants)
		act = p.ZCard(ctx, s.keys.Active)
		first = p.ZRangeWithScores(ctx, s.keys.Queue, 0, 0)
		head = p.HGet(ctx, s.keys.State, "head")
		epoch = p.HGet(ctx, s.keys.State, "epoch")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		s.failed++
		return
	}
	s.samples++
	n := adm.Val() + act.Val()
	s.peak = max(s.peak, n)
	if n > s.maxActive && len(s.violations) < 10 {
		s.violations = append(s.violations, fmt.Sprintf("I1: admitted %d + active %d > maxActive %d", adm.Val(), act.Val(), s.maxActive))
	}
	if !s.ordered || len(first.Val()) == 0 || head.Err() != nil {
		return
	}
	h, _ := strconv.ParseFloat(head.Val(), 64)
	// A ticket from before the room's epoch (issued before a loss re-created
	// the room) may wait behind the head in the recovery window, by design
	// (docs/ENGINE.md, "Recovery window"): it is admitted at the next tick,
	// which a loaded machine may run after this sample.
	e, err := strconv.ParseFloat(epoch.Val(), 64)
	if w := first.Val()[0].Score; w <= h && (err != nil || w >= e) && len(s.violations) < 10 {
		s.violations = append(s.violations, fmt.Sprintf("I3: score %.0f still waits behind head %.0f", w, h))
	}
}

// finish stops the sampler and fails the test on any violation it saw.
func (s *sampler) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	<-s.done
	t.Logf("sampler %s: %d samples (%d failed during faults), peak admitted+active %d of %d",
		s.room, s.samples, s.failed, s.peak, s.maxActive)
	if s.samples == 0 {
		t.Errorf("sampler %s took no sample", s.room)
	}
	for _, v := range s.violations {
		t.Errorf("sampler %s: %s", s.room, v)
	}
}

// admitter is the admit function: it ticks its rooms every interval and, like
// a deployment that re-seeds its configured rooms, puts a room's config back
// when Redis lost it (ErrUnknownRoom). With a grace period it re-seeds the
// room paused and resumes it only after the grace, so every waiting visitor
// polls (and gets the place restored) before the head moves past them.
type admitter struct {
	eng      *roomdb.Engine
	rooms    []string
	cfg      room.Config
	grace    time.Duration
	resume   map[string]time.Time // only the admit goroutine touches it
	admitted atomic.Int64
	// firstAdmit is when (Unix ns) a tick first admitted someone.
	firstAdmit atomic.Int64
	reseeded   atomic.Int64
	failed     atomic.Int64
	// mergeFailed counts ticks whose merge of arrival shards failed (a shard
	// could not be read, TickResult.MergeErr), mergeHeld those whose merge
	// waited after such a failure (room.ErrMergeHeld).
	mergeFailed, mergeHeld atomic.Int64
	wg                     sync.WaitGroup
}

func startAdmitter(ctx context.Context, eng *roomdb.Engine, rooms []string, cfg room.Config, every, grace time.Duration) *admitter {
	a := &admitter{eng: eng, rooms: rooms, cfg: cfg, grace: grace, resume: map[string]time.Time{}}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for ctx.Err() == nil {
			for _, id := range a.rooms {
				a.tick(ctx, id)
			}
			select {
			case <-ctx.Done():
			case <-time.After(every):
			}
		}
	}()
	return a
}

func (a *admitter) tick(ctx context.Context, id string) {
	cctx, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	if until, ok := a.resume[id]; ok && time.Now().After(until) {
		if _, err := a.eng.PutConfig(cctx, id, a.cfg); err == nil {
			delete(a.resume, id)
		}
	}
	r, err := a.eng.Tick(cctx, id)
	switch {
	case err == nil:
		a.admitted.Add(r.Admitted)
		if r.Admitted > 0 {
			a.firstAdmit.CompareAndSwap(0, time.Now().UnixNano())
		}
		switch {
		case errors.Is(r.MergeErr, room.ErrMergeHeld):
			a.mergeHeld.Add(1)
		case r.MergeErr != nil:
			a.mergeFailed.Add(1)
		}
	case errors.Is(err, room.ErrUnknownRoom):
		c := a.cfg
		if a.grace > 0 {
			c.Mode = room.ModePaused
		}
		if _, err := a.eng.PutConfig(cctx, id, c); err == nil {
			a.reseeded.Add(1)
			if a.grace > 0 {
				a.resume[id] = time.Now().Add(a.grace)
			}
		}
	default:
		a.failed.Add(1)
	}
}

// crowdOpts describes a crowd of visitors.
type crowdOpts struct {
	engines []*roomdb.Engine // each call picks one at random, as Lambda instances would
	// pick, when set, picks each call's engine instead: the region a name
	// resolves to (TestChaosRegionFailover).
	pick   func() *roomdb.Engine
	rooms  []string // visitor i joins rooms[i % len]
	n      int
	poll   time.Duration // mean poll interval
	hold   time.Duration // mean session length at the origin
	ledger *ledger
	// arrive spreads arrivals over this long (0: all at once).
	arrive time.Duration
	// session, when set, is what a served visitor does at the origin before
	// holding the session (TestChaosRegionFailover books seats in it).
	session func(ctx context.Context, t room.Ticket, s room.Session)
	// joined and polled, when set, are told of every join and poll that
	// succeeded: the engine it reached, when the call began, what it answered.
	joined func(eng *roomdb.Engine, began time.Time, t room.Ticket)
	polled func(eng *roomdb.Engine, t room.Ticket, p room.Place)
}

// crowd runs visitors who enqueue, poll until admitted, have the origin
// consume the grant (server to server), hold the session and complete it. A
// served visitor stops polling, as the page does. A visitor told "expired"
// who never saw a grant lost the place: that is what I4 forbids.
type crowd struct {
	o      crowdOpts
	cancel context.CancelFunc
	wg     sync.WaitGroup

	served, expiredAfterGrant, done atomic.Int64
	unavailable, deadlineHits       atomic.Int64
	maxLatency                      atomic.Int64 // ns
	inflight, peakInflight          atomic.Int64 // sessions at the origin

	mu       sync.Mutex
	lost     []string
	tickets  []servedTicket
	okMark   time.Time // successes of calls started after this are noted
	firstOK  time.Time // when the first such call returned
	okMarked bool
}

type servedTicket struct {
	eng *roomdb.Engine
	t   room.Ticket
}

func startCrowd(o crowdOpts) *crowd {
	ctx, cancel := context.WithCancel(context.Background())
	c := &crowd{o: o, cancel: cancel}
	for i := range o.n {
		c.wg.Add(1)
		go c.visitor(ctx, i)
	}
	return c
}

func (c *crowd) engine() *roomdb.Engine {
	if c.o.pick != nil {
		return c.o.pick()
	}
	return c.o.engines[mrand.IntN(len(c.o.engines))]
}

// call runs one engine call under the call budget and records how it went.
func (c *crowd) call(ctx context.Context, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	start := time.Now()
	err := f(cctx)
	end := time.Now()
	for {
		old := c.maxLatency.Load()
		if d := int64(end.Sub(start)); d <= old || c.maxLatency.CompareAndSwap(old, d) {
			break
		}
	}
	if errors.Is(err, room.ErrUnavailable) {
		c.unavailable.Add(1)
	}
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		c.deadlineHits.Add(1)
	}
	if err == nil || !errors.Is(err, room.ErrUnavailable) && !errors.Is(err, room.ErrUnknownRoom) {
		c.mu.Lock()
		if c.okMarked && c.firstOK.IsZero() && start.After(c.okMark) {
			c.firstOK = end
		}
		c.mu.Unlock()
	}
	return err
}

// markOK starts watching for the first call that starts after now and succeeds.
func (c *crowd) markOK() {
	c.mu.Lock()
	c.okMark, c.firstOK, c.okMarked = time.Now(), time.Time{}, true
	c.mu.Unlock()
}

// firstOKAfterMark is the end of the first successful call started after markOK.
func (c *crowd) firstOKAfterMark() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.firstOK
}

func (c *crowd) visitor(ctx context.Context, i int) {
	defer c.wg.Done()
	defer c.done.Add(1)
	if c.o.arrive > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(mrand.Int64N(int64(c.o.arrive)))):
		}
	}
	roomID := c.o.rooms[i%len(c.o.rooms)]
	id := make([]byte, 16)
	rand.Read(id)
	visitor := hex.EncodeToString(id) // server-chosen, never the client's

	pause := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(jitter(c.o.poll)):
			return true
		}
	}
	var p room.Place
	for {
		eng, began := c.engine(), time.Now()
		err := c.call(ctx, func(ctx context.Context) (err error) {
			p, err = eng.Enqueue(ctx, roomID, visitor)
			return err
		})
		if err == nil {
			if c.o.joined != nil {
				c.o.joined(eng, began, p.Ticket)
			}
			break
		}
		if !pause() {
			return
		}
	}
	ticket := p.Ticket
	sawGrant := false
	for {
		switch {
		case p.State == room.StateAdmitted && !p.Active:
			sawGrant = true
			if c.redeem(ctx, ticket) {
				return
			}
		case p.State == room.StateAdmitted && p.Active:
			// A consume whose reply was lost went through: served.
			c.served.Add(1)
			return
		case p.State == room.StateExpired:
			if sawGrant {
				c.expiredAfterGrant.Add(1)
			} else {
				c.mu.Lock()
				c.lost = append(c.lost, fmt.Sprintf("%s seq %d", roomID, ticket.Seq))
				c.mu.Unlock()
			}
			return
		}
		if !pause() {
			return
		}
		for {
			eng := c.engine()
			err := c.call(ctx, func(ctx context.Context) (err error) {
				p, err = eng.Poll(ctx, ticket)
				return err
			})
			if err == nil {
				if c.o.polled != nil {
					c.o.polled(eng, ticket, p)
				}
				break
			}
			if !pause() {
				return
			}
		}
	}
}

// redeem is the origin's side: consume the grant once, hold the session,
// complete it. It reports whether the visitor was served.
func (c *crowd) redeem(ctx context.Context, t room.Ticket) bool {
	for {
		var s room.Session
		err := c.call(ctx, func(ctx context.Context) (err error) {
			s, err = c.engine().Consume(ctx, t.Room, t.Seq, chaosOrigin)
			return err
		})
		switch {
		case err == nil:
			c.o.ledger.consumed(t.Room, t.Seq)
			n := c.inflight.Add(1)
			for {
				old := c.peakInflight.Load()
				if n <= old || c.peakInflight.CompareAndSwap(old, n) {
					break
				}
			}
			if c.o.session != nil {
				c.o.session(ctx, t, s)
			}
			select {
			case <-ctx.Done():
			case <-time.After(jitter(c.o.hold)):
			}
			c.inflight.Add(-1)
			for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
				err := c.call(ctx, func(ctx context.Context) error { return c.engine().Complete(ctx, t.Room, t.Seq, chaosOrigin) })
				if err == nil || errors.Is(err, room.ErrUnknownGrant) {
					break
				}
				time.Sleep(jitter(c.o.poll))
			}
			c.served.Add(1)
			c.mu.Lock()
			c.tickets = append(c.tickets, servedTicket{c.engine(), t})
			c.mu.Unlock()
			return true
		case errors.Is(err, room.ErrAlreadyConsumed):
			// Our own earlier attempt went through but its reply was lost.
			c.served.Add(1)
			return true
		case errors.Is(err, room.ErrUnavailable), errors.Is(err, room.ErrUnknownRoom):
			select {
			case <-ctx.Done():
				return false
			case <-time.After(jitter(c.o.poll)):
			}
		default:
			// The grant is gone (lost with Redis, or expired): back to polling,
			// which restores the place or reports it expired.
			return false
		}
	}
}

// wait lets the crowd finish, up to limit, then stops whoever is left, and
// reports whether everyone finished.
func (c *crowd) wait(limit time.Duration) bool {
	ok := testkit.WaitFor(limit, func() bool { return c.done.Load() == int64(c.o.n) })
	c.cancel()
	c.wg.Wait()
	return ok
}

// check fails the test on lost places and logs what the crowd saw.
func (c *crowd) check(t *testing.T, finished bool) {
	t.Helper()
	t.Logf("crowd: %d visitors, %d served, %d grants expired unused, %d calls unavailable, slowest call %s, origin peak %d sessions",
		c.o.n, c.served.Load(), c.expiredAfterGrant.Load(), c.unavailable.Load(),
		time.Duration(c.maxLatency.Load()).Round(time.Millisecond), c.peakInflight.Load())
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lost) > 0 {
		t.Errorf("I4: %d visitors with a valid ticket lost their place, e.g. %v", len(c.lost), c.lost[:min(5, len(c.lost))])
	}
	if n := c.deadlineHits.Load(); n > 0 {
		t.Errorf("%d calls ran into the %s budget instead of failing at the client timeout", n, callBudget)
	}
	if !finished {
		t.Errorf("service did not resume: %d of %d visitors served or finished in time", c.served.Load()+c.expiredAfterGrant.Load(), c.o.n)
	}
}

// servedTickets returns up to n tickets of visitors who were served.
func (c *crowd) servedTickets(n int) []servedTicket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]servedTicket(nil), c.tickets[:min(n, len(c.tickets))]...)
}

// graceAfterLoss is how long a re-seeded room stays paused: longer than the
// crowd's slowest poll interval (jitter makes it 1.5 × the mean).
// CHAOS_GRACE=0 turns it off, to see what the engine does alone.
func graceAfterLoss(poll time.Duration) time.Duration {
	if v, ok := os.LookupEnv("CHAOS_GRACE"); ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return 2 * poll
}

// pace is the mean poll interval for a crowd of n: at least base, and slow
// enough that the crowd makes about 2,000 calls a second, which two shared
// cores serve without the test itself becoming the overload.
func pace(n int, base time.Duration) time.Duration {
	return max(base, time.Duration(n)*time.Second/2000)
}

// crowdLimit is how long a crowd may take to be served once the fault is over.
func crowdLimit() time.Duration { return scale(60*time.Second, 180*time.Second) }

// guard is the origin's guard on a second redemption: it keeps the jti (the
// sequence) of every entry it let in, and reports whether (room, seq) was
// let in before, which the origin then refuses.
func (l *ledger) guard(roomID string, seq int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[roomID+"/"+strconv.FormatInt(seq, 10)] > 0
}
