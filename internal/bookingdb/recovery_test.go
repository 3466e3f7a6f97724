package bookingdb_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/lua"
)

// A sale across a total loss sells nothing twice: the event comes back
// closed to holds (on the first call that finds it missing, or on a Define of
// an event the store has, as a restart on an empty Redis does), Rebuild puts
// back the origin's orders (retried: nothing twice) and reopens it, and then
// a sold seat is taken, the sold units are out of the stock, new tokens are
// above every recorded one, and a cancel of a rebuilt order returns its items.
func TestSaleAcrossTotalLossSellsNothingTwice(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		clk := testkit.EngineClock()
		defs := &memDefs{defs: map[string]booking.Inventory{}}
		var logs testkit.Buffer
		eng := bookingdb.New(rdb, bookingdb.WithClock(clk.Now), bookingdb.WithDefinitions(defs),
			bookingdb.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		ev := redistest.Room(t)
		inv := booking.Inventory{Seats: seats(3), Stock: map[string]int64{"ga": 3}, SessionLimit: 10, HoldTTL: time.Minute}
		if err := eng.Define(ctx, ev, inv); err != nil {
			t.Fatal(err)
		}
		if v, err := eng.View(ctx, ev); err != nil || v.Restore != (booking.Restore{}) {
			t.Fatalf("a new event: %+v, %v", v.Restore, err)
		}
		buy := func(req booking.Request) booking.OrderEvent {
			t.Helper()
			h, err := eng.Hold(ctx, ev, "v:1", req)
			if err != nil {
				t.Fatal(err)
			}
			o, err := eng.Confirm(ctx, ev, "v:1", h.Token, "k"+strconv.FormatInt(h.Token, 10))
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		o1 := buy(booking.Request{Seats: []string{"S1"}, Units: map[string]int64{"ga": 2}})
		o2 := buy(booking.Request{Units: map[string]int64{"ga": 1}})
		// What the origin recorded: both orders.
		sold := []booking.SoldOrder{{Order: o1.Order, Seats: o1.Seats, Units: o1.Units}, {Order: o2.Order, Units: o2.Units}}

		for round, loss := range []func(){
			func() { lose(t, rdb, ev) }, // the first call restores it
			func() { // a restart on an empty Redis: the demo defines its event again at start
				lose(t, rdb, ev)
				if err := eng.Define(ctx, ev, inv); err != nil {
					t.Fatal(err)
				}
			},
		} {
			clk.Advance(time.Second)
			loss()
			_, err := eng.Hold(ctx, ev, "v:2", booking.Request{Seats: []string{"S1"}})
			if !errors.Is(err, booking.ErrRecovering) {
				t.Fatalf("round %d: a hold after the loss: %v, want ErrRecovering", round, err)
			}
			v, err := eng.View(ctx, ev)
			if err != nil || !v.Restore.Recovering || !v.Restore.RestoredAt.Equal(clk.Now().UTC().Truncate(time.Millisecond)) {
				t.Fatalf("round %d: the view after the loss: %+v, %v", round, v.Restore, err)
			}
			if _, err := eng.Rebuild(ctx, ev, sold[:1], false); err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Hold(ctx, ev, "v:2", booking.Request{Seats: []string{"S2"}}); !errors.Is(err, booking.ErrRecovering) {
				t.Fatalf("round %d: a hold while half rebuilt: %v", round, err)
			}
			r, err := eng.Rebuild(ctx, ev, sold, true) // o1 again: kept, not added twice
			if err != nil || r != (booking.Rebuilt{Added: 1, Kept: 1}) {
				t.Fatalf("round %d: Rebuild = %+v, %v", round, r, err)
			}
			if _, err := eng.Rebuild(ctx, ev, sold, true); !errors.Is(err, booking.ErrNotRecovering) {
				t.Fatalf("round %d: Rebuild of an open event: %v", round, err)
			}
			if _, err := eng.Hold(ctx, ev, "v:2", booking.Request{Seats: []string{"S1"}}); !errors.Is(err, booking.ErrSeatTaken) {
				t.Fatalf("round %d: S1 after the rebuild: %v, want taken", round, err)
			}
			if _, err := eng.Hold(ctx, ev, "v:2", booking.Request{Units: map[string]int64{"ga": 1}}); !errors.Is(err, booking.ErrSoldOut) {
				t.Fatalf("round %d: a unit of 3 sold 3: %v, want sold out", round, err)
			}
			h, err := eng.Hold(ctx, ev, "v:2", booking.Request{Seats: []string{"S2"}})
			if err != nil || h.Token <= o2.FencingToken || h.Token <= o1.FencingToken {
				t.Fatalf("round %d: a new hold %+v, %v: its token must be above every recorded one", round, h, err)
			}
			if err := eng.Release(ctx, ev, "v:2", h.Token); err != nil {
				t.Fatal(err)
			}
			v, err = eng.View(ctx, ev)
			if err != nil || v.Restore.Recovering || v.Restore.Rebuilt != 2 || v.Restore.ReopenedAt.IsZero() ||
				v.Seats["S1"] != booking.SeatSold || v.Stock["ga"] != 0 || v.Live != 2 {
				t.Fatalf("round %d: the view after the rebuild: %+v %+v, %v", round, v.Restore, v, err)
			}
			// The log says it once each way, naming the event.
			if strings.Count(logs.String(), bookingdb.RestoredClosedMsg) != round+1 || strings.Count(logs.String(), bookingdb.ReopenedMsg) != round+1 ||
				!strings.Contains(logs.String(), `"event":"`+ev+`"`) {
				t.Fatalf("round %d: the log: %s", round, logs.String())
			}
		}
		// A rebuilt order is an order: its cancel returns its items.
		if _, err := eng.Cancel(ctx, ev, o1.Order, "refund"); err != nil {
			t.Fatal(err)
		}
		if v, _ := eng.View(ctx, ev); v.Seats["S1"] != booking.SeatAvailable || v.Stock["ga"] != 2 {
			t.Fatalf("after cancelling a rebuilt order: %+v", v)
		}
	})
}

