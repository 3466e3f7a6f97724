package bookingdb_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

func TestDefineValidates(t *testing.T) {
	cases := []struct {
		name string
		inv  booking.Inventory
	}{
		{"empty", booking.Inventory{SessionLimit: 1}},
		{"no limit", booking.Inventory{Seats: []string{"A1"}}},
		{"limit too high", booking.Inventory{Seats: []string{"A1"}, SessionLimit: booking.MaxHoldItems + 1}},
		{"bad seat", booking.Inventory{Seats: []string{"A|1"}, SessionLimit: 1}},
		{"seat twice", booking.Inventory{Seats: []string{"A1", "A1"}, SessionLimit: 1}},
		{"bad sku", booking.Inventory{Stock: map[string]int64{"a=b": 1}, SessionLimit: 1}},
		{"negative stock", booking.Inventory{Stock: map[string]int64{"ga": -1}, SessionLimit: 1}},
		{"ttl too short", booking.Inventory{Seats: []string{"A1"}, SessionLimit: 1, HoldTTL: time.Millisecond}},
		{"ttl too long", booking.Inventory{Seats: []string{"A1"}, SessionLimit: 1, HoldTTL: 2 * time.Hour}},
		{"bad room", booking.Inventory{Room: "a b", Seats: []string{"A1"}, SessionLimit: 1}},
	}
	eng := bookingdb.New(nil) // never reached: validation comes first
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := eng.Define(context.Background(), "ev", tc.inv); !errors.Is(err, booking.ErrInvalidInventory) {
				t.Fatalf("Define = %v, want ErrInvalidInventory", err)
			}
		})
	}
	if err := eng.Define(context.Background(), "bad event!", booking.Inventory{Seats: []string{"A"}, SessionLimit: 1}); !errors.Is(err, booking.ErrInvalidEvent) {
		t.Fatalf("Define(bad id) = %v, want ErrInvalidEvent", err)
	}
}

func TestHoldValidates(t *testing.T) {
	eng := bookingdb.New(nil)
	ctx := context.Background()
	for name, c := range map[string]struct {
		session string
		req     booking.Request
	}{
		"no session":    {"", booking.Request{Seats: []string{"A1"}}},
		"bad session":   {"a b", booking.Request{Seats: []string{"A1"}}},
		"nothing":       {"s", booking.Request{}},
		"seat twice":    {"s", booking.Request{Seats: []string{"A1", "A1"}}},
		"zero units":    {"s", booking.Request{Units: map[string]int64{"ga": 0}}},
		"bad seat name": {"s", booking.Request{Seats: []string{"A,1"}}},
	} {
		if _, err := eng.Hold(ctx, "ev", c.session, c.req); !errors.Is(err, booking.ErrInvalidRequest) {
			t.Errorf("%s: Hold = %v, want ErrInvalidRequest", name, err)
		}
	}
}

func TestUnknownEvent(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		eng := bookingdb.New(rdb)
		ctx := context.Background()
		if _, err := eng.Hold(ctx, "nosuchevent", "s", booking.Request{Seats: []string{"A1"}}); !errors.Is(err, booking.ErrUnknownEvent) {
			t.Errorf("Hold = %v", err)
		}
		if _, err := eng.Confirm(ctx, "nosuchevent", "s", 1, "k"); !errors.Is(err, booking.ErrUnknownEvent) {
			t.Errorf("Confirm = %v", err)
		}
		if err := eng.Release(ctx, "nosuchevent", "s", 1); !errors.Is(err, booking.ErrUnknownEvent) {
			t.Errorf("Release = %v", err)
		}
		if _, err := eng.Cancel(ctx, "nosuchevent", "1", ""); !errors.Is(err, booking.ErrUnknownEvent) {
			t.Errorf("Cancel = %v", err)
		}
		if _, err := eng.View(ctx, "nosuchevent"); !errors.Is(err, booking.ErrUnknownEvent) {
			t.Errorf("View = %v", err)
		}
		if _, _, err := eng.Sweep(ctx, "nosuchevent", 10); !errors.Is(err, booking.ErrUnknownEvent) {
			t.Errorf("Sweep = %v", err)
		}
	})
}

