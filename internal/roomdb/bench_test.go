package roomdb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The script benchmarks and the raw GET share one client (one connection pool)
// and one parallelism, so their ops/s compare directly:
//
//	go test -run '^$' -bench . ./internal/room/
// (redistest.BenchClient, redistest.ServerCost).

func benchRoom(b *testing.B, cfg room.Config, opts ...roomdb.Option) (*roomdb.Engine, string) {
	rdb := redistest.BenchClient(b)
	id := redistest.Room(b)
	eng := roomdb.New(rdb, opts...)
	if _, err := eng.PutConfig(context.Background(), id, cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Del(context.Background(), roomdb.KeysFor(id).List()...) })
	return eng, id
}

func BenchmarkRawGET(b *testing.B) { redistest.BenchRawGET(b) }

// The floor of any script: EVALSHA of a script that reads one key.
func BenchmarkRawEVALSHA(b *testing.B) {
	rdb := redistest.BenchClient(b)
	ctx := context.Background()
	key := "{" + redistest.Room(b) + "}:k"
	rdb.Set(ctx, key, "v", time.Minute)
	get := redis.NewScript("return redis.call('GET', KEYS[1])")
	redistest.BenchParallel(b, "evalsha", func(ctx context.Context) error {
		return get.Run(ctx, rdb, []string{key}).Err()
	})
}

func BenchmarkPoll(b *testing.B) {
	cfg := baseConfig()
	eng, id := benchRoom(b, cfg)
	ctx := context.Background()
	ts := make([]room.Ticket, 1000)
	for i := range ts {
		p, err := eng.Enqueue(ctx, id, "v"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		ts[i] = p.Ticket
	}
	b.ResetTimer()
	cost := redistest.ServerCost(b, "evalsha")
	b.SetParallelism(redistest.BenchParallelism)
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			if _, err := eng.Poll(ctx, ts[r.IntN(len(ts))]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	cost()
}

func BenchmarkEnqueue(b *testing.B) {
	eng, id := benchRoom(b, baseConfig())
	redistest.BenchParallel(b, "evalsha", func(ctx context.Context) error {
		_, err := eng.Enqueue(ctx, id, "visitor")
		return err
	})
}

// Consume of distinct grants; the grants are made beforehand in a passthrough room.
func BenchmarkConsume(b *testing.B) {
	cfg := baseConfig()
	cfg.Mode, cfg.ClaimTTLSeconds, cfg.SessionTTLSeconds = room.ModePassthrough, 3600, 3600
	eng, id := benchRoom(b, cfg)
	ctx := context.Background()
	seqs := make([]int64, b.N)
	for i := range seqs {
		p, err := eng.Enqueue(ctx, id, "v")
		if err != nil {
			b.Fatal(err)
		}
		seqs[i] = p.Ticket.Seq
	}
	var next atomic.Int64
	b.ResetTimer()
	redistest.BenchParallel(b, "evalsha", func(ctx context.Context) error {
		_, err := eng.Consume(ctx, id, seqs[next.Add(1)-1], origin)
		return err
	})
}

// A replay: the already-consumed answer, the path a token thief takes.
func BenchmarkConsumeReplay(b *testing.B) {
	cfg := baseConfig()
	cfg.Mode = room.ModePassthrough
	eng, id := benchRoom(b, cfg)
	ctx := context.Background()
	p, err := eng.Enqueue(ctx, id, "v")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Consume(ctx, id, p.Ticket.Seq, origin); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cost := redistest.ServerCost(b, "evalsha")
	b.SetParallelism(redistest.BenchParallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			eng.Consume(ctx, id, p.Ticket.Seq, origin)
		}
	})
	cost()
}

func BenchmarkStats(b *testing.B) {
	eng, id := benchRoom(b, baseConfig())
	redistest.BenchParallel(b, "evalsha", func(ctx context.Context) error {
		_, err := eng.Stats(ctx, id)
		return err
	})
}

