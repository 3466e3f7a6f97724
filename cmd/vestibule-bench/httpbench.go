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
	"strings"
	"sync/atomic"
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
		io.WriteString(w, `{"ok":true}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
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
		defer resp.Body.Close()
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
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	// The two handlers take turns, in httpRounds slices of d each, so that a
	// machine whose load changes during the run (a shared one) weighs on both
	// alike; each figure is the mean of its slices.
	var next atomic.Int64
	var trivial, poll float64
	for range httpRounds {
		t, err := throughput(ctx, d/httpRounds, func(ctx context.Context) error {
			_, err := call(ctx, "GET", "/trivial", "", "")
			return err
		})
		if err != nil {
			return nil, err
		}
		p, err := throughput(ctx, d/httpRounds, func(ctx context.Context) error {
			_, err := call(ctx, "GET", "/api/rooms/bench-http/poll", tickets[next.Add(1)%int64(len(tickets))], "")
			return err
		})
		if err != nil {
			return nil, err
		}
		trivial, poll = trivial+t/httpRounds, poll+p/httpRounds
	}
	logf("trivial handler: %.0f req/s", trivial)
	logf("poll route: %.0f req/s", poll)
	return []Row{row("HTTP poll route", poll, "req/s", trivial, ratioAtLeast(0.50))}, nil
}
