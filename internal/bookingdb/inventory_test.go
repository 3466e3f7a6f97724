package bookingdb_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// Every change of the inventory writes one inventory event to the outbox,
// in the script that made it, numbered 1, 2, 3… with no gap: hold, extend,
// release, expire (lazily and by the sweep), end with the session, confirm,
// cancel. Ack removes them like order events.
func TestInventoryEvents(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e, roomID := roomEnv(t, rdb, true, booking.Inventory{Seats: seats(4), Stock: map[string]int64{"ga": 5}, SessionLimit: 10,
			HoldTTL: time.Minute, MaxHoldExtensions: 1})
		a := e.hold("r:1", booking.Request{Seats: []string{"S0"}, Units: map[string]int64{"ga": 2}}) // 1 held
		e.clk.Advance(time.Second)
		if _, err := e.eng.Extend(e.ctx, e.event, "r:1", a.Token, 1); err != nil { // 2 extended
			t.Fatal(err)
		}
		if _, err := e.eng.Extend(e.ctx, e.event, "r:1", a.Token, 1); err != nil { // a replay: nothing
			t.Fatal(err)
		}
		o := e.confirm(a, "k1")                                                    // 3 confirmed
		if _, err := e.eng.Cancel(e.ctx, e.event, o.Order, "refund"); err != nil { // 4 cancelled
			t.Fatal(err)
		}
		b := e.hold("r:2", booking.Request{Seats: []string{"S1"}})            // 5 held
		if err := e.eng.Release(e.ctx, e.event, "r:2", b.Token); err != nil { // 6 released
			t.Fatal(err)
		}
		e.hold("r:3", booking.Request{Seats: []string{"S2"}}) // 7 held
		e.clk.Advance(time.Minute)
		if n, _, err := e.eng.Sweep(e.ctx, e.event, 10); err != nil || n != 1 { // 8 expired
			t.Fatalf("Sweep = %d, %v", n, err)
		}
		s := e.activate(roomID, 9, e.clk.Now().Add(time.Hour))
		if _, err := e.eng.HoldSession(e.ctx, e.event, s, booking.Request{Seats: []string{"S3"}}); err != nil { // 9 held
			t.Fatal(err)
		}
		if _, err := e.eng.EndSession(e.ctx, roomID, 9); err != nil { // 10 ended
			t.Fatal(err)
		}
		p, err := e.eng.Outbox(e.ctx, e.event, 100, e.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got []booking.InventoryEvent
		var ids []string
		for _, x := range p {
			if x.Inventory != nil {
				got, ids = append(got, *x.Inventory), append(ids, x.ID)
			}
		}
		want := []string{booking.InventoryHeld, booking.InventoryExtended, booking.InventoryConfirmed, booking.InventoryCancelled,
			booking.InventoryHeld, booking.InventoryReleased, booking.InventoryHeld, booking.InventoryExpired,
			booking.InventoryHeld, booking.InventoryEnded}
		if len(got) != len(want) {
			t.Fatalf("%d inventory events, want %d: %+v", len(got), len(want), got)
		}
		for i, iv := range got {
			if iv.Type != want[i] || iv.Sequence != int64(i+1) || iv.Event != e.event || iv.Epoch == 0 || iv.At.IsZero() {
				t.Errorf("event %d: %+v, want %s #%d", i, iv, want[i], i+1)
			}
		}
		if h := got[0]; h.Hold == "" || h.FencingToken != a.Token || h.Session != "r:1" || !slices.Equal(h.Seats, []string{"S0"}) ||
			h.Units["ga"] != 2 || h.ExpiresAt == nil || !h.ExpiresAt.Equal(a.ExpiresAt) {
			t.Errorf("held: %+v", h)
		}
		if x := got[1]; x.ExpiresAt == nil || !x.ExpiresAt.After(a.ExpiresAt) {
			t.Errorf("extended: %+v", x)
		}
		if c := got[3]; c.Units["ga"] != 2 || c.ExpiresAt != nil || c.Session != "r:1" {
			t.Errorf("cancelled: %+v", c)
		}
		if err := e.eng.Ack(e.ctx, e.event, ids...); err != nil {
			t.Fatal(err)
		}
		p, _ = e.eng.Outbox(e.ctx, e.event, 100, e.clk.Now())
		for _, x := range p {
			if x.Inventory != nil {
				t.Fatalf("inventory event left after Ack: %+v", x)
			}
		}
	})
}
