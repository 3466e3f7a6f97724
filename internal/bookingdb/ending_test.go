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

// roomEnv is an event of a room's sessions: named after the room (sameSlot)
// or another event naming the room.
func roomEnv(t *testing.T, rdb redis.UniversalClient, sameSlot bool, inv booking.Inventory) (*env, string) {
	t.Helper()
	roomID := redistest.Room(t)
	if !sameSlot {
		inv.Room = roomID
		return newEnv(t, rdb, inv), roomID
	}
	clk := testkit.EngineClock()
	e := &env{t: t, ctx: t.Context(), rdb: rdb, clk: clk, eng: bookingdb.New(rdb, bookingdb.WithClock(clk.Now)), event: roomID}
	e.keys = bookingdb.KeysFor(roomID)
	if err := e.eng.Define(e.ctx, roomID, inv); err != nil {
		t.Fatal(err)
	}
	return e, roomID
}

// A room session's holds go the moment it ends (EndSession: complete,
// leave), their seats and units back at once, the fence past their tokens,
// and a late confirm refused; another session's holds and a plain Hold stay.
func TestEndSessionReleasesHolds(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, sameSlot := range []bool{true, false} {
			t.Run(map[bool]string{true: "event is the room", false: "event of another room"}[sameSlot], func(t *testing.T) {
				e, roomID := roomEnv(t, rdb, sameSlot, booking.Inventory{Seats: seats(4), Stock: map[string]int64{"ga": 5},
					SessionLimit: 10, HoldTTL: time.Hour})
				ends := e.clk.Now().Add(10 * time.Minute)
				s7, s8 := e.activate(roomID, 7, ends), e.activate(roomID, 8, ends)
				a, err := e.eng.HoldSession(e.ctx, e.event, s7, booking.Request{Seats: []string{"S0"}, Units: map[string]int64{"ga": 2}})
				if err != nil {
					t.Fatal(err)
				}
				b, err := e.eng.HoldSession(e.ctx, e.event, s7, booking.Request{Seats: []string{"S1"}})
				if err != nil {
					t.Fatal(err)
				}
				c, err := e.eng.HoldSession(e.ctx, e.event, s8, booking.Request{Seats: []string{"S2"}})
				if err != nil {
					t.Fatal(err)
				}
				plain := e.hold(roomID+":7", booking.Request{Seats: []string{"S3"}}) // the caller vouched: not a room session's
				// The room ends session 7 (complete.lua), then the holds.
				if err := rdb.ZRem(e.ctx, roomdb.KeysFor(roomID).Active, 7).Err(); err != nil {
					t.Fatal(err)
				}
				n, err := e.eng.EndSession(e.ctx, roomID, 7)
				if err != nil || n != 2 {
					t.Fatalf("EndSession = %d, %v; want 2 holds", n, err)
				}
				v := e.view()
				if v.Seats["S0"] != booking.SeatAvailable || v.Seats["S1"] != booking.SeatAvailable || v.Stock["ga"] != 5 {
					t.Fatalf("after the end: seats %v stock %v", v.Seats, v.Stock)
				}
				if v.Seats["S2"] != booking.SeatHeld || v.Seats["S3"] != booking.SeatHeld {
					t.Fatalf("another session's holds went too: %v", v.Seats)
				}
				if v.Ended != 2 || v.Released != 0 || v.Expired != 0 || v.Fence <= plain.Token {
					t.Fatalf("counters %+v, want 2 ended and the fence past %d", v, plain.Token)
				}
				e.confirmFails(a.Session, a.Token, "k-a", booking.ErrStaleToken, "a hold of the ended session")
				e.confirmFails(b.Session, b.Token, "k-b", booking.ErrStaleToken, "its other hold")
				if n, err := e.eng.EndSession(e.ctx, roomID, 7); err != nil || n != 0 {
					t.Fatalf("second EndSession = %d, %v", n, err)
				}
				e.confirm(c, "k-c")
				e.confirm(plain, "k-plain")
				// The session's items no longer count against its limit.
				if got, _ := rdb.HGet(e.ctx, e.keys.Sessions, roomID+":7").Int64(); got != 1 {
					t.Fatalf("session 7 counts %d items, want 1 (the plain hold's)", got)
				}
				if got, _ := rdb.HLen(e.ctx, e.keys.RoomHolds).Result(); got != 0 {
					t.Fatalf("%d sessions still listed with holds", got)
				}
			})
		}
	})
}

// A session that times out: a confirm of its hold is refused at once (before
// any sweep), and EndTimedOut (the sweep) drops the holds of every session
// that is no longer active.
func TestTimedOutSessionsHolds(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, sameSlot := range []bool{true, false} {
			t.Run(map[bool]string{true: "event is the room", false: "event of another room"}[sameSlot], func(t *testing.T) {
				e, roomID := roomEnv(t, rdb, sameSlot, booking.Inventory{Seats: seats(4), SessionLimit: 4, HoldTTL: time.Hour})
				s1 := e.activate(roomID, 1, e.clk.Now().Add(time.Minute))
				s2 := e.activate(roomID, 2, e.clk.Now().Add(time.Minute))
				s3 := e.activate(roomID, 3, e.clk.Now().Add(time.Hour))
				var hs []booking.Hold
				for i, s := range []booking.RoomSession{s1, s2, s3} {
					h, err := e.eng.HoldSession(e.ctx, e.event, s, booking.Request{Seats: []string{seats(4)[i]}})
					if err != nil {
						t.Fatal(err)
					}
					hs = append(hs, h)
				}
				e.clk.Advance(time.Minute + time.Millisecond) // 1 and 2 are past their end; no tick ran
				e.confirmFails(hs[0].Session, hs[0].Token, "k1", booking.ErrStaleToken, "a hold of a timed-out session")
				if v := e.view(); v.Seats["S0"] != booking.SeatAvailable || v.Seats["S1"] != booking.SeatHeld {
					t.Fatalf("after the refused confirm: %v", v.Seats)
				}
				n, err := e.eng.EndTimedOut(e.ctx, e.event)
				if err != nil || n != 1 {
					t.Fatalf("EndTimedOut = %d, %v; want 1 (session 2's hold)", n, err)
				}
				v := e.view()
				if v.Seats["S1"] != booking.SeatAvailable || v.Seats["S2"] != booking.SeatHeld || v.Ended != 2 {
					t.Fatalf("after the sweep: %v, ended %d", v.Seats, v.Ended)
				}
				e.confirmFails(hs[1].Session, hs[1].Token, "k2", booking.ErrStaleToken, "after the sweep")
				e.confirm(hs[2], "k3")
				if n, err := e.eng.EndTimedOut(e.ctx, e.event); err != nil || n != 0 {
					t.Fatalf("EndTimedOut again = %d, %v", n, err)
				}
				if _, err := e.eng.EndTimedOut(e.ctx, redistest.Room(t)); !errors.Is(err, booking.ErrUnknownEvent) {
					t.Fatalf("EndTimedOut of no event: %v", err)
				}
			})
		}
	})
}
