package bookingdb_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// The report's orders: a room's orders counted by the minute they were
// confirmed, and the cancelled ones by the minute of the cancel.
func TestOrdersByMinute(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(10), SessionLimit: 10})
		t0 := e.clk.Now().Truncate(time.Minute).Add(10 * time.Second)
		var orders []booking.OrderEvent
		for i, d := range []time.Duration{0, 20 * time.Second, 70 * time.Second, 71 * time.Second, 72 * time.Second} {
			e.clk.Set(t0.Add(d))
			h := e.hold("s", booking.Request{Seats: seats(10)[i : i+1]})
			orders = append(orders, e.confirm(h, "k"+h.Session+string(rune('a'+i))))
		}
		e.clk.Set(t0.Add(3 * time.Minute))
		if _, err := e.eng.Cancel(e.ctx, e.event, orders[0].Order, "refund"); err != nil {
			t.Fatal(err)
		}
		got, err := e.eng.OrdersByMinute(e.ctx, e.event) // the event is its own room
		if err != nil {
			t.Fatal(err)
		}
		m := t0.Truncate(time.Minute)
		type row struct {
			at              time.Time
			confirmed, canc int64
		}
		want := []row{{m, 2, 0}, {m.Add(time.Minute), 3, 0}, {m.Add(3 * time.Minute), 0, 1}}
		if len(got) != len(want) {
			t.Fatalf("%d minutes %+v, want %d", len(got), got, len(want))
		}
		for i, w := range want {
			if g := (row{got[i].Minute, got[i].Confirmed, got[i].Cancelled}); g != w {
				t.Errorf("minute %d: %+v, want %+v", i, g, w)
			}
		}
		if none, err := e.eng.OrdersByMinute(e.ctx, "no-events-here"); err != nil || len(none) != 0 {
			t.Errorf("a room without events: %v %v", none, err)
		}
	})
}
