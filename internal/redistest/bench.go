package redistest

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MainNoFailFile is Main for a package with rapid property tests: a failing
// check prints the seed that reproduces it, and writes no fail file into the
// work tree unless -rapid.nofailfile=false is given.
func MainNoFailFile(m *testing.M) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.nofailfile" })
	if !set && flag.Lookup("rapid.nofailfile") != nil {
		_ = flag.Set("rapid.nofailfile", "true")
	}
	return Main(m)
}

// BenchParallelism is the goroutines per GOMAXPROCS of the benchmarks:
// enough requests in flight to keep Redis busy rather than measure one round
// trip at a time.
const BenchParallelism = 16

var (
	benchOnce sync.Once
	benchRDB  *redis.Client
)

// BenchClient is the one client (one connection pool) a test binary's
// benchmarks share with their raw GET baseline, so their ops/s compare directly.
func BenchClient(b *testing.B) *redis.Client {
	benchOnce.Do(func() {
		benchRDB = redis.NewClient(&redis.Options{Addr: Single(b).Options().Addr, PoolSize: 128})
	})
	return benchRDB
}

// ServerCost resets Redis's command statistics and returns a function that
// reports the server-side microseconds per call of cmd since then: the cost on
// the Redis CPU, which a loaded client machine does not blur.
func ServerCost(b *testing.B, cmd string) func() {
	rdb := BenchClient(b)
	ctx := context.Background()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return func() {
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
			if !ok {
				continue
			}
			for _, kv := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					f, _ := strconv.ParseFloat(v, 64)
					b.ReportMetric(f, "redis-µs/op")
				}
			}
		}
	}
}

// BenchParallel runs op in parallel, BenchParallelism goroutines per
// GOMAXPROCS, until the benchmark has its b.N calls, and reports the
// server-side cost per call of cmd (ServerCost). A failing op is reported and
// ends its goroutine.
func BenchParallel(b *testing.B, cmd string, op func(ctx context.Context) error) {
	ctx := context.Background()
	cost := ServerCost(b, cmd)
	b.SetParallelism(BenchParallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	cost()
}

// BenchRawGET is the floor every benchmark compares with: a GET of one key,
// on BenchClient.
func BenchRawGET(b *testing.B) {
	rdb := BenchClient(b)
	key := "{" + Room(b) + "}:k"
	rdb.Set(context.Background(), key, "v", time.Minute)
	BenchParallel(b, "get", func(ctx context.Context) error { return rdb.Get(ctx, key).Err() })
}