// Rebuild refuses what cannot be true of an event, all or nothing: a seat in
// two orders, more units than the stock, an unknown seat or sku, a bad order id.
func TestRebuildRefusesWhatCannotBeSold(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		clk := testkit.EngineClock()
		defs := &memDefs{defs: map[string]booking.Inventory{}}
		eng := bookingdb.New(rdb, bookingdb.WithClock(clk.Now), bookingdb.WithDefinitions(defs))
		ev := redistest.Room(t)
		if err := eng.Define(ctx, ev, booking.Inventory{Seats: seats(2), Stock: map[string]int64{"ga": 2}, SessionLimit: 4}); err != nil {
			t.Fatal(err)
		}
		lose(t, rdb, ev)
		// Order ids as the kit issues them: microseconds of a hold's time.
		a, b := orderID(clk.Now().Add(-time.Hour)), orderID(clk.Now().Add(-time.Minute))
		for _, c := range []struct {
			orders []booking.SoldOrder
			want   error
		}{
			{[]booking.SoldOrder{{Order: a, Seats: []string{"S1"}}, {Order: b, Seats: []string{"S1"}}}, booking.ErrSeatTaken},
			{[]booking.SoldOrder{{Order: a, Units: map[string]int64{"ga": 2}}, {Order: b, Units: map[string]int64{"ga": 1}}}, booking.ErrSoldOut},
			{[]booking.SoldOrder{{Order: a, Seats: []string{"S9"}}}, booking.ErrUnknownSeat},
			{[]booking.SoldOrder{{Order: a, Units: map[string]int64{"vip": 1}}}, booking.ErrUnknownSKU},
			{[]booking.SoldOrder{{Order: "0" + a, Seats: []string{"S1"}}}, booking.ErrInvalidRequest},
			{[]booking.SoldOrder{{Order: a, Units: map[string]int64{"ga": -1}}}, booking.ErrInvalidRequest},
			{[]booking.SoldOrder{{Order: a, Seats: []string{"S1"}}, {Order: a, Seats: []string{"S2"}}}, booking.ErrInvalidRequest},
		} {
			if _, err := eng.Rebuild(ctx, ev, c.orders, true); !errors.Is(err, c.want) {
				t.Errorf("Rebuild(%+v) = %v, want %v", c.orders, err, c.want)
			}
		}
		v, err := eng.View(ctx, ev)
		if err != nil || !v.Restore.Recovering || v.Seats["S1"] != booking.SeatAvailable || v.Stock["ga"] != 2 || v.Live != 0 {
			t.Fatalf("after refused rebuilds: %+v, %v", v, err)
		}
	})
}

