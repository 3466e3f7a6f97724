// Command vestibule-bench measures Vestibule against its goals on this machine
// and prints one table: each figure beside a baseline run in the same
// invocation, their ratio and the goal. With BENCH_JSON=file it also writes the
// table as a JSON array of {"name","value","unit","baseline","ratio","goal","met"}.
//
// It starts its own redis-server processes (stopped at the end), serves the API
// on a loopback port, runs each dist-host bootstrap under the Lambda Runtime
// Interface Emulator and plays a 100,000-visitor crowd in virtual time.
// `make bench` runs it after building the binaries; see docs/BENCHMARKS.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/printer"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// Row is one figure of the table.
type Row struct {
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Baseline float64 `json:"baseline"`
	Ratio    float64 `json:"ratio"`
	Goal     string  `json:"goal"`
	Met      *bool   `json:"met"` // null when the figure has no goal
}

// goal kinds: a figure compared with its baseline, or with an absolute bound.
func ratioAtLeast(min float64) func(r *Row) {
	return func(r *Row) {
		r.Goal = fmt.Sprintf("≥ %.0f %% of baseline", min*100)
		ok := r.Ratio >= min
		r.Met = &ok
	}
}

func atMost(limit float64) func(r *Row) {
	return func(r *Row) {
		r.Goal = fmt.Sprintf("≤ %s %s", num(limit), r.Unit)
		ok := r.Value <= limit
		r.Met = &ok
	}
}

func row(name string, value float64, unit string, baseline float64, goal func(*Row)) Row {
	r := Row{Name: name, Value: value, Unit: unit, Baseline: baseline}
	if baseline != 0 {
		r.Ratio = value / baseline
	}
	if goal != nil {
		goal(&r)
	}
	return r
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func printTable(w io.Writer, rows []Row) error {
	tw := printer.NewTable(w, 0)
	tw.Println("figure\tvalue\tbaseline\tratio\tgoal\tmet\t")
	for _, r := range rows {
		met := "—"
		if r.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*r.Met]
		}
		base, ratio := "—", "—"
		if r.Baseline != 0 {
			base, ratio = num(r.Baseline)+" "+r.Unit, fmt.Sprintf("%.2f", r.Ratio)
		}
		goal := r.Goal
		if goal == "" {
			goal = "—"
		}
		tw.Printf("%s\t%s %s\t%s\t%s\t%s\t%s\t\n", r.Name, num(r.Value), r.Unit, base, ratio, goal, met)
	}
	return tw.Flush()
}

// logf reports progress on stderr so that stdout carries only the table.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// visitorsFlag scales the crowds (the crowd and moments parts).
var visitorsFlag = flag.Int("visitors", 100_000, "crowd size of the simulator figures (the crowd and moments parts scale with it)")

func main() {
	os.Exit(run())
}

func run() int {
	only := flag.String("only", "scripts,booking,http,scale,lambda,crowd,capacity,cost,moments,origin,notices", "comma-separated parts to run (also spread, tickparts, tenscale, tenpolls, prequeue, million, prequeue-million, tenmillion; BENCH_MILLION=1: only million,prequeue-million; BENCH_TEN_MILLION=1: only tenmillion)")
	dur := flag.Duration("d", 2*time.Second, "duration of each throughput measurement")
	visitors := visitorsFlag
	chart := flag.String("chart", "", "write the crowd's chart here (e.g. docs/crowd.png)")
	flag.Parse()
	if os.Getenv("BENCH_MILLION") == "1" {
		*only = "million,prequeue-million"
	}
	if os.Getenv("BENCH_TEN_MILLION") == "1" {
		*only = "tenmillion"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	defer redistest.StopAll()

	parts := map[string]func(context.Context) ([]Row, error){
		"scripts": func(ctx context.Context) ([]Row, error) { return benchScripts(ctx, *dur) },
		"http":    func(ctx context.Context) ([]Row, error) { return benchHTTP(ctx, *dur) },
		"scale":   benchScale,
		"lambda":  benchLambda,
		"crowd":   func(ctx context.Context) ([]Row, error) { return benchCrowd(ctx, *visitors, *chart) },
		"booking": func(ctx context.Context) ([]Row, error) { return benchBooking(ctx, *dur) },
		"origin":  benchOrigin,
		// tenscale and tenpolls alone: the ten-million rows of scale and of
		// capacity, sized by -ten-million-visitors (a smaller room for a look at their shape).
		"tenscale": func(ctx context.Context) ([]Row, error) { return tenMillionScaleOf(ctx, 0, *tenMillionFlag) },
		"tenpolls": func(ctx context.Context) ([]Row, error) { return tenMillionPollsOf(ctx, *dur, *tenMillionFlag) },
	}
	for name, f := range moreParts(*dur, *chart) {
		parts[name] = f
	}
	var rows []Row
	failed := false
	for _, p := range strings.Split(*only, ",") {
		f, ok := parts[p]
		if !ok {
			logf("unknown part %q", p)
			return 2
		}
		start := time.Now()
		logf("%s…", p)
		rs, err := f(ctx)
		rows = append(rows, rs...)
		if err != nil {
			logf("%s: %v", p, err)
			failed = true
		}
		logf("%s done in %s", p, time.Since(start).Round(100*time.Millisecond))
	}
	if err := printTable(os.Stdout, rows); err != nil {
		logf("the table: %v", err)
		failed = true
	}
	if path := os.Getenv("BENCH_JSON"); path != "" {
		b, _ := json.MarshalIndent(rows, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			logf("BENCH_JSON: %v", err)
			return 1
		}
	}
	if failed {
		return 1
	}
	return 0
}

// benchRedis starts a redis-server of its own on loopback and returns a
// client with a pool of the given size (0: go-redis's default) and a stop
// function that closes both.
func benchRedis(pool int) (*redis.Client, func(), error) {
	srv, err := redistest.Start()
	if err != nil {
		return nil, nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: pool})
	return rdb, func() { _ = rdb.Close(); srv.Stop() }, nil
}
