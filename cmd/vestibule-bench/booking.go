package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

// benchBooking measures the booking kit's engine (internal/booking, the
// booking_*.lua scripts) against raw GET with the same client pool, on a
// redis-server of its own: holds on one hot seat and spread over 10,000
// seats, confirm with an idempotency key, the same confirm retried, and
// release. See docs/BENCHMARKS.md, "The booking kit".
func benchBooking(ctx context.Context, d time.Duration) ([]Row, error) {
	rdb, stop, err := benchRedis(workers)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := rdb.Set(ctx, "bench:get", "x", 0).Err(); err != nil {
		return nil, err
	}
	get, err := throughput(ctx, d, func(ctx context.Context) error { return rdb.Get(ctx, "bench:get").Err() })
	if err != nil {
		return nil, err
	}
	logf("raw GET: %.0f ops/s", get)
	var rows []Row
	add := func(name string, ops float64) {
		rows = append(rows, row("booking "+name, ops, "ops/s", get, nil))
	}

	// Holds, as BenchmarkHoldHotSeat and BenchmarkHold10kSeats do them: each
	// call a new session asking for one seat; the engine's clock moves 1 ms
	// per call and holds last one second, so a steady state of about 1,000
	// live holds whose overdue ones the hold script expires lazily.
	for _, c := range []struct {
		name  string
		seats int
		pick  func() string
	}{
		{"hold, one hot seat", 1, func() string { return "S0" }},
		{"hold, 10,000 seats", 10_000, func() string { return "S" + strconv.Itoa(rand.IntN(10_000)) }},
	} {
		ops, held, err := benchHolds(ctx, rdb, d, c.seats, c.pick)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", c.name, err)
		}
		logf("booking %s: %.0f ops/s, %.1f %% of calls held their seat (the rest refused: taken)", c.name, ops, held*100)
		add(c.name, ops)
	}

	// Confirm and release: holds made first (one seat each, real clock, an
	// hour's TTL), then each confirmed once with its own idempotency key, the
	// same confirms retried (the replay path), and the other holds released.
	clock := func() time.Time { return time.Now() }
	eng := booking.New(rdb, booking.WithClock(clock))
	const event = "bench-orders"
	n := max(min(int(get*d.Seconds()/4), booking.MaxSeats/2), 10_000)
	if err := eng.Define(ctx, event, booking.Inventory{Seats: seatNames(2 * n), HoldTTL: time.Hour, SessionLimit: 1}); err != nil {
		return rows, err
	}
	holds := make([]booking.Hold, 2*n)
	var hi atomic.Int64
	if _, err := throughput(ctx, time.Hour, func(ctx context.Context) error {
		i := int(hi.Add(1)) - 1
		if i >= len(holds) {
			return errDone
		}
		h, err := eng.Hold(ctx, event, "bench:"+strconv.Itoa(i), booking.Request{Seats: []string{"S" + strconv.Itoa(i)}})
		holds[i] = h
		return err
	}); err != nil {
		return rows, fmt.Errorf("confirm setup: %w", err)
	}
	toConfirm, toRelease := holds[:n], holds[n:]
	// The confirm figure, then its retries over the orders it made (each
	// index is written by one worker only).
	made := make([]bool, n)
	var ci atomic.Int64
	ops, err := throughput(ctx, d, func(ctx context.Context) error {
		i := int(ci.Add(1)) - 1
		if i >= n {
			return errDone
		}
		h := toConfirm[i]
		o, err := eng.Confirm(ctx, event, h.Session, h.Token, "pi_"+strconv.FormatInt(h.Token, 10))
		if err == nil && o.Replayed {
			err = fmt.Errorf("order %s replayed on its first confirm", o.Order)
		}
		made[i] = err == nil
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("confirm: %w", err)
	}
	add("confirm (idempotency key)", ops)
	var orders []booking.Hold
	for i, ok := range made {
		if ok {
			orders = append(orders, toConfirm[i])
		}
	}
	if len(orders) == n {
		logf("booking confirm: all %d prepared holds confirmed within %s", n, d)
	}
	var oi atomic.Int64
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		i := int(oi.Add(1)) - 1
		if i >= len(orders) {
			return errDone
		}
		h := orders[i]
		o, err := eng.Confirm(ctx, event, h.Session, h.Token, "pi_"+strconv.FormatInt(h.Token, 10))
		if err == nil && !o.Replayed {
			err = fmt.Errorf("order %s: a retried confirm made a new order", o.Order)
		}
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("confirm retried: %w", err)
	}
	add("confirm retried (same key: same order)", ops)
	var ri atomic.Int64
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		i := int(ri.Add(1)) - 1
		if i >= n {
			return errDone
		}
		h := toRelease[i]
		return eng.Release(ctx, event, h.Session, h.Token)
	})
	if err != nil {
		return rows, fmt.Errorf("release: %w", err)
	}
	add("release", ops)
	return rows, nil
}

// benchHolds runs Hold calls from workers goroutines for d on an event of
// the given seats and returns holds per second (granted or refused) and the
// share granted.
func benchHolds(ctx context.Context, rdb booking.Scripter, d time.Duration, seats int, pick func() string) (float64, float64, error) {
	var tick atomic.Int64
	base := time.Now().Truncate(time.Second)
	clock := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	eng := booking.New(rdb, booking.WithClock(clock))
	event := "bench-hold-" + strconv.Itoa(seats)
	if err := eng.Define(ctx, event, booking.Inventory{Seats: seatNames(seats), HoldTTL: time.Second, SessionLimit: 1}); err != nil {
		return 0, 0, err
	}
	var sessions, calls, held atomic.Int64
	ops, err := throughput(ctx, d, func(ctx context.Context) error {
		s := "room:" + strconv.FormatInt(sessions.Add(1), 10)
		_, err := eng.Hold(ctx, event, s, booking.Request{Seats: []string{pick()}})
		calls.Add(1)
		switch {
		case err == nil:
			held.Add(1)
		case errors.Is(err, booking.ErrSeatTaken):
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return ops, float64(held.Load()) / float64(max(calls.Load(), 1)), nil
}

// seatNames is S0 … S(n-1).
func seatNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "S" + strconv.Itoa(i)
	}
	return out
}