func TestHoldUnknownItems(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(3), Stock: map[string]int64{"ga": 5}, SessionLimit: 10})
		if _, err := e.eng.Hold(e.ctx, e.event, "s", booking.Request{Seats: []string{"S0", "Z9"}}); !errors.Is(err, booking.ErrUnknownSeat) {
			t.Errorf("unknown seat: %v", err)
		}
		if _, err := e.eng.Hold(e.ctx, e.event, "s", booking.Request{Units: map[string]int64{"vip": 1}}); !errors.Is(err, booking.ErrUnknownSKU) {
			t.Errorf("unknown sku: %v", err)
		}
		// Nothing was held by the refused requests.
		v := e.view()
		if v.Seats["S0"] != booking.SeatAvailable || v.Stock["ga"] != 5 || v.Holds != 0 {
			t.Errorf("after refused holds: %+v", v)
		}
	})
}

// A hold is all or nothing: one taken seat refuses the whole request and names it.
func TestHoldAllOrNothing(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(4), Stock: map[string]int64{"ga": 2}, SessionLimit: 10})
		e.hold("a", booking.Request{Seats: []string{"S1"}})
		_, err := e.eng.Hold(e.ctx, e.event, "b", booking.Request{Seats: []string{"S0", "S1", "S2"}, Units: map[string]int64{"ga": 1}})
		var te *booking.TakenError
		if !errors.As(err, &te) || !errors.Is(err, booking.ErrSeatTaken) || !slices.Equal(te.Seats, []string{"S1"}) {
			t.Fatalf("Hold over a taken seat = %v, want a TakenError naming S1", err)
		}
		_, err = e.eng.Hold(e.ctx, e.event, "b", booking.Request{Seats: []string{"S0"}, Units: map[string]int64{"ga": 3}})
		var so *booking.SoldOutError
		if !errors.As(err, &so) || !errors.Is(err, booking.ErrSoldOut) || so.SKU != "ga" || so.Available != 2 {
			t.Fatalf("Hold over the stock = %v, want a SoldOutError for ga with 2 left", err)
		}
		v := e.view()
		if v.Seats["S0"] != booking.SeatAvailable || v.Seats["S2"] != booking.SeatAvailable || v.Stock["ga"] != 2 {
			t.Errorf("a refused hold took something: %+v", v)
		}
	})
}

// Fencing tokens only grow: across seats, across releases, when the clock goes back.
func TestFencingTokensGrow(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(2), Stock: map[string]int64{"ga": 10}, SessionLimit: 10})
		var last int64
		for i := 0; i < 20; i++ {
			h := e.hold("s", booking.Request{Seats: []string{"S" + strconv.Itoa(i%2)}})
			if h.Token <= last {
				t.Fatalf("hold %d: token %d after %d", i, h.Token, last)
			}
			last = h.Token
			if err := e.eng.Release(e.ctx, e.event, "s", h.Token); err != nil {
				t.Fatal(err)
			}
			if i == 10 {
				e.clk.Advance(-time.Hour) // a caller with a slow clock
			}
		}
		// A redefinition keeps the counter.
		if err := e.eng.Define(e.ctx, e.event, booking.Inventory{Seats: seats(2), SessionLimit: 1}); err != nil {
			t.Fatalf("redefine: %v", err)
		}
		if h := e.hold("s", booking.Request{Seats: []string{"S0"}}); h.Token <= last {
			t.Fatalf("after redefine: token %d after %d", h.Token, last)
		}
		// A live hold blocks a redefinition.
		if err := e.eng.Define(e.ctx, e.event, booking.Inventory{Seats: seats(2), SessionLimit: 1}); !errors.Is(err, booking.ErrInUse) {
			t.Fatalf("redefine with a live hold = %v, want ErrInUse", err)
		}
	})
}

