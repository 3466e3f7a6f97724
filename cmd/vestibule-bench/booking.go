package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// benchBooking measures the booking kit's engine (internal/booking, the
// booking_*.lua scripts; the calls the booking function makes) against raw
// GET with the same client pool, on a redis-server of its own: holds on one
// hot seat and spread over 10,000 seats, confirm with an idempotency key, the
// same confirm retried, release, the release of a session's holds when it
// ends (one seat and four), and extend (and the same extension retried).
// Each figure's baseline is a GET measured
// in slices alternating with the figure's own (paired), so that on a loaded
// machine both see the same load. See docs/BENCHMARKS.md, "The booking kit".
func benchBooking(ctx context.Context, d time.Duration) ([]Row, error) {
	rdb, stop, err := benchRedis(workers)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := rdb.Set(ctx, "bench:get", "x", 0).Err(); err != nil {
		return nil, err
	}
	get := func(ctx context.Context) error { return rdb.Get(ctx, "bench:get").Err() }
	var rows []Row
	var measureCmds func(string, func(context.Context) error, ...string) error
	measure := func(name string, op func(context.Context) error) error {
		return measureCmds(name, op, "evalsha")
	}
	// measureCmds: each call of op sends each of cmds once (besides the
	// GETs of the baseline); the Redis µs per call is their sum.
	measureCmds = func(name string, op func(context.Context) error, cmds ...string) error {
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
		ops, base, err := paired(ctx, d, get, op)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		// What a loaded client machine does not blur: the Redis CPU per call.
		us, err := serverMicros(ctx, rdb, append([]string{"get"}, cmds...)...)
		if err != nil {
			return err
		}
		var sum float64
		parts := make([]string, len(cmds))
		for i, c := range cmds {
			sum += us[i+1]
			parts[i] = fmt.Sprintf("%s %.1f", c, us[i+1])
		}
		logf("booking %s: %.0f ops/s, raw GET beside it %.0f ops/s; in Redis %.1f µs per call (%s), GET %.2f µs",
			name, ops, base, sum, strings.Join(parts, " + "), us[0])
		rows = append(rows, row("booking "+name, ops, "ops/s", base, nil))
		return nil
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
		op, held, err := holdOp(ctx, rdb, c.seats, c.pick)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", c.name, err)
		}
		if err := measure(c.name, op); err != nil {
			return rows, err
		}
		logf("booking %s: %.1f %% of calls held their seat (the rest refused: taken)", c.name, held()*100)
	}

	// Confirm and release: holds made first (one seat each, real clock, an
	// hour's TTL), then each confirmed once with its own idempotency key, the
	// same confirms retried (the replay path), and the other holds released.
	eng := bookingdb.New(rdb)
	const event = "bench-orders"
	rate, err := throughput(ctx, d/4, get)
	if err != nil {
		return rows, err
	}
	n := max(min(int(rate*d.Seconds()/2), booking.MaxSeats/2), 10_000)
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
		// Not "bench:<i>": a name of the room:seq form is taken for a room
		// session, whose confirm first reads that room's active set and ends
		// the session there (it has none): two more scripts per confirm.
		h, err := eng.Hold(ctx, event, "bench-"+strconv.Itoa(i), booking.Request{Seats: []string{"S" + strconv.Itoa(i)}})
		holds[i] = h
		return err
	}); err != nil {
		return rows, fmt.Errorf("confirm setup: %w", err)
	}
	toConfirm, toRelease := holds[:n], holds[n:]
	// Each index is taken, and made written, by one worker only.
	made := make([]bool, n)
	var ci atomic.Int64
	if err := measure("confirm (idempotency key)", func(ctx context.Context) error {
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
	}); err != nil {
		return rows, err
	}
	var orders []booking.Hold
	for i, ok := range made {
		if ok {
			orders = append(orders, toConfirm[i])
		}
	}
	if len(orders) == n {
		logf("booking confirm: all %d prepared holds were confirmed; the figure covers them only", n)
	}
	var oi atomic.Int64
	if err := measure("confirm retried (same key: same order)", func(ctx context.Context) error {
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
	}); err != nil {
		return rows, err
	}
	var ri atomic.Int64
	if err := measure("release", func(ctx context.Context) error {
		i := int(ri.Add(1)) - 1
		if i >= n {
			return errDone
		}
		h := toRelease[i]
		return eng.Release(ctx, event, h.Session, h.Token)
	}); err != nil {
		return rows, err
	}

	// A session's end: what the API's complete (and the gate's leave) does
	// after the room engine's complete, Handler.endHolds → EndSession — the
	// room's set of events (SMEMBERS), then booking_end.lua on its one event,
	// which drops the session's hold of 1 or 4 seats and advances the fence.
	for _, c := range []struct {
		name string
		each int
	}{{"release on session end (1 seat)", 1}, {"release on session end (4 seats)", 4}} {
		name, each := c.name, c.each
		n := max(min(int(rate*d.Seconds()/2), booking.MaxSeats/each), 10_000/each)
		holds, err := sessionHolds(ctx, rdb, "bench-end-"+strconv.Itoa(each), n, each, 0)
		if err != nil {
			return rows, fmt.Errorf("%s setup: %w", name, err)
		}
		var ei atomic.Int64
		if err := measureCmds(name, func(ctx context.Context) error {
			i := int(ei.Add(1)) - 1
			if i >= len(holds) {
				return errDone
			}
			h := holds[i]
			dropped, err := eng.EndSession(ctx, h.Event, int64(i+1))
			if err == nil && dropped != 1 {
				err = fmt.Errorf("session %s: %d holds dropped, want 1", h.Session, dropped)
			}
			return err
		}, "evalsha", "smembers"); err != nil {
			return rows, err
		}
	}

	// Extend: holds of room sessions (one seat each, TTL 1 h, up to 2
	// extensions), each extended once (its extension 1), then the same
	// extension again: the idempotent replay.
	holds, err = sessionHolds(ctx, rdb, "bench-extend", n, 1, 2)
	if err != nil {
		return rows, fmt.Errorf("extend setup: %w", err)
	}
	extended := make([]bool, len(holds))
	var xi atomic.Int64
	if err := measure("extend", func(ctx context.Context) error {
		i := int(xi.Add(1)) - 1
		if i >= len(holds) {
			return errDone
		}
		h := holds[i]
		x, err := eng.Extend(ctx, h.Event, h.Session, h.Token, 1)
		if err == nil && (x.Replayed || !x.ExpiresAt.After(h.ExpiresAt)) {
			err = fmt.Errorf("hold %d: extension 1 replayed or no later (%s, was %s)", h.Token, x.ExpiresAt, h.ExpiresAt)
		}
		extended[i] = err == nil
		return err
	}); err != nil {
		return rows, err
	}
	var again []booking.Hold
	for i, ok := range extended {
		if ok {
			again = append(again, holds[i])
		}
	}
	var ai atomic.Int64
	if err := measure("extend retried (same number: replay)", func(ctx context.Context) error {
		i := int(ai.Add(1)) - 1
		if i >= len(again) {
			return errDone
		}
		h := again[i]
		x, err := eng.Extend(ctx, h.Event, h.Session, h.Token, 1)
		if err == nil && !x.Replayed {
			err = fmt.Errorf("hold %d: a retried extension extended again", h.Token)
		}
		return err
	}); err != nil {
		return rows, err
	}
	return rows, nil
}

