package bookingdb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// activate puts seq in the room's active set until ends, as consume does.
func (e *env) activate(roomID string, seq int64, ends time.Time) booking.RoomSession {
	e.t.Helper()
	if err := e.rdb.ZAdd(e.ctx, roomdb.KeysFor(roomID).Active, redis.Z{Score: float64(ends.UnixMilli()), Member: seq}).Err(); err != nil {
		e.t.Fatal(err)
	}
	return booking.RoomSession{Room: roomID, Seq: seq, Ends: ends}
}

// A hold for a room's session: the event must be the room's and the session
// active with the end its token says; in the same script when the event is
// named after the room, after one read otherwise.
func TestHoldSession(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, sameSlot := range []bool{true, false} {
			name := map[bool]string{true: "event is the room", false: "event of another room"}[sameSlot]
			t.Run(name, func(t *testing.T) {
				roomID := redistest.Room(t)
				inv := booking.Inventory{Seats: seats(4), SessionLimit: 4, HoldTTL: time.Minute}
				var e *env
				if sameSlot {
					clk := testkit.EngineClock()
					e = &env{t: t, ctx: t.Context(), rdb: rdb, clk: clk, eng: bookingdb.New(rdb, bookingdb.WithClock(clk.Now)), event: roomID}
					e.keys = bookingdb.KeysFor(roomID)
					if err := e.eng.Define(e.ctx, roomID, inv); err != nil {
						t.Fatal(err)
					}
				} else {
					inv.Room = roomID
					e = newEnv(t, rdb, inv)
				}
				if v := e.view(); v.Room != roomID {
					t.Fatalf("view room %q, want %q", v.Room, roomID)
				}
				if r, err := e.eng.Room(e.ctx, e.event); err != nil || r != roomID {
					t.Fatalf("Room = %q, %v", r, err)
				}
				ends := e.clk.Now().Add(10 * time.Minute)
				s := e.activate(roomID, 7, ends)
				h, err := e.eng.HoldSession(e.ctx, e.event, s, booking.Request{Seats: []string{"S0"}})
				if err != nil || h.Session != roomID+":7" {
					t.Fatalf("HoldSession = %+v, %v", h, err)
				}
				// Another end than the active set's (a session of that seq before a data loss): ended.
				other := s
				other.Ends = ends.Add(time.Millisecond)
				if _, err := e.eng.HoldSession(e.ctx, e.event, other, booking.Request{Seats: []string{"S1"}}); !errors.Is(err, booking.ErrSessionEnded) {
					t.Fatalf("other end: %v", err)
				}
				// Not in the active set at all.
				gone := booking.RoomSession{Room: roomID, Seq: 8, Ends: ends}
				if _, err := e.eng.HoldSession(e.ctx, e.event, gone, booking.Request{Seats: []string{"S1"}}); !errors.Is(err, booking.ErrSessionEnded) {
					t.Fatalf("not active: %v", err)
				}
				// Another room's session, active in its room.
				stranger := e.activate(redistest.Room(t), 7, ends)
				if _, err := e.eng.HoldSession(e.ctx, e.event, stranger, booking.Request{Seats: []string{"S1"}}); !errors.Is(err, booking.ErrWrongRoom) {
					t.Fatalf("another room's session: %v", err)
				}
				// Past its end (a tick has not removed it yet).
				e.clk.Advance(10*time.Minute + time.Millisecond)
				if _, err := e.eng.HoldSession(e.ctx, e.event, s, booking.Request{Seats: []string{"S1"}}); !errors.Is(err, booking.ErrSessionEnded) {
					t.Fatalf("past its end: %v", err)
				}
			})
		}
	})
}

// Confirm and Cancel write their order events to the outbox in the same
// script; Ack removes them; a replay writes nothing.
func TestOutbox(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(2), SessionLimit: 2})
		h := e.hold("r:1", booking.Request{Seats: []string{"S0"}})
		o := e.confirm(h, "pay-1")
		e.confirm(h, "pay-1") // replay
		if p, err := e.orderOutbox(e.clk.Now().Add(-time.Millisecond)); err != nil || len(p) != 0 {
			t.Fatalf("Outbox before the confirm = %+v, %v", p, err)
		}
		p, err := e.orderOutbox(e.clk.Now())
		if err != nil || len(p) != 1 || p[0].ID != booking.OutboxID(o) || p[0].Event.Type != booking.OrderConfirmed || p[0].Event.Order != o.Order {
			t.Fatalf("Outbox = %+v, %v", p, err)
		}
		e.clk.Advance(time.Second)
		x, err := e.eng.Cancel(e.ctx, e.event, o.Order, "payment_failed")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.eng.Cancel(e.ctx, e.event, o.Order, "again"); err != nil {
			t.Fatal(err)
		}
		p, err = e.orderOutbox(e.clk.Now())
		if err != nil || len(p) != 2 {
			t.Fatalf("Outbox = %+v, %v", p, err)
		}
		// The confirmed event stays the confirmed event after the cancel.
		if p[0].Event.Type != booking.OrderConfirmed || p[0].Event.CancelledAt != nil || p[0].Event.Reason != "" {
			t.Fatalf("confirmed event after cancel: %+v", p[0].Event)
		}
		if p[1].ID != booking.OutboxID(x) || p[1].Event.Type != booking.OrderCancelled || p[1].Event.Reason != "payment_failed" {
			t.Fatalf("cancelled event: %+v", p[1])
		}
		if err := e.eng.Ack(e.ctx, e.event, p[0].ID, p[1].ID); err != nil {
			t.Fatal(err)
		}
		if p, err = e.orderOutbox(e.clk.Now()); err != nil || len(p) != 0 {
			t.Fatalf("Outbox after Ack = %+v, %v", p, err)
		}
		ids, err := e.eng.Events(e.ctx)
		found := false
		for _, id := range ids {
			found = found || id == e.event
		}
		if err != nil || !found {
			t.Fatalf("Events = %v, %v; want %s in it", ids, err, e.event)
		}
	})
}

// orderOutbox is the outbox's order events (its inventory events left out).
func (e *env) orderOutbox(before time.Time) ([]booking.Pending, error) {
	p, err := e.eng.Outbox(e.ctx, e.event, 1000, before)
	var out []booking.Pending
	for _, x := range p {
		if x.Inventory == nil {
			out = append(out, x)
		}
	}
	return out, err
}