// A confirm retried with its idempotency key gives one order, also when the
// retries race; the key cannot confirm another hold.
func TestConfirmIdempotent(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(4), Stock: map[string]int64{"ga": 10}, SessionLimit: 10})
		h := e.hold("room:1", booking.Request{Seats: []string{"S0", "S1"}, Units: map[string]int64{"ga": 2}})

		fresh := 0
		var orders []string
		for _, o := range race(t, 50, "confirm retry", func() (booking.OrderEvent, error) {
			return e.eng.Confirm(e.ctx, e.event, "room:1", h.Token, "pay-123")
		}) {
			if !o.Replayed {
				fresh++
			}
			orders = append(orders, o.Order)
			if o.Type != booking.OrderConfirmed || o.Session != "room:1" || o.FencingToken != h.Token ||
				o.IdempotencyKey != "pay-123" || !slices.Equal(o.Seats, []string{"S0", "S1"}) ||
				!maps.Equal(o.Units, map[string]int64{"ga": 2}) || !o.ConfirmedAt.Equal(e.clk.Now()) {
				t.Fatalf("order event %+v", o)
			}
		}
		if fresh != 1 || len(slices.Compact(orders)) != 1 {
			t.Fatalf("%d fresh confirms, orders %v; want 1 and one order", fresh, slices.Compact(orders))
		}
		v := e.view()
		if v.Confirmed != 1 || v.Live != 1 || v.Seats["S0"] != booking.SeatSold || v.Seats["S1"] != booking.SeatSold || v.Stock["ga"] != 8 {
			t.Fatalf("after confirm: %+v", v)
		}
		// Another session cannot read the order through its key.
		e.confirmFails("room:2", h.Token, "pay-123", booking.ErrWrongSession, "replay by another session")
		// The same hold under another key is already an order.
		e.confirmFails("room:1", h.Token, "pay-456", booking.ErrAlreadyConfirmed, "confirm under another key")
		// The key cannot confirm another hold.
		h2 := e.hold("room:1", booking.Request{Seats: []string{"S2"}})
		e.confirmFails("room:1", h2.Token, "pay-123", booking.ErrIdempotencyKey, "key reused for another hold")
		// Releasing a confirmed hold is refused: cancel it instead.
		if err := e.eng.Release(e.ctx, e.event, "room:1", h.Token); !errors.Is(err, booking.ErrAlreadyConfirmed) {
			t.Errorf("release of an order = %v, want ErrAlreadyConfirmed", err)
		}
	})
}

// A hold that expired and whose seat went to someone else cannot be confirmed:
// its fencing token is stale. The new holder's token is larger.
func TestStaleTokenRefused(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(2), HoldTTL: time.Minute, SessionLimit: 2})
		a := e.hold("room:1", booking.Request{Seats: []string{"S0"}})
		e.clk.Advance(time.Minute) // the hold's TTL passes (a GC pause, a slow payment)
		b := e.hold("room:2", booking.Request{Seats: []string{"S0"}})
		if b.Token <= a.Token {
			t.Fatalf("new holder's token %d not above the stale %d", b.Token, a.Token)
		}
		e.confirmFails("room:1", a.Token, "k1", booking.ErrStaleToken, "confirm with the stale token")
		o := e.confirm(b, "k2")
		if o.Session != "room:2" || !slices.Equal(o.Seats, []string{"S0"}) {
			t.Fatalf("new holder's order %+v", o)
		}
		// The stale holder's retry still fails, and the key it used stays free.
		e.confirmFails("room:1", a.Token, "k1", booking.ErrStaleToken, "second stale confirm")
		if v := e.view(); v.Seats["S0"] != booking.SeatSold || v.Confirmed != 1 {
			t.Fatalf("after: %+v", v)
		}
	})
}