// sessionHolds defines an event named after its room (the recommended
// layout: the scripts check the session in the same slot) with n × each
// seats, puts the room sessions 1 … n in the room's active set as consume
// does (ending in an hour), and makes session i's hold of seats i×each …
// (real clock, TTL 1 h, up to maxExt extensions).
func sessionHolds(ctx context.Context, rdb redis.UniversalClient, event string, n, each int, maxExt int64) ([]booking.Hold, error) {
	eng := bookingdb.New(rdb)
	if err := eng.Define(ctx, event, booking.Inventory{Seats: seatNames(n * each), HoldTTL: time.Hour,
		SessionLimit: int64(each), MaxHoldExtensions: maxExt}); err != nil {
		return nil, err
	}
	ends := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	active := roomdb.KeysFor(event).Active
	for lo := 0; lo < n; lo += 1000 {
		zs := make([]redis.Z, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			zs = append(zs, redis.Z{Score: float64(ends.UnixMilli()), Member: strconv.Itoa(i + 1)})
		}
		if err := rdb.ZAdd(ctx, active, zs...).Err(); err != nil {
			return nil, err
		}
	}
	holds := make([]booking.Hold, n)
	var hi atomic.Int64
	if _, err := throughput(ctx, time.Hour, func(ctx context.Context) error {
		i := int(hi.Add(1)) - 1
		if i >= n {
			return errDone
		}
		seats := make([]string, each)
		for k := range seats {
			seats[k] = "S" + strconv.Itoa(i*each+k)
		}
		h, err := eng.HoldSession(ctx, event, booking.RoomSession{Room: event, Seq: int64(i + 1), Ends: ends},
			booking.Request{Seats: seats})
		holds[i] = h
		return err
	}); err != nil {
		return nil, err
	}
	return holds, nil
}

