package redistest

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"sync"
	"testing"

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
		flag.Set("rapid.nofailfile", "true")
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