// A confirm that finds its own hold overdue drops it (the seat returns) and
// says so; the exact TTL boundary is expired.
func TestConfirmAfterExpiry(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(1), Stock: map[string]int64{"ga": 3}, HoldTTL: time.Minute, SessionLimit: 5})
		h := e.hold("room:1", booking.Request{Seats: []string{"S0"}, Units: map[string]int64{"ga": 2}})
		if !h.ExpiresAt.Equal(e.clk.Now().Add(time.Minute)) {
			t.Fatalf("expires %v, want now + 1m", h.ExpiresAt)
		}
		e.clk.Advance(time.Minute - time.Millisecond)
		if e.stock("ga") != 1 {
			t.Fatal("stock not held")
		}
		e.clk.Advance(time.Millisecond)
		e.confirmFails("room:1", h.Token, "k", booking.ErrHoldExpired, "confirm at the TTL")
		if e.stock("ga") != 3 {
			t.Fatalf("stock after the expired confirm: %d, want 3", e.stock("ga"))
		}
		e.confirmFails("room:1", h.Token, "k", booking.ErrStaleToken, "confirm again")
		if v := e.view(); v.Seats["S0"] != booking.SeatAvailable || v.Expired != 1 {
			t.Fatalf("after: %+v", v)
		}
	})
}

func TestConfirmWrongSession(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(1), SessionLimit: 1})
		h := e.hold("room:1", booking.Request{Seats: []string{"S0"}})
		e.confirmFails("room:2", h.Token, "k", booking.ErrWrongSession, "confirm by another session")
		if err := e.eng.Release(e.ctx, e.event, "room:2", h.Token); !errors.Is(err, booking.ErrWrongSession) {
			t.Fatalf("release by another session = %v", err)
		}
		e.confirmFails("room:1", h.Token+1000, "k", booking.ErrStaleToken, "confirm of a token never issued")
		e.confirm(h, "k")
	})
}

// Released and expired holds return their seats and stock: explicitly, by the
// sweep, and lazily when a later hold needs them.
func TestReleaseAndExpiryReturnItems(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(3), Stock: map[string]int64{"ga": 4}, HoldTTL: time.Minute, SessionLimit: 10})
		h := e.hold("room:1", booking.Request{Seats: []string{"S0", "S1"}, Units: map[string]int64{"ga": 3}})
		if err := e.eng.Release(e.ctx, e.event, "room:1", h.Token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := e.eng.Release(e.ctx, e.event, "room:1", h.Token); err != nil {
			t.Fatalf("second Release: %v", err)
		}
		v := e.view()
		if v.Seats["S0"] != booking.SeatAvailable || v.Seats["S1"] != booking.SeatAvailable || v.Stock["ga"] != 4 || v.Released != 1 {
			t.Fatalf("after release: %+v", v)
		}
		e.confirmFails("room:1", h.Token, "k", booking.ErrStaleToken, "confirm of a released hold")

		// The sweep.
		for i := 0; i < 3; i++ {
			e.hold("sweep:"+strconv.Itoa(i), booking.Request{Seats: []string{"S" + strconv.Itoa(i)}, Units: map[string]int64{"ga": 1}})
		}
		if got := e.stock("ga"); got != 1 {
			t.Fatalf("stock with three holds: %d", got)
		}
		if n, over, err := e.eng.Sweep(e.ctx, e.event, 10); err != nil || n != 0 || over != 0 {
			t.Fatalf("Sweep before the TTL = %d, %d, %v", n, over, err)
		}
		e.clk.Advance(time.Minute)
		if n, over, err := e.eng.Sweep(e.ctx, e.event, 2); err != nil || n != 2 || over != 1 {
			t.Fatalf("Sweep(2) = %d, %d, %v; want 2 expired, 1 still overdue", n, over, err)
		}
		if n, over, err := e.eng.Sweep(e.ctx, e.event, 2); err != nil || n != 1 || over != 0 {
			t.Fatalf("second Sweep = %d, %d, %v", n, over, err)
		}
		v = e.view()
		if v.Stock["ga"] != 4 || v.Expired != 3 || v.Seats["S2"] != booking.SeatAvailable {
			t.Fatalf("after the sweep: %+v", v)
		}

		// Lazily: all four units held, the TTL passes, a new hold takes them
		// (hold.lua expires what is overdue) without any sweep.
		e.hold("lazy:1", booking.Request{Units: map[string]int64{"ga": 4}, Seats: []string{"S0"}})
		e.clk.Advance(time.Minute)
		e.hold("lazy:2", booking.Request{Units: map[string]int64{"ga": 4}, Seats: []string{"S0"}})
		if got := e.stock("ga"); got != 0 {
			t.Fatalf("stock after the lazy expiry: %d", got)
		}
	})
}

