package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// Virtual runs the API's Lambda handler in-process, in virtual time, against a
// real Redis: the clock jumps from one event to the next, and the driver runs
// the admission tick every TickInterval of virtual time, as the admit function
// does in AWS.
type Virtual struct {
	Handler  *api.Handler
	Engine   *roomdb.Engine
	AdminKey string

	rdb        redis.UniversalClient
	batch      int // the engine's eviction batch (roomdb.WithEvictBatch)
	tick       time.Duration
	gran       time.Duration
	nowNanos   atomic.Int64
	nextTick   time.Time
	admissions []Admission
}

var _ Driver = (*Virtual)(nil)

// VirtualOption changes a Virtual driver's engine.
type VirtualOption func(*Virtual)

// WithEvictBatch makes the engine sweep n places a tick (roomdb.WithEvictBatch)
// instead of roomdb.EvictBatch: a test's crowd of hundreds then takes the
// sweep's passes of a crowd of hundreds of thousands.
func WithEvictBatch(n int) VirtualOption { return func(v *Virtual) { v.batch = n } }

// NewVirtual wires the real handler and engine over rdb with a virtual clock
// starting at start. Keys are fresh and random for this run.
func NewVirtual(rdb redis.UniversalClient, start time.Time, tickInterval time.Duration, opts ...VirtualOption) (*Virtual, error) {
	if tickInterval <= 0 {
		tickInterval = time.Second
	}
	v := &Virtual{rdb: rdb, batch: roomdb.EvictBatch, tick: tickInterval, gran: 50 * time.Millisecond, nextTick: start}
	for _, o := range opts {
		o(v)
	}
	v.nowNanos.Store(start.UnixNano())
	clock := func() time.Time { return time.Unix(0, v.nowNanos.Load()) }
	cfg, keys, err := apiapp.Ephemeral("vestibule-sim")
	if err != nil {
		return nil, err
	}
	v.AdminKey = cfg.AdminKey
	v.Engine = app.NewEngine(rdb, clock, roomdb.WithEvictBatch(v.batch))
	v.Handler = apiapp.NewHandler(v.Engine, keys, cfg, apiapp.Options{TickInterval: tickInterval, Clock: clock,
		Booking: bookingdb.New(rdb, bookingdb.WithClock(clock))})
	return v, nil
}

// Name is "virtual".
func (v *Virtual) Name() string { return "virtual" }

// Now returns the virtual time.
func (v *Virtual) Now() time.Time { return time.Unix(0, v.nowNanos.Load()) }

// AdvanceTo moves the virtual clock forward to t (never back).
func (v *Virtual) AdvanceTo(_ context.Context, t time.Time) error {
	if t.UnixNano() > v.nowNanos.Load() {
		v.nowNanos.Store(t.UnixNano())
	}
	return nil
}

// NextTick is the virtual time of the next admission tick.
func (v *Virtual) NextTick() (time.Time, bool) { return v.nextTick, true }

// Tick runs one admission tick and schedules the next.
func (v *Virtual) Tick(ctx context.Context, roomID string) error {
	v.nextTick = v.nextTick.Add(v.tick)
	r, err := v.Engine.Tick(ctx, roomID)
	if err == nil && r.Admitted > 0 {
		v.admissions = append(v.admissions, Admission{At: v.Now(), N: r.Admitted})
	}
	return err
}

// QueueLen is how many places the room's queue holds.
func (v *Virtual) QueueLen(ctx context.Context, roomID string) (int64, error) {
	n, err := v.rdb.ZCard(ctx, roomdb.KeysFor(roomID).Queue).Result()
	if err != nil {
		return 0, fmt.Errorf("sim: the queue of %s: %w", roomID, err)
	}
	return n, nil
}

// EvictBatch is how many places the engine's tick sweeps at most.
func (v *Virtual) EvictBatch() int { return v.batch }

// TickInterval is the virtual time between two admission ticks.
func (v *Virtual) TickInterval() time.Duration { return v.tick }

// Admissions are the admissions of the ticks this driver ran, in order.
func (v *Virtual) Admissions() []Admission { return v.admissions }

// Granularity: visitors due within 50 ms of virtual time run together (and see
// the same clock), which bounds every measured delay's error by 50 ms.
func (v *Virtual) Granularity() time.Duration { return v.gran }

// Do builds the API Gateway v2 event a Lambda would receive and calls the handler.
func (v *Virtual) Do(ctx context.Context, method, path, bearer string, body []byte) (int, []byte, int, error) {
	ev := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "$default",
		RawPath:  path,
		Headers:  map[string]string{"content-type": "application/json"},
		Body:     string(body),
	}
	if bearer != "" {
		ev.Headers["authorization"] = "Bearer " + bearer
	}
	for k, val := range headersFrom(ctx) {
		ev.Headers[strings.ToLower(k)] = val
	}
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.Path = path
	ev.RequestContext.HTTP.SourceIP = "127.0.0.1"
	resp, err := v.Handler.Handle(ctx, ev)
	if err != nil {
		return 0, nil, 0, err
	}
	ra, _ := strconv.Atoi(resp.Headers["Retry-After"])
	return resp.StatusCode, []byte(resp.Body), ra, nil
}

// HTTP plays the crowd against a running stack over real HTTP, in real time.
// The stack runs its own admission ticks.
type HTTP struct {
	Base   string // e.g. http://127.0.0.1:8080, loopback only
	Client *http.Client
}

var _ Driver = (*HTTP)(nil)

// ErrNotLoopback refuses a target that is not this machine: the simulator is a
// load generator and must never be pointed at someone else's service.
var ErrNotLoopback = errors.New("sim: only loopback addresses may be targeted")

// NewHTTP returns a driver for the stack at base (a loopback URL) with a
// keep-alive pool of conns connections.
func NewHTTP(base string, conns int) (*HTTP, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, base)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, base)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost, t.MaxConnsPerHost = conns, conns, conns
	return &HTTP{Base: strings.TrimRight(base, "/"), Client: &http.Client{Transport: t, Timeout: 10 * time.Second}}, nil
}

// Name is "http".
func (h *HTTP) Name() string { return "http" }

// Now is the wall clock.
func (h *HTTP) Now() time.Time { return time.Now() }

// AdvanceTo sleeps until t.
func (h *HTTP) AdvanceTo(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// NextTick: the stack ticks by itself.
func (h *HTTP) NextTick() (time.Time, bool) { return time.Time{}, false }

// Tick is never called for HTTP.
func (h *HTTP) Tick(context.Context, string) error { return nil }

// Granularity: events due within 5 ms run in one batch.
func (h *HTTP) Granularity() time.Duration { return 5 * time.Millisecond }

// Do sends the request over HTTP.
func (h *HTTP) Do(ctx context.Context, method, path, bearer string, body []byte) (int, []byte, int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.Base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, val := range headersFrom(ctx) {
		req.Header.Set(k, val)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, 0, err
	}
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, b, ra, nil
}