// orderID is the order id the kit gives a hold made at t: its fencing token,
// t in microseconds.
func orderID(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// TestRebuildRefusesOrderIDsPastWhatALuaNumberCounts: one line of an origin's
// export with an order id of 2^53 raised the fence past what a Lua number
// counts (2^53 + 1 is 2^53), so every later hold got the same token and the
// event was broken for good. Rebuild refuses an id the kit could not have
// issued: past 2^53 − 1, more than a day ahead of the clock, or before 2020
// (another system's order number), in the engine and in its script; the
// event then sells on with tokens that grow.
func TestRebuildRefusesOrderIDsPastWhatALuaNumberCounts(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		clk := testkit.EngineClock()
		defs := &memDefs{defs: map[string]booking.Inventory{}}
		eng := bookingdb.New(rdb, bookingdb.WithClock(clk.Now), bookingdb.WithDefinitions(defs))
		ev := redistest.Room(t)
		if err := eng.Define(ctx, ev, booking.Inventory{Seats: seats(4), SessionLimit: 4}); err != nil {
			t.Fatal(err)
		}
		lose(t, rdb, ev)
		for _, id := range []string{"9007199254740992", "9007199254740993", "18446744073709551615",
			orderID(clk.Now().Add(booking.OrderIDAhead + time.Second)), "42", orderID(time.Date(2019, 12, 31, 23, 59, 0, 0, time.UTC))} {
			if _, err := eng.Rebuild(ctx, ev, []booking.SoldOrder{{Order: id, Seats: []string{"S0"}}}, true); !errors.Is(err, booking.ErrInvalidRequest) {
				t.Errorf("Rebuild of order %s = %v, want ErrInvalidRequest", id, err)
			}
		}
		// The script refuses on its own what its bounds exclude.
		if v, err := eng.View(ctx, ev); err != nil || !v.Restore.Recovering { // brings the event back, closed
			t.Fatalf("view: %+v, %v", v.Restore, err)
		}
		rebuild := lua.NewScript("booking_rebuild.lua", lua.BookingRebuild)
		now := clk.Now()
		for _, id := range []string{"9007199254740992", "1e15", orderID(now.Add(time.Hour))} {
			reply, err := rebuild.Reply(ctx, rdb, bookingdb.KeysFor(ev).List(), now.UnixMilli(), "1", 1,
				int64(booking.MinOrderID), now.UnixMicro(), id, "S0", "")
			if err != nil || len(reply) != 2 || reply[0] != "badorder" {
				t.Errorf("the script's rebuild of order %s: %v, %v; want badorder", id, reply, err)
			}
		}
		if _, err := eng.Rebuild(ctx, ev, []booking.SoldOrder{{Order: orderID(now.Add(time.Minute)), Seats: []string{"S0"}}}, true); err != nil {
			t.Fatalf("an order a minute ahead of the clock (clocks differ): %v", err)
		}
		var last int64
		for i, s := range []string{"S1", "S2", "S3"} {
			h, err := eng.Hold(ctx, ev, "v:"+s, booking.Request{Seats: []string{s}})
			if err != nil {
				t.Fatal(err)
			}
			if h.Token <= last {
				t.Fatalf("hold %d after the rebuild has token %d, not above %d", i, h.Token, last)
			}
			last = h.Token
		}
	})
}
