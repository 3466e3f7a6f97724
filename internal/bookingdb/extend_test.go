package bookingdb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// Extend: each numbered extension moves the hold's end to now + TTL, within
// the event's bounds (maxHoldExtensions, maxHold from the creation); a retry
// changes nothing; an expired, released or confirmed hold is refused; the
// token stays what confirm checks.
func TestExtend(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(3), SessionLimit: 3, HoldTTL: time.Minute,
			MaxHoldExtensions: 3, MaxHold: 150 * time.Second})
		if v := e.view(); v.HoldTTL != time.Minute || v.MaxHold != 150*time.Second || v.MaxHoldExtensions != 3 || v.SessionLimit != 3 {
			t.Fatalf("view's definition: %+v", v)
		}
		h := e.hold("r:1", booking.Request{Seats: []string{"S0"}})
		created := e.clk.Now()
		e.clk.Advance(50 * time.Second)
		x, err := e.eng.Extend(e.ctx, e.event, "r:1", h.Token, 1)
		if err != nil || x.Replayed || x.Extensions != 1 || !x.ExpiresAt.Equal(e.clk.Now().Add(time.Minute).Truncate(time.Millisecond)) {
			t.Fatalf("Extend 1 = %+v, %v", x, err)
		}
		again, err := e.eng.Extend(e.ctx, e.event, "r:1", h.Token, 1)
		if err != nil || !again.Replayed || !again.ExpiresAt.Equal(x.ExpiresAt) || again.Extensions != 1 {
			t.Fatalf("Extend 1 again = %+v, %v", again, err)
		}
		if _, err := e.eng.Extend(e.ctx, e.event, "r:1", h.Token, 3); !errors.Is(err, booking.ErrInvalidRequest) {
			t.Fatalf("Extend 3 after 1: %v", err)
		}
		if _, err := e.eng.Extend(e.ctx, e.event, "r:2", h.Token, 2); !errors.Is(err, booking.ErrWrongSession) {
			t.Fatalf("another session's extend: %v", err)
		}
		// Past the original TTL, the hold still holds: a confirm would still be in time.
		e.clk.Advance(50 * time.Second) // 100 s after the hold
		if v := e.view(); v.Seats["S0"] != booking.SeatHeld {
			t.Fatalf("extended hold gone at 100 s: %v", v.Seats)
		}
		// The second is capped by maxHold: created + 150 s.
		x2, err := e.eng.Extend(e.ctx, e.event, "r:1", h.Token, 2)
		if err != nil || !x2.ExpiresAt.Equal(created.Add(150*time.Second).Truncate(time.Millisecond)) {
			t.Fatalf("Extend 2 = %+v, %v; want the end at creation + 150 s", x2, err)
		}
		// At its longest: nothing more to give.
		if _, err := e.eng.Extend(e.ctx, e.event, "r:1", h.Token, 3); !errors.Is(err, booking.ErrExtensionLimit) {
			t.Fatalf("Extend at the longest life: %v", err)
		}
		o := e.confirm(h, "k1")
		if o.FencingToken != h.Token {
			t.Fatalf("order token %d, hold %d", o.FencingToken, h.Token)
		}
		if _, err := e.eng.Extend(e.ctx, e.event, "r:1", h.Token, 3); !errors.Is(err, booking.ErrAlreadyConfirmed) {
			t.Fatalf("Extend of a confirmed hold: %v", err)
		}
		// Over maxHoldExtensions.
		h2 := e.hold("r:2", booking.Request{Seats: []string{"S1"}})
		if _, err := e.eng.Extend(e.ctx, e.event, "r:2", h2.Token, 4); !errors.Is(err, booking.ErrExtensionLimit) {
			t.Fatalf("Extend 4 of 3: %v", err)
		}
		// Expired: refused and dropped; then stale.
		e.clk.Advance(time.Minute)
		if _, err := e.eng.Extend(e.ctx, e.event, "r:2", h2.Token, 1); !errors.Is(err, booking.ErrHoldExpired) {
			t.Fatalf("Extend of an expired hold: %v", err)
		}
		if _, err := e.eng.Extend(e.ctx, e.event, "r:2", h2.Token, 1); !errors.Is(err, booking.ErrStaleToken) {
			t.Fatalf("Extend of a gone hold: %v", err)
		}
		if v := e.view(); v.Extended != 2 || v.Seats["S1"] != booking.SeatAvailable {
			t.Fatalf("after: extended %d, seats %v", v.Extended, v.Seats)
		}
	})
}

// An event without extensions refuses them; bounds are validated.
func TestExtendBounds(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(1), SessionLimit: 1, HoldTTL: time.Minute})
		h := e.hold("r:1", booking.Request{Seats: []string{"S0"}})
		if _, err := e.eng.Extend(e.ctx, e.event, "r:1", h.Token, 1); !errors.Is(err, booking.ErrExtensionLimit) {
			t.Fatalf("Extend without extensions: %v", err)
		}
		for _, inv := range []booking.Inventory{
			{Seats: seats(1), SessionLimit: 1, MaxHoldExtensions: -1},
			{Seats: seats(1), SessionLimit: 1, MaxHoldExtensions: booking.MaxExtensions + 1},
			{Seats: seats(1), SessionLimit: 1, HoldTTL: time.Minute, MaxHold: 59 * time.Second},
			{Seats: seats(1), SessionLimit: 1, MaxHold: booking.MaxHoldLife + time.Second},
		} {
			if err := inv.Validate(); !errors.Is(err, booking.ErrInvalidInventory) {
				t.Errorf("%+v: %v", inv, err)
			}
		}
	})
}