// A session holds (or has bought) at most SessionLimit items; what it
// releases, what expires and what is cancelled no longer counts.
func TestSessionLimit(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(10), Stock: map[string]int64{"ga": 100}, HoldTTL: time.Minute, SessionLimit: 4})
		a := e.hold("room:1", booking.Request{Seats: []string{"S0", "S1"}, Units: map[string]int64{"ga": 1}})
		if _, err := e.eng.Hold(e.ctx, e.event, "room:1", booking.Request{Units: map[string]int64{"ga": 2}}); !errors.Is(err, booking.ErrLimit) {
			t.Fatalf("fifth and sixth item = %v, want ErrLimit", err)
		}
		b := e.hold("room:1", booking.Request{Seats: []string{"S2"}})
		if _, err := e.eng.Hold(e.ctx, e.event, "room:1", booking.Request{Seats: []string{"S3"}}); !errors.Is(err, booking.ErrLimit) {
			t.Fatalf("fifth item = %v, want ErrLimit", err)
		}
		e.hold("room:2", booking.Request{Seats: []string{"S3"}}) // another session is not limited by it
		if err := e.eng.Release(e.ctx, e.event, "room:1", b.Token); err != nil {
			t.Fatal(err)
		}
		c := e.hold("room:1", booking.Request{Units: map[string]int64{"ga": 1}})
		o := e.confirm(a, "ka") // bought items still count
		if _, err := e.eng.Hold(e.ctx, e.event, "room:1", booking.Request{Seats: []string{"S4"}}); !errors.Is(err, booking.ErrLimit) {
			t.Fatalf("after confirm = %v, want ErrLimit", err)
		}
		if _, err := e.eng.Cancel(e.ctx, e.event, o.Order, "payment failed"); err != nil {
			t.Fatal(err)
		}
		e.hold("room:1", booking.Request{Seats: []string{"S0", "S1", "S4"}}) // 1 + 3
		_ = c
		e.clk.Advance(time.Minute) // everything expires
		e.hold("room:1", booking.Request{Units: map[string]int64{"ga": 4}})
	})
}

