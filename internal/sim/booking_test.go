package sim

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// A small crowd in virtual time against real Redis, every admitted visitor
// booking on an event with fewer seats and units than buyers: holds race
// (some are refused), some are confirmed, released or left to expire, and at
// the end no seat is sold twice, every sold seat is one visitor's order, the
// stock adds up and was never negative, every hold is settled, a retried
// confirm returns the same order, and the engine's counters match what the
// visitors were answered. Some sessions end mid-hold: their seats are free
// at once (available, or already held by the next visitor, well before
// their hold's TTL would have run out) and a confirm after the end is
// refused; some payments are slow: the hold is extended once or twice and
// the confirm, after the hold's first end, succeeds.
func TestVirtualCrowdBooks(t *testing.T) {
	d, cfg := virtualRoom(t, redistest.Single(t), 20, 600)
	cfg.ClientEnqueuePerMinute = 0
	c := Config{
		Visitors: 200, Shape: Burst, Seed: 11,
		CloseTab: 0.1, NoConsume: 0.05, Leave: 0.05,
		ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
		Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour,
		Booking: &Booking{Seats: 40, Stock: 30, Confirm: 0.6, Release: 0.5, HoldTTL: 20 * time.Second,
			EndMidHold: 0.15, Extend: 0.3},
	}
	res, err := Run(context.Background(), d, d.AdminKey, c)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summarize()
	if testing.Verbose() {
		s.WriteTable(os.Stdout)
	}
	b := s.Booking
	if b == nil {
		t.Fatal("no booking summary")
	}
	for _, v := range res.Visitors {
		if v.Book != nil && v.Book.Outcome == BookFailed {
			t.Errorf("visitor %d: booking failed: %s", v.ID, v.Book.LastError)
		}
	}
	if !s.OK() || b.Errors != 0 {
		t.Errorf("invariants: doubleSold=%d soldMismatch=%d negativeStock=%d stockMismatch=%d unsettled=%d replaysBad=%d counters=%d errors=%d; "+
			"endedSeatsHeld=%d lateConfirms=%d endedMismatch=%d (ended %d, want %d+%d) extendsBad=%d extendNotHonoured=%d; room ok=%v",
			b.DoubleSold, b.SoldMismatch, b.NegativeStock, b.StockMismatch, b.Unsettled, b.ReplaysBad, b.CounterMismatch, b.Errors,
			b.EndedSeatsHeld, b.LateConfirms, b.EndedMismatch, b.Counters["ended"], b.EndedExpected, b.EndedAmbiguous,
			b.ExtendsBad, b.ExtendNotHonoured, s.Stopped || s.Outcomes["failed"] != 0)
	}
	// Bookings happened, in every way the crowd can end one.
	if b.HoldsGranted == 0 || b.HoldsRefused == 0 || b.OrdersConfirmed == 0 {
		t.Errorf("holds granted %d, refused %d, orders %d: want all > 0", b.HoldsGranted, b.HoldsRefused, b.OrdersConfirmed)
	}
	for _, o := range []BookOutcome{BookConfirmed, BookReleased, BookWalked, BookNothing, BookEnded} {
		if b.Outcomes[o.String()] == 0 {
			t.Errorf("no booking ended %s: %v", o, b.Outcomes)
		}
	}
	// A walker completes its session T/8 later: its hold ends with the session, before its TTL.
	if b.Counters["ended"] == 0 || b.Counters["released"] == 0 {
		t.Errorf("engine counters %v: want holds both released and ended with their session", b.Counters)
	}
	// Sessions ended mid-hold, their seats checked at once, some already
	// taken by the next visitor; slow payments confirmed past their first end.
	if b.EndedSeats == 0 || b.EndedSeatsFree+b.EndedSeatsReheld != b.EndedSeats || b.EndedSeatsTaken == 0 {
		t.Errorf("seats of sessions ended mid-hold: %d, free %d, held again %d, still held %d, unread %d, taken before the old end %d: "+
			"want all free at once, some taken by the next visitor", b.EndedSeats, b.EndedSeatsFree, b.EndedSeatsReheld, b.EndedSeatsHeld,
			b.EndedSeatsUnread, b.EndedSeatsTaken)
	}
	if b.EndedExpected < int64(b.EndedMidHold) || b.EndedMidHold == 0 {
		t.Errorf("sessions ended mid-hold %d, holds the engine must count ended %d: want > 0, ≥", b.EndedMidHold, b.EndedExpected)
	}
	if b.ExtendedConfirmed == 0 || b.ExtensionsGranted <= b.Extenders || b.Counters["extended"] != int64(b.ExtensionsGranted) {
		t.Errorf("slow payers %d, extensions %d (engine %d), confirmed past the first end %d: want some extended twice, confirmed",
			b.Extenders, b.ExtensionsGranted, b.Counters["extended"], b.ExtendedConfirmed)
	}
	if b.SeatsSold == 0 || b.UnitsSold == 0 {
		t.Errorf("seats sold %d, units sold %d: want both > 0", b.SeatsSold, b.UnitsSold)
	}
	if b.SeatsSold+b.SeatsLeft != int(b.Seats) {
		t.Errorf("seats sold %d + left %d ≠ %d", b.SeatsSold, b.SeatsLeft, b.Seats)
	}
}