// A tick with nothing to do: what every room costs every second.
func BenchmarkTickIdle(b *testing.B) {
	clk := newClock()
	eng, id := benchRoom(b, baseConfig(), roomdb.WithClock(clk.Now))
	ctx := context.Background()
	cost := redistest.ServerCost(b, "evalsha")
	for b.Loop() {
		clk.Advance(time.Second)
		if _, err := eng.Tick(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	cost()
}

// fillQueue puts n waiting visitors straight into a room's queue and heartbeat
// keys, exactly as enqueue writes them (member and score = a microsecond
// sequence, heartbeat = now in ms), by pipelined ZADD and HSET of 1,000 members.
func fillQueue(b *testing.B, rdb redis.UniversalClient, k roomdb.Keys, first int64, n int, nowMS int64) {
	ctx := context.Background()
	const per, cmdsPerPipe = 1000, 50
	pipe := rdb.Pipeline()
	queued := 0
	for i := 0; i < n; i += per {
		q := make([]redis.Z, 0, per)
		hb := make([]any, 0, 2*per)
		for j := i; j < min(i+per, n); j++ {
			seq := first + int64(j)
			m := strconv.FormatInt(seq, 10)
			q = append(q, redis.Z{Score: float64(seq), Member: m})
			hb = append(hb, roomdb.HeartbeatField(seq), roomdb.HeartbeatValue(nowMS))
		}
		pipe.ZAdd(ctx, k.Queue, q...)
		pipe.HSet(ctx, k.Heartbeats, hb...)
		if queued += 2; queued >= cmdsPerPipe {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			queued = 0
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	last := strconv.FormatInt(first+int64(n)-1, 10)
	if err := rdb.HSet(ctx, k.State, "seq", last).Err(); err != nil {
		b.Fatal(err)
	}
}

// The goal: one tick admitting 10,000 from a queue of 1,000,000 in ≤ 50 ms.
func BenchmarkTick10kFrom1M(b *testing.B) {
	if testing.Short() {
		b.Skip("fills a million visitors")
	}
	const waiting, perTick = 1_000_000, 10_000
	clk := newClock()
	cfg := baseConfig()
	cfg.MaxActive, cfg.AdmitPerMinute = 1_000_000, perTick*60 // 10,000 a second
	cfg.ClaimTTLSeconds, cfg.HeartbeatTTLSeconds = 3600, 3600
	eng, id := benchRoom(b, cfg, roomdb.WithClock(clk.Now))
	rdb, k, ctx := redistest.BenchClient(b), roomdb.KeysFor(id), context.Background()
	next := time.Now().UnixMicro()
	fillQueue(b, rdb, k, next, waiting, clk.Now().UnixMilli())
	next += waiting
	b.Logf("queue filled: %d waiting", rdb.ZCard(ctx, k.Queue).Val())
	ticks := 0
	cost := redistest.ServerCost(b, "evalsha")
	for b.Loop() {
		if rdb.ZCard(ctx, k.Queue).Val() < perTick {
			b.StopTimer()
			fillQueue(b, rdb, k, next, waiting, clk.Now().UnixMilli())
			next += waiting
			b.StartTimer()
		}
		clk.Advance(time.Second)
		r, err := eng.Tick(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if r.Admitted != perTick {
			b.Fatalf("tick admitted %d, want %d", r.Admitted, perTick)
		}
		ticks++
	}
	cost()
	b.ReportMetric(perTick, "admitted/op")
	b.Logf("%d ticks of %d admissions", ticks, perTick)
}

// The goal: ≤ 200 bytes of Redis memory per waiting visitor at 1,000,000.
func BenchmarkMemoryPerWaitingVisitor1M(b *testing.B) {
	if testing.Short() {
		b.Skip("fills a million visitors")
	}
	const waiting = 1_000_000
	clk := newClock()
	_, id := benchRoom(b, baseConfig(), roomdb.WithClock(clk.Now))
	rdb, k, ctx := redistest.BenchClient(b), roomdb.KeysFor(id), context.Background()
	var perVisitor, perVisitorKeys float64
	for b.Loop() {
		b.StopTimer()
		rdb.Del(ctx, k.Queue, k.Heartbeats)
		before := usedMemory(b, rdb)
		b.StartTimer()
		fillQueue(b, rdb, k, time.Now().UnixMicro(), waiting, clk.Now().UnixMilli())
		b.StopTimer()
		after := usedMemory(b, rdb)
		perVisitor = float64(after-before) / waiting
		var keys int64
		for _, key := range []string{k.Queue, k.Heartbeats} {
			n, err := rdb.MemoryUsage(ctx, key, 0).Result() // SAMPLES 0: every element
			if err != nil {
				b.Fatal(err)
			}
			keys += n
		}
		perVisitorKeys = float64(keys) / waiting
		b.StartTimer()
	}
	b.ReportMetric(perVisitor, "bytes/visitor")
	b.ReportMetric(perVisitorKeys, "keybytes/visitor")
}

func usedMemory(b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal(fmt.Errorf("no used_memory in INFO memory"))
	return 0
}
