package bookingdb_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// A region failover's standby kit lost the old region's last second: seats
// the origin sold there show available, held or sold to someone else. Close
// shuts the event to new holds while the holds made before it can still be
// confirmed, extended and released; Rebuild then puts back the origin's record
// over what the event has of its own, and reopens it:
//   - an order the kit has already is kept (S0);
//   - the hold an order was confirmed from (the confirm's write lost) becomes
//     that order, with the hold's session, its units not taken twice (S1, ga);
//   - a hold of another session on a seat the origin sold is given up, and
//     its confirm is refused as stale (S2);
//   - a hold the origin does not know stays and is confirmed while closed (S3);
//   - an available seat the origin sold is sold (S4), and units too;
//   - a seat the kit sold to another order refuses the call, until that order
//     is cancelled (the origin's guard refused it; its compensation cancels).
//
// Every token after it is above every recorded one.
func TestRebuildAfterCloseSellsNothingTwice(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(7), Stock: map[string]int64{"ga": 5}, SessionLimit: 10,
			HoldTTL: time.Minute, MaxHoldExtensions: 1})
		ctx, ev, eng := e.ctx, e.event, e.eng
		id := func(tok int64) string { return strconv.FormatInt(tok, 10) }

		o0 := e.confirm(e.hold("v:0", booking.Request{Seats: []string{"S0"}}), "k0")
		h1 := e.hold("v:1", booking.Request{Seats: []string{"S1"}, Units: map[string]int64{"ga": 1}})
		h2 := e.hold("v:2", booking.Request{Seats: []string{"S2"}, Units: map[string]int64{"ga": 1}})
		h3 := e.hold("v:3", booking.Request{Seats: []string{"S3"}})
		h5 := e.hold("v:5", booking.Request{Seats: []string{"S5"}})
		// What the origin recorded, the old region's lost second included:
		// o0; h1 confirmed; S2 released by v:2 and sold to v:9 (an order this
		// kit never saw); S4 sold; two units.
		e.clk.Advance(time.Second)
		lostS2, lostS4, lostGA := id(h5.Token+1), id(h5.Token+2), id(h5.Token+3)
		record := []booking.SoldOrder{{Order: o0.Order, Seats: []string{"S0"}},
			{Order: id(h1.Token), Seats: []string{"S1"}, Units: map[string]int64{"ga": 1}},
			{Order: lostS2, Seats: []string{"S2"}}, {Order: lostS4, Seats: []string{"S4"}},
			{Order: lostGA, Units: map[string]int64{"ga": 2}}}

		c, err := eng.Close(ctx, ev)
		if err != nil || c != (booking.Closed{Now: true, Holds: 4, Live: 1}) {
			t.Fatalf("Close = %+v, %v; want closed now with 4 holds and 1 order", c, err)
		}
		if c, err := eng.Close(ctx, ev); err != nil || c.Now {
			t.Fatalf("Close of a closed event = %+v, %v; want nothing done", c, err)
		}
		if _, err := eng.Close(ctx, "no-such-event"); !errors.Is(err, booking.ErrUnknownEvent) {
			t.Fatalf("Close of an unknown event: %v", err)
		}
		v := e.view()
		if !v.Restore.Recovering || !v.Restore.ClosedAt.Equal(e.clk.Now().UTC().Truncate(time.Millisecond)) || !v.Restore.RestoredAt.IsZero() {
			t.Fatalf("the view of a closed event: %+v", v.Restore)
		}
		if _, err := eng.Hold(ctx, ev, "v:6", booking.Request{Seats: []string{"S6"}}); !errors.Is(err, booking.ErrRecovering) {
			t.Fatalf("a hold while closed: %v, want ErrRecovering", err)
		}
		// The holds made before the close still work.
		if _, err := eng.Extend(ctx, ev, "v:3", h3.Token, 1); err != nil {
			t.Fatalf("extend while closed: %v", err)
		}
		o3 := e.confirm(h3, "k3")
		if err := eng.Release(ctx, ev, "v:5", h5.Token); err != nil {
			t.Fatalf("release while closed: %v", err)
		}

		// The kit sold S6 to an order the origin's guard refused (the origin's
		// record has S6 as another order's): the rebuild refuses until the
		// order is cancelled.
		if _, err := eng.Rebuild(ctx, ev, nil, true); err != nil {
			t.Fatal(err)
		}
		o6 := e.confirm(e.hold("v:6", booking.Request{Seats: []string{"S6"}}), "k6")
		if _, err := eng.Close(ctx, ev); err != nil {
			t.Fatal(err)
		}
		lostS6 := id(o6.FencingToken - 1)
		record = append(record, booking.SoldOrder{Order: lostS6, Seats: []string{"S6"}})
		var taken *booking.TakenError
		if _, err := eng.Rebuild(ctx, ev, record, true); !errors.As(err, &taken) || taken.Seats[0] != "S6" {
			t.Fatalf("a rebuild over a seat the kit sold to another order: %v, want S6 taken", err)
		}
		if v := e.view(); !v.Restore.Recovering || v.Seats["S2"] != booking.SeatHeld || v.Seats["S4"] != booking.SeatAvailable {
			t.Fatalf("a refused rebuild changed the event: %+v %v", v.Restore, v.Seats)
		}
		if _, err := eng.Cancel(ctx, ev, o6.Order, "seat_sold_before"); err != nil {
			t.Fatal(err)
		}

		r, err := eng.Rebuild(ctx, ev, record, true)
		want := booking.Rebuilt{Added: 5, Kept: 1, Released: 1, Converted: 1}
		if err != nil || r != want {
			t.Fatalf("Rebuild = %+v, %v; want %+v", r, err, want)
		}
		v = e.view()
		for _, s := range []string{"S0", "S1", "S2", "S3", "S4", "S6"} {
			if v.Seats[s] != booking.SeatSold {
				t.Errorf("seat %s after the rebuild: %s, want sold", s, v.Seats[s])
			}
		}
		if v.Seats["S5"] != booking.SeatAvailable || v.Stock["ga"] != 2 || v.Live != 7 || v.Restore.Recovering {
			t.Fatalf("after the rebuild: seats %v, stock %v, live %d, %+v; want S5 available, 2 units, 7 orders, open",
				v.Seats, v.Stock, v.Live, v.Restore)
		}
		e.confirmFails("v:2", h2.Token, "k2", booking.ErrStaleToken, "the hold the origin's record overruled")
		e.confirmFails("v:1", h1.Token, "k1", booking.ErrAlreadyConfirmed, "the hold that became its order")
		orders, _, err := eng.Orders(ctx, ev, "0")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range orders {
			if o.Order == id(h1.Token) && o.Session != "v:1" {
				t.Errorf("the order of hold %d has session %q, want the hold's v:1", h1.Token, o.Session)
			}
			if o.Order == o3.Order && o.Type != booking.OrderConfirmed {
				t.Errorf("the order confirmed while closed: %+v", o)
			}
		}
		// v:1 bought two items; v:2's hold left it nothing.
		if got, _ := rdb.HGet(ctx, e.keys.Sessions, "v:1").Int64(); got != 2 {
			t.Errorf("v:1 counts %d items, want 2", got)
		}
		if n, _ := rdb.HExists(ctx, e.keys.Sessions, "v:2").Result(); n {
			t.Errorf("v:2 still counts items after its hold was given up")
		}
		// A converted order cancels as any order: its seat and units return.
		if _, err := eng.Cancel(ctx, ev, id(h1.Token), "refund"); err != nil {
			t.Fatal(err)
		}
		if v := e.view(); v.Seats["S1"] != booking.SeatAvailable || v.Stock["ga"] != 3 {
			t.Fatalf("after cancelling the converted order: %v %v", v.Seats, v.Stock)
		}
		h := e.hold("v:7", booking.Request{Seats: []string{"S5"}})
		for _, o := range record {
			if n, _ := strconv.ParseInt(o.Order, 10, 64); h.Token <= n {
				t.Fatalf("a hold after the rebuild has token %d, not above recorded order %s", h.Token, o.Order)
			}
		}
	})
}