// The report's checks catch a seat sold twice, a sold seat without an order,
// stock that does not add up and holds left unsettled.
func TestBookingSummaryCatches(t *testing.T) {
	visit := func(order string, seats []string, units int64) *Visitor {
		bv := &BookVisit{Token: "1", Order: order, Seats: seats, Outcome: BookConfirmed, RefusedBy: map[string]int{}}
		if units > 0 {
			bv.Units = map[string]int64{"ga": units}
		}
		return &Visitor{Book: bv}
	}
	r := &Result{
		Config: Config{Booking: &Booking{Seats: 3, Stock: 5}},
		Visitors: []*Visitor{
			visit("1", []string{"S1"}, 0),
			visit("2", []string{"S1"}, 0), // S1 twice
			visit("3", nil, 2),
		},
		Booking: &BookingResult{
			Seats:    map[string]string{"S1": "sold", "S2": "sold", "S3": "held"}, // S2 without an order, S3 still held
			Stock:    map[string]int64{"ga": 2},                                   // 5 − 2 sold ≠ 2 left
			Counters: map[string]int64{"holds": 3, "confirmed": 3},
		},
	}
	s := r.summarizeBooking()
	if s.DoubleSold != 1 || s.SoldMismatch != 1 || s.StockMismatch != 1 || s.Unsettled != 1 || s.OK() {
		t.Errorf("doubleSold=%d soldMismatch=%d stockMismatch=%d unsettled=%d ok=%v; want 1, 1, 1, 1, false",
			s.DoubleSold, s.SoldMismatch, s.StockMismatch, s.Unsettled, s.OK())
	}
	r.Booking.Stock["ga"] = -1
	r.Booking.Seats = map[string]string{"S1": "sold", "S2": "available", "S3": "available"}
	r.Visitors = r.Visitors[:1]
	if s := r.summarizeBooking(); s.NegativeStock != 1 || s.CounterMismatch != 1 || s.DoubleSold != 0 || s.SoldMismatch != 0 {
		t.Errorf("negativeStock=%d counterMismatch=%d doubleSold=%d soldMismatch=%d; want 1, 1, 0, 0",
			s.NegativeStock, s.CounterMismatch, s.DoubleSold, s.SoldMismatch)
	}
}

// The checks of sessions ended mid-hold and of slow payments catch a seat
// still held after its session ended (and held again by no one before the
// old hold's end), a confirm after the end that made an order, the engine's
// ended counter short of the holds that ended, an extension answered wrongly
// and an extended hold lost before its confirm.
func TestBookingSummaryCatchesEndsAndExtensions(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	ender := func(token string, seat, state string, late bool) *Visitor {
		return &Visitor{Book: &BookVisit{Token: token, Seats: []string{seat}, Outcome: BookEnded, RefusedBy: map[string]int{},
			HeldAt: t0, ExpiresAt: t0.Add(time.Minute), EndedAt: t0.Add(5 * time.Second),
			AfterEnd: map[string]string{seat: state}, LateAccepted: late}}
	}
	taker := &Visitor{Book: &BookVisit{Token: "30", Seats: []string{"S2"}, Outcome: BookReleased, RefusedBy: map[string]int{},
		HeldAt: t0.Add(10 * time.Second), ExpiresAt: t0.Add(70 * time.Second)}}
	slow := &Visitor{Book: &BookVisit{Token: "40", Seats: []string{"S4"}, Outcome: BookLate, RefusedBy: map[string]int{}, extends: 2,
		Extensions: 2, extendedOK: 1, ExtendBad: 1, HeldAt: t0, FirstExpiresAt: t0.Add(time.Minute), ExpiresAt: t0.Add(90 * time.Second)}}
	r := &Result{
		Config: Config{Booking: &Booking{Seats: 4}},
		Visitors: []*Visitor{
			ender("10", "S1", "held", false), // still held, by no later hold
			ender("20", "S2", "held", false), // held again by the taker: fine
			ender("25", "S3", "available", true),
			taker, slow,
		},
		Booking: &BookingResult{
			Seats:    map[string]string{"S1": "available", "S2": "available", "S3": "sold", "S4": "available"},
			Counters: map[string]int64{"holds": 5, "released": 1, "ended": 1, "expired": 1, "confirmed": 1, "extended": 1},
		},
	}
	r.Visitors[2].Book.Order = "25"
	s := r.summarizeBooking()
	if s.EndedSeatsHeld != 1 || s.EndedSeatsReheld != 1 || s.EndedSeatsFree != 1 || s.EndedSeatsTaken != 1 ||
		s.LateConfirms != 1 || s.EndedMismatch != 1 || s.ExtendsBad != 1 || s.ExtendNotHonoured != 1 || s.OK() {
		t.Errorf("endedSeatsHeld=%d reheld=%d free=%d taken=%d lateConfirms=%d endedMismatch=%d (want %d+%d) extendsBad=%d notHonoured=%d ok=%v; "+
			"want 1, 1, 1, 1, 1, 1, 1, 1, false", s.EndedSeatsHeld, s.EndedSeatsReheld, s.EndedSeatsFree, s.EndedSeatsTaken, s.LateConfirms,
			s.EndedMismatch, s.EndedExpected, s.EndedAmbiguous, s.ExtendsBad, s.ExtendNotHonoured, s.OK())
	}
	// The same run with every check met: the seat free, the engine's
	// counts right, the slow payer's extensions honoured.
	r.Visitors = []*Visitor{ender("10", "S1", "available", false), taker}
	r.Booking = &BookingResult{Seats: map[string]string{"S1": "available", "S2": "available", "S3": "available", "S4": "available"},
		Counters: map[string]int64{"holds": 2, "released": 1, "ended": 1}}
	if s := r.summarizeBooking(); !s.OK() || s.EndedExpected != 1 || s.EndedSeatsFree != 1 {
		t.Errorf("a clean end: ok=%v expected=%d free=%d; want true, 1, 1", s.OK(), s.EndedExpected, s.EndedSeatsFree)
	}
}
