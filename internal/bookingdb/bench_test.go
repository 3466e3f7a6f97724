package bookingdb_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// The hold benchmarks and the raw GET share one client (one connection pool)
// and one parallelism, so their ops/s compare directly:
//
//	go test -run '^$' -bench . ./internal/booking/
// (redistest.BenchClient, redistest.ServerCost).

// The floor: a GET of one key.
func BenchmarkRawGET(b *testing.B) { redistest.BenchRawGET(b) }

// benchHold runs Hold calls by distinct sessions, each for one seat that
// pick chooses, in a steady state: the engine's clock moves 1 ms per call and
// holds last one second, so about 1,000 holds are live and the scripts expire
// the overdue ones lazily, as in a sale. It reports held/op, the share of calls
// that got their seat (the rest are refused: taken).
func benchHold(b *testing.B, n int, pick func(r *rand.Rand) string) {
	rdb := redistest.BenchClient(b)
	ctx := context.Background()
	var tick atomic.Int64
	base := time.Now().Truncate(time.Second)
	clock := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	eng := bookingdb.New(rdb, bookingdb.WithClock(clock))
	event := redistest.Room(b)
	if err := eng.Define(ctx, event, booking.Inventory{Seats: seats(n), HoldTTL: time.Second, SessionLimit: 1}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Del(context.Background(), bookingdb.KeysFor(event).List()...) })
	var sessions, held atomic.Int64
	cost := redistest.ServerCost(b, "evalsha")
	b.SetParallelism(redistest.BenchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(uint64(sessions.Add(1)), 1))
		for pb.Next() {
			s := "room:" + strconv.FormatInt(sessions.Add(1), 10)
			_, err := eng.Hold(ctx, event, s, booking.Request{Seats: []string{pick(r)}})
			switch {
			case err == nil:
				held.Add(1)
			case errors.Is(err, booking.ErrSeatTaken):
			default:
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	cost()
	b.ReportMetric(float64(held.Load())/float64(b.N), "held/op")
}

// Everyone wants the same seat: one hold per second wins, every other call is
// refused. The contended path.
func BenchmarkHoldHotSeat(b *testing.B) {
	benchHold(b, 1, func(*rand.Rand) string { return "S0" })
}

// Sessions spread over 10,000 seats: most calls hold their seat.
func BenchmarkHold10kSeats(b *testing.B) {
	benchHold(b, 10_000, func(r *rand.Rand) string { return "S" + strconv.Itoa(r.IntN(10_000)) })
}

// BenchmarkRebuild5000 is one full Rebuild call after a total loss: 5,000
// orders of one seat each (booking.MaxRebuildOrders) into an event of 5,000
// seats closed to holds. The cost of bringing a sold-out venue back is a
// handful of these; compare with BenchmarkRawGET.
func BenchmarkRebuild5000(b *testing.B) {
	rdb := redistest.BenchClient(b)
	ctx := context.Background()
	defs := &memDefs{defs: map[string]booking.Inventory{}}
	eng := bookingdb.New(rdb, bookingdb.WithDefinitions(defs))
	const n = booking.MaxRebuildOrders
	orders := make([]booking.SoldOrder, n)
	for i := range orders {
		orders[i] = booking.SoldOrder{Order: strconv.FormatInt(int64(booking.MinOrderID)+int64(i), 10), Seats: []string{"S" + strconv.Itoa(i)}}
	}
	for b.Loop() {
		b.StopTimer()
		event := redistest.Room(b)
		if err := eng.Define(ctx, event, booking.Inventory{Seats: seats(n), SessionLimit: 1}); err != nil {
			b.Fatal(err)
		}
		lose(b, rdb, event)
		if _, err := eng.View(ctx, event); err != nil { // restored, closed to holds
			b.Fatal(err)
		}
		b.StartTimer()
		if r, err := eng.Rebuild(ctx, event, orders, true); err != nil || r.Added != n {
			b.Fatalf("Rebuild = %+v, %v", r, err)
		}
		b.StopTimer()
		lose(b, rdb, event)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/order")
}