// The compensation path: a confirmed order whose payment failed is cancelled;
// its seats and units return once, however often the cancel is retried.
func TestCancelCompensation(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(2), Stock: map[string]int64{"ga": 5}, SessionLimit: 10})
		h := e.hold("room:1", booking.Request{Seats: []string{"S0"}, Units: map[string]int64{"ga": 2}})
		o := e.confirm(h, "pay-1")
		e.clk.Advance(time.Second)

		fresh := 0
		for _, c := range race(t, 30, "Cancel", func() (booking.OrderEvent, error) {
			return e.eng.Cancel(e.ctx, e.event, o.Order, "payment failed")
		}) {
			if !c.Replayed {
				fresh++
			}
			if c.Type != booking.OrderCancelled || c.Order != o.Order || c.Reason != "payment failed" ||
				c.CancelledAt == nil || !c.CancelledAt.Equal(e.clk.Now()) || !c.ConfirmedAt.Equal(o.ConfirmedAt) {
				t.Fatalf("cancel event %+v", c)
			}
		}
		if fresh != 1 {
			t.Fatalf("%d fresh cancels, want 1", fresh)
		}
		v := e.view()
		if v.Seats["S0"] != booking.SeatAvailable || v.Stock["ga"] != 5 || v.Cancelled != 1 || v.Live != 0 {
			t.Fatalf("after cancel: %+v", v)
		}
		// The confirm's retry does not resurrect the order.
		e.confirmFails("room:1", h.Token, "pay-1", booking.ErrOrderCancelled, "confirm retry after cancel")
		// The seat can be sold again, with a larger token.
		h2 := e.hold("room:2", booking.Request{Seats: []string{"S0"}})
		if h2.Token <= h.Token {
			t.Fatalf("token %d after %d", h2.Token, h.Token)
		}
		e.confirm(h2, "pay-2")
		// A late cancel retry of the first order must not free the seat sold since.
		if c, err := e.eng.Cancel(e.ctx, e.event, o.Order, "payment failed"); err != nil || !c.Replayed {
			t.Fatalf("late cancel retry = %+v, %v", c, err)
		}
		if v := e.view(); v.Seats["S0"] != booking.SeatSold || v.Live != 1 {
			t.Fatalf("a late cancel freed a seat sold since: %+v", v)
		}
		for _, id := range []string{"0", "-1", "01", "x", strconv.FormatInt(h2.Token+1, 10)} {
			if _, err := e.eng.Cancel(e.ctx, e.event, id, ""); !errors.Is(err, booking.ErrUnknownOrder) {
				t.Errorf("Cancel(%q) = %v, want ErrUnknownOrder", id, err)
			}
		}
	})
}

// Redis failures are ErrUnavailable and name the script.
func TestRedisDown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	eng := bookingdb.New(rdb)
	_, err := eng.Hold(context.Background(), "ev", "s", booking.Request{Seats: []string{"A1"}})
	if !errors.Is(err, booking.ErrUnavailable) || !strings.Contains(err.Error(), "booking_hold.lua") {
		t.Fatalf("Hold on a dead Redis = %v, want ErrUnavailable naming booking_hold.lua", err)
	}
	_, err = eng.Confirm(context.Background(), "ev", "s", 1, "k")
	if !errors.Is(err, booking.ErrUnavailable) || !strings.Contains(err.Error(), "booking_confirm.lua") {
		t.Fatalf("Confirm on a dead Redis = %v", err)
	}
}

// Every key of an event is in one cluster slot.
func TestKeysShareSlot(t *testing.T) {
	k := bookingdb.KeysFor("ev-1")
	for _, key := range k.List() {
		if !strings.HasPrefix(key, "vst:{ev-1}:bk:") {
			t.Errorf("key %q outside the event's hash tag", key)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(k.List())))) != 10 {
		t.Errorf("keys not distinct: %v", k.List())
	}
}

// More holds overdue than a hold expires in one batch (64): the seat asked
// for is still expired on the spot, the rest wait for the next script.
func TestHoldExpiresTheSeatItAsksFor(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(100), HoldTTL: time.Minute, SessionLimit: 1})
		for i := 0; i < 70; i++ {
			e.hold("room:"+strconv.Itoa(i), booking.Request{Seats: []string{"S" + strconv.Itoa(i)}})
		}
		e.clk.Advance(time.Minute)
		e.hold("late:1", booking.Request{Seats: []string{"S69"}})
		// 64 by the batch (the oldest tokens), S69 on the spot: 5 still overdue.
		if n, over, err := e.eng.Sweep(e.ctx, e.event, 1000); err != nil || n != 5 || over != 0 {
			t.Fatalf("Sweep = %d, %d, %v; want 5 left to expire", n, over, err)
		}
		if v := e.view(); v.Expired != 70 || v.Seats["S69"] != booking.SeatHeld || v.Seats["S68"] != booking.SeatAvailable {
			t.Fatalf("after: expired %d, S69 %s, S68 %s", v.Expired, v.Seats["S69"], v.Seats["S68"])
		}
	})
}
