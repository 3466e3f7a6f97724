package bookingdb_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestMain stops the redis-server processes redistest started for this binary
// (and keeps rapid from writing fail files into the work tree).
func TestMain(m *testing.M) { os.Exit(redistest.MainNoFailFile(m)) }

// env is one event on one Redis with an engine on a fake clock.
type env struct {
	t     testing.TB
	ctx   context.Context
	rdb   redis.UniversalClient
	clk   *testkit.Clock
	eng   *bookingdb.Engine
	event string
	keys  bookingdb.EventKeys
}

// newEnv defines a fresh event with inv.
func newEnv(t testing.TB, rdb redis.UniversalClient, inv booking.Inventory) *env {
	t.Helper()
	clk := testkit.EngineClock()
	e := &env{t: t, ctx: context.Background(), rdb: rdb, clk: clk,
		eng: bookingdb.New(rdb, bookingdb.WithClock(clk.Now)), event: redistest.Room(t)}
	e.keys = bookingdb.KeysFor(e.event)
	if err := e.eng.Define(e.ctx, e.event, inv); err != nil {
		t.Fatalf("Define: %v", err)
	}
	return e
}

// together runs f(0) … f(n-1) in n goroutines released at the same moment
// and returns when every one has returned.
func together(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

// race makes n calls of f at once and returns the order events they
// answered, failing the test (what names the call) on any error.
func race(t *testing.T, n int, what string, f func() (booking.OrderEvent, error)) []booking.OrderEvent {
	t.Helper()
	out := make([]booking.OrderEvent, n)
	errs := make([]error, n)
	together(n, func(i int) { out[i], errs[i] = f() })
	for _, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	return out
}

// seats names n seats S0..S(n-1).
func seats(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = "S" + strconv.Itoa(i)
	}
	return s
}

func (e *env) hold(session string, req booking.Request) booking.Hold {
	e.t.Helper()
	h, err := e.eng.Hold(e.ctx, e.event, session, req)
	if err != nil {
		e.t.Fatalf("Hold(%s, %+v): %v", session, req, err)
	}
	return h
}

func (e *env) confirm(h booking.Hold, key string) booking.OrderEvent {
	e.t.Helper()
	o, err := e.eng.Confirm(e.ctx, e.event, h.Session, h.Token, key)
	if err != nil {
		e.t.Fatalf("Confirm(%s, %d, %s): %v", h.Session, h.Token, key, err)
	}
	return o
}

// confirmFails confirms and fails the test unless the confirm fails with
// want; what says which confirm it was.
func (e *env) confirmFails(session string, token int64, key string, want error, what string) {
	e.t.Helper()
	if _, err := e.eng.Confirm(e.ctx, e.event, session, token, key); !errors.Is(err, want) {
		e.t.Fatalf("%s: Confirm(%s, %d, %s) = %v, want %v", what, session, token, key, err, want)
	}
}

func (e *env) view() booking.View {
	e.t.Helper()
	v, err := e.eng.View(e.ctx, e.event)
	if err != nil {
		e.t.Fatalf("View: %v", err)
	}
	return v
}

// stock reads a sku's units straight from Redis (no sweep).
func (e *env) stock(sku string) int64 {
	e.t.Helper()
	n, err := e.rdb.HGet(e.ctx, e.keys.Stock, sku).Int64()
	if err != nil {
		e.t.Fatalf("HGET stock %s: %v", sku, err)
	}
	return n
}