// pairSlices is how many times a figure and its baseline take turns.
const pairSlices = 8

// paired measures op and base (the raw GET) for d each, in pairSlices
// alternating slices (base first), and returns both in operations per
// second. When op runs out of prepared work (errDone), the base stops after
// the same number of slices.
func paired(ctx context.Context, d time.Duration, base, op func(context.Context) error) (float64, float64, error) {
	var done atomic.Bool
	wrapped := func(ctx context.Context) error {
		err := op(ctx)
		if errors.Is(err, errDone) {
			done.Store(true)
		}
		return err
	}
	var opN, opT, baseN, baseT float64
	for range pairSlices {
		for _, m := range []struct {
			f    func(context.Context) error
			n, t *float64
		}{{base, &baseN, &baseT}, {wrapped, &opN, &opT}} {
			start := time.Now()
			rate, err := throughput(ctx, d/pairSlices, m.f)
			if err != nil {
				return 0, 0, err
			}
			el := time.Since(start).Seconds()
			*m.n += rate * el
			*m.t += el
		}
		if done.Load() {
			break
		}
	}
	return opN / opT, baseN / baseT, nil
}

// holdOp defines an event of the given seats and returns a Hold call on it
// for a new session each time, for a seat pick chooses, and the share of
// calls so far that held their seat. The engine's clock moves 1 ms per call;
// holds last one second.
func holdOp(ctx context.Context, rdb redis.UniversalClient, seats int, pick func() string) (func(context.Context) error, func() float64, error) {
	var tick atomic.Int64
	base := time.Now().Truncate(time.Second)
	clock := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	eng := bookingdb.New(rdb, bookingdb.WithClock(clock))
	event := "bench-hold-" + strconv.Itoa(seats)
	if err := eng.Define(ctx, event, booking.Inventory{Seats: seatNames(seats), HoldTTL: time.Second, SessionLimit: 1}); err != nil {
		return nil, nil, err
	}
	var sessions, held atomic.Int64
	op := func(ctx context.Context) error {
		s := "room:" + strconv.FormatInt(sessions.Add(1), 10)
		_, err := eng.Hold(ctx, event, s, booking.Request{Seats: []string{pick()}})
		switch {
		case err == nil:
			held.Add(1)
		case errors.Is(err, booking.ErrSeatTaken):
		default:
			return err
		}
		return nil
	}
	share := func() float64 { return float64(held.Load()) / float64(max(sessions.Load(), 1)) }
	return op, share, nil
}

// serverMicros reads Redis's microseconds per call of each command since the
// last CONFIG RESETSTAT (INFO commandstats; 0 for a command not called).
func serverMicros(ctx context.Context, rdb redis.UniversalClient, cmds ...string) ([]float64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(cmds))
	for _, line := range strings.Split(info, "\n") {
		for i, c := range cmds {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+c+":")
			if !ok {
				continue
			}
			for _, kv := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					out[i], _ = strconv.ParseFloat(v, 64)
				}
			}
		}
	}
	return out, nil
}

// seatNames is S0 … S(n-1).
func seatNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "S" + strconv.Itoa(i)
	}
	return out
}
