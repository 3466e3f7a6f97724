package roomdb_test

import (
	"context"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestMain stops the redis-server processes redistest started for this binary
// (and keeps rapid from writing fail files into the work tree).
func TestMain(m *testing.M) { os.Exit(redistest.MainNoFailFile(m)) }

// newClock is the engine's clock in tests: time moves only when a test says
// so. It starts on a whole second so times that went through Redis as
// milliseconds compare equal to times computed here.
func newClock() *testkit.Clock { return testkit.FixedClock(time.Now().UTC().Truncate(time.Second)) }

// env is one room on one Redis with an engine on a fake clock.
type env struct {
	t    testing.TB
	ctx  context.Context
	rdb  redis.UniversalClient
	clk  *testkit.Clock
	eng  *roomdb.Engine
	room string
	keys roomdb.Keys
}

// origin is baseConfig's origin URL: the audience of its entry tokens.
const origin = "https://shop.example.com/checkout"

// baseConfig is a valid queue-mode room; tests change what they exercise.
func baseConfig() room.Config {
	c := room.DefaultConfig()
	c.OriginURL = origin
	// The tests reason in a 60 s heartbeat window (stale after 61 s).
	c.HeartbeatTTLSeconds = 60
	return c
}

// newEnv creates a fresh room configured with cfg (nothing stored when cfg is nil).
func newEnv(t testing.TB, rdb redis.UniversalClient, cfg *room.Config, opts ...roomdb.Option) *env {
	t.Helper()
	clk := newClock()
	e := &env{
		t: t, ctx: context.Background(), rdb: rdb, clk: clk,
		eng:  roomdb.New(rdb, append([]roomdb.Option{roomdb.WithClock(clk.Now)}, opts...)...),
		room: redistest.Room(t),
	}
	e.keys = roomdb.KeysFor(e.room)
	if cfg != nil {
		e.put(*cfg)
	}
	return e
}

func (e *env) put(cfg room.Config) {
	e.t.Helper()
	if _, err := e.eng.PutConfig(e.ctx, e.room, cfg); err != nil {
		e.t.Fatalf("PutConfig: %v", err)
	}
}

func (e *env) enqueue(visitor string) room.Place {
	e.t.Helper()
	p, err := e.eng.Enqueue(e.ctx, e.room, visitor)
	if err != nil {
		e.t.Fatalf("Enqueue(%s): %v", visitor, err)
	}
	return p
}

// enqueueN enqueues n visitors v0..v(n-1) and returns their tickets in order.
func (e *env) enqueueN(n int) []room.Ticket {
	e.t.Helper()
	ts := make([]room.Ticket, n)
	for i := range ts {
		ts[i] = e.enqueue("v" + strconv.Itoa(i)).Ticket
	}
	return ts
}

func (e *env) poll(t room.Ticket) room.Place {
	e.t.Helper()
	p, err := e.eng.Poll(e.ctx, t)
	if err != nil {
		e.t.Fatalf("Poll(%d): %v", t.Seq, err)
	}
	return p
}

func (e *env) tick() room.TickResult {
	e.t.Helper()
	r, err := e.eng.Tick(e.ctx, e.room)
	if err != nil {
		e.t.Fatalf("Tick: %v", err)
	}
	return r
}

func (e *env) consume(seq int64) room.Session {
	e.t.Helper()
	s, err := e.eng.Consume(e.ctx, e.room, seq, origin)
	if err != nil {
		e.t.Fatalf("Consume(%d): %v", seq, err)
	}
	return s
}

func (e *env) stats() room.Stats {
	e.t.Helper()
	s, err := e.eng.Stats(e.ctx, e.room)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	// The lottery's seed is random: tests compare the counts.
	if len(s.DrawSeed) != 32 {
		e.t.Fatalf("Stats: seed %q", s.DrawSeed)
	}
	s.DrawSeed = ""
	return s
}

// members reads a sorted set of the room, lowest score first, as sequences.
func (e *env) members(key string) []int64 {
	e.t.Helper()
	ms, err := e.rdb.ZRange(e.ctx, key, 0, -1).Result()
	if err != nil {
		e.t.Fatalf("ZRANGE %s: %v", key, err)
	}
	return atois(e.t, ms)
}

// grants is the sorted list of sequences holding a grant.
func (e *env) grants() []int64 {
	e.t.Helper()
	g := e.members(e.keys.Grants)
	sort.Slice(g, func(i, j int) bool { return g[i] < g[j] })
	return g
}

// inUse is admitted + active, read in one MULTI so the two counts are of one instant.
func inUse(ctx context.Context, rdb redis.UniversalClient, k roomdb.Keys) (int64, error) {
	var a, b *redis.IntCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		a = p.ZCard(ctx, k.Grants)
		b = p.ZCard(ctx, k.Active)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return a.Val() + b.Val(), nil
}

func (e *env) inUse() int64 {
	e.t.Helper()
	n, err := inUse(e.ctx, e.rdb, e.keys)
	if err != nil {
		e.t.Fatalf("inUse: %v", err)
	}
	return n
}

// warm starts the room's admission bucket: a tick on the current instant, then
// one second later, so the next tick's quota is one second of rate whatever the
// bucket held at creation.
func (e *env) warm() {
	e.t.Helper()
	e.tick()
	e.clk.Advance(time.Second)
}

func atois(t testing.TB, ms []string) []int64 {
	t.Helper()
	out := make([]int64, len(ms))
	for i, m := range ms {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			t.Fatalf("member %q is not a decimal sequence: %v", m, err)
		}
		out[i] = n
	}
	return out
}

func seqs(ts []room.Ticket) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.Seq
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// pastNearTold is past the grace of baseConfig (60 s) plus the told poll of a
// visitor near the front (position ≤ 20 at the default 600 a minute: ETA ≤ 2 s,
// budget ≤ 7 s, told ≤ 8 s once rounded up to its class): such a visitor silent
// this long is stale.
const pastNearTold = 69 * time.Second

// pastAnyTold is past the grace plus the longest told poll (room.MaxPollAfter,
// rounded up to its class: 304.4 s): any waiting visitor silent this long is stale.
const pastAnyTold = 60*time.Second + 305*time.Second + time.Second
