package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/localstack"
)

// newHandler wires the API as the Lambdas do, with fresh keys and real time.
func newHandler(rdb redis.UniversalClient) (*api.Handler, string, error) {
	cfg, keys, err := apiapp.Ephemeral("vestibule-bench")
	if err != nil {
		return nil, "", err
	}
	return apiapp.NewHandler(app.NewEngine(rdb, nil), keys, cfg, apiapp.Options{}), cfg.AdminKey, nil
}

// httpRounds is how many turns the trivial handler and the poll route take.
const httpRounds = 4

// benchHTTP measures the poll route over loopback HTTP (the local stack's
// API Gateway translation in front of the real handler) against a trivial
// JSON handler on the same server, with the same keep-alive connections.
func benchHTTP(ctx context.Context, d time.Duration) ([]Row, error) {
	rdb, stop, err := benchRedis(workers)
	if err != nil {
		return nil, err
	}
	defer stop()
	h, admin, err := newHandler(rdb)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", localstack.Gateway(h.Handle))
	mux.HandleFunc("/trivial", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer func() { _ = hs.Close() }()
	base := "http://" + ln.Addr().String()

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = workers, workers, workers
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	call := func(ctx context.Context, method, path, bearer, body string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return b, err
	}

	cfg, _ := json.Marshal(benchRoomConfig())
	if _, err := call(ctx, "PUT", "/api/admin/rooms/bench-http", admin, string(cfg)); err != nil {
		return nil, err
	}
	// Enough tickets, polled in turn, that none is polled sooner than the
	// engine's minimum poll interval at any rate this machine reaches.
	tickets := make([]string, 30000)
	for i := range tickets {
		b, err := call(ctx, "POST", "/api/rooms/bench-http/enqueue", "", "")
		if err != nil {
			return nil, err
		}
		var p struct{ Ticket string }
		if err := json.Unmarshal(b, &p); err != nil || p.Ticket == "" {
			return nil, fmt.Errorf("enqueue: no ticket in %s", b)
		}
		tickets[i] = p.Ticket
	}
	// BENCH_HTTP_CPUPROFILE=file profiles both handlers while they are measured
	// (go tool pprof -focus=Handle separates the poll route).
	if path := os.Getenv("BENCH_HTTP_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	// The two handlers take turns, in httpRounds slices of d each, so that a
	// machine whose load changes during the run (a shared one) weighs on both
	// alike; each figure is the mean of its slices. Each slice also counts the
	// CPU time this process and the redis-server spent: requests per CPU-second
	// hardly move with what else runs on the machine, where requests per second
	// do, so the second row checks the first on a busy machine.
	var next atomic.Int64
	type tally struct {
		rate float64
		n    int64
		cpu  time.Duration
	}
	measure := func(sum *tally, op func(ctx context.Context) error) error {
		var n atomic.Int64
		before, err := cpuTime(ctx, rdb)
		if err != nil {
			return err
		}
		rate, err := throughput(ctx, d/httpRounds, func(ctx context.Context) error {
			err := op(ctx)
			if err == nil {
				n.Add(1)
			}
			return err
		})
		if err != nil {
			return err
		}
		after, err := cpuTime(ctx, rdb)
		if err != nil {
			return err
		}
		sum.rate += rate / httpRounds
		sum.n += n.Load()
		sum.cpu += after - before
		return nil
	}
	var trivial, poll tally
	for range httpRounds {
		if err := measure(&trivial, func(ctx context.Context) error {
			_, err := call(ctx, "GET", "/trivial", "", "")
			return err
		}); err != nil {
			return nil, err
		}
		if err := measure(&poll, func(ctx context.Context) error {
			_, err := call(ctx, "GET", "/api/rooms/bench-http/poll", tickets[next.Add(1)%int64(len(tickets))], "")
			return err
		}); err != nil {
			return nil, err
		}
	}
	perCPU := func(t tally) float64 { return float64(t.n) / max(t.cpu.Seconds(), 1e-9) }
	logf("trivial handler: %.0f req/s, %.1f µs of CPU each", trivial.rate, 1e6/perCPU(trivial))
	logf("poll route: %.0f req/s, %.1f µs of CPU each", poll.rate, 1e6/perCPU(poll))
	return []Row{
		row("HTTP poll route", poll.rate, "req/s", trivial.rate, ratioAtLeast(0.50)),
		row("HTTP poll route per CPU-second", perCPU(poll), "req/CPU-s", perCPU(trivial), nil),
	}, nil
}

// cpuTime is the CPU time (user and system) this process and the Redis
// server behind rdb have used so far.
func cpuTime(ctx context.Context, rdb *redis.Client) (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		name, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			sec, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("redis INFO cpu: %s: %w", line, err)
			}
			total += time.Duration(sec * float64(time.Second))
		}
	}
	return total, nil
}
