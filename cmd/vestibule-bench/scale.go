package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/lua"
)

// enqueueScript is the engine's enqueue script, run here in pipelines so a
// million visitors join in seconds; the state it leaves is exactly what the
// engine's Enqueue leaves.
var enqueueScript = redis.NewScript(lua.Enqueue)

// fill enqueues n visitors at now (ms) with pipelines of 1,000 from 4 workers.
func fill(ctx context.Context, rdb *redis.Client, roomID string, n int, nowMS int64) error {
	return fillRange(ctx, rdb, roomID, 0, n, nowMS)
}

// fillRange enqueues n visitors named f<from>… f<from+n-1> as fill does.
func fillRange(ctx context.Context, rdb redis.UniversalClient, roomID string, from, n int, nowMS int64) error {
	if err := enqueueScript.Load(ctx, rdb).Err(); err != nil {
		return err
	}
	keys := roomdb.KeysFor(roomID).List()
	return pipelined(ctx, rdb, n, 1000, func(pipe redis.Pipeliner, lo, hi int) {
		for i := lo; i < hi; i++ {
			enqueueScript.EvalSha(ctx, pipe, keys, nowMS, "f"+strconv.Itoa(from+i))
		}
	})
}

// pipelined runs fill over [0, n) in pipelines of batch from 4 workers, each
// batch [lo, hi) one pipeline, and returns the first failure.
func pipelined(ctx context.Context, rdb redis.UniversalClient, n, batch int, fill func(pipe redis.Pipeliner, lo, hi int)) error {
	const par = 4
	var wg sync.WaitGroup
	errs := make(chan error, par)
	for w := range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := w * batch; lo < n; lo += par * batch {
				pipe := rdb.Pipeline()
				fill(pipe, lo, min(lo+batch, n))
				if _, err := pipe.Exec(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func usedMemory(ctx context.Context, rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO")
}

// tickAdmitting fills a room with queue visitors and times three ticks that
// each admit 10,000 (maxActive raised by 10,000 before each), returning the
// median duration. It logs the median of the tick script's own time in Redis
// beside it (INFO commandstats): the wall time moves with the machine's load
// far more than the script's time does.
func tickAdmitting(ctx context.Context, rdb *redis.Client, roomID string, queue int, t0 time.Time) (time.Duration, float64, error) {
	now := t0
	e := roomdb.New(rdb, roomdb.WithClock(func() time.Time { return now }))
	cfg := benchRoomConfig()
	cfg.AdmitPerMinute = 300_000 // the bucket holds two seconds of rate: 10,000
	cfg.MaxActive = 10_000
	if _, err := e.PutConfig(ctx, roomID, cfg); err != nil {
		return 0, 0, err
	}
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return 0, 0, err
	}
	if err := fill(ctx, rdb, roomID, queue, t0.UnixMilli()); err != nil {
		return 0, 0, err
	}
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return 0, 0, err
	}
	perVisitor := (after - before) / float64(queue)
	var ds []time.Duration
	var inRedis []float64
	for i := range 3 {
		cfg.MaxActive = int64(10_000 * (i + 1))
		if _, err := e.PutConfig(ctx, roomID, cfg); err != nil {
			return 0, 0, err
		}
		now = now.Add(10 * time.Second)
		before, _, err := evalshaMicros(ctx, rdb)
		if err != nil {
			return 0, 0, err
		}
		start := time.Now()
		r, err := e.Tick(ctx, roomID)
		el := time.Since(start)
		if err != nil {
			return 0, 0, err
		}
		after, _, err := evalshaMicros(ctx, rdb)
		if err != nil {
			return 0, 0, err
		}
		inRedis = append(inRedis, after-before)
		if r.Admitted != 10_000 {
			return 0, 0, fmt.Errorf("tick admitted %d, want 10000 (queue %d)", r.Admitted, queue)
		}
		ds = append(ds, el)
	}
	slices.Sort(ds)
	slices.Sort(inRedis)
	logf("tick script's own time in Redis, %d waiting, median of 3: %.1f ms", queue, inRedis[1]/1000)
	return ds[1], perVisitor, nil
}

// benchScale measures one tick admitting 10,000 from a queue of 1,000,000
// (baseline: from a queue of 30,000) and the Redis memory per waiting visitor
// (baseline: one member of a plain sorted set with the same member and score).
func benchScale(ctx context.Context) ([]Row, error) {
	rdb, stop, err := benchRedis(8)
	if err != nil {
		return nil, err
	}
	defer stop()
	t0 := time.Now().Truncate(time.Second)

	small, _, err := tickAdmitting(ctx, rdb, "bench-small", 30_000, t0)
	if err != nil {
		return nil, err
	}
	logf("tick admitting 10,000 from 30,000: %s", small)
	const million = 1_000_000
	big, perVisitor, err := tickAdmitting(ctx, rdb, "bench-million", million, t0)
	if err != nil {
		return nil, err
	}
	logf("tick admitting 10,000 from 1,000,000: %s; %.0f bytes per waiting visitor", big, perVisitor)

	// Baseline: a plain ZSET of the same size, members as the engine writes them
	// (16-digit sequence numbers), scores the same.
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	base := t0.UnixMicro()
	for lo := 0; lo < million; lo += 10_000 {
		zs := make([]redis.Z, 0, 10_000)
		for i := lo; i < lo+10_000; i++ {
			s := base + int64(i)
			zs = append(zs, redis.Z{Score: float64(s), Member: strconv.FormatInt(s, 10)})
		}
		if err := rdb.ZAdd(ctx, "bench:plain", zs...).Err(); err != nil {
			return nil, err
		}
	}
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	plain := (after - before) / million
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rows := []Row{
		row("tick admitting 10,000 of 1,000,000 waiting", ms(big), "ms", ms(small), atMost(50)),
		row("Redis bytes per waiting visitor (1,000,000)", perVisitor, "B", plain, atMost(200)),
	}
	ten, err := tenMillionScale(ctx, plain)
	return append(rows, ten...), err
}
