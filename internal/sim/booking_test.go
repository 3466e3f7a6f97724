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
// visitors were answered.
func TestVirtualCrowdBooks(t *testing.T) {
	d, cfg := virtualRoom(t, redistest.Single(t), 20, 600)
	cfg.ClientEnqueuePerMinute = 0
	c := Config{
		Visitors: 200, Shape: Burst, Seed: 11,
		CloseTab: 0.1, NoConsume: 0.05, Leave: 0.05,
		ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
		Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour,
		Booking: &Booking{Seats: 40, Stock: 30, Confirm: 0.6, Release: 0.5, HoldTTL: 20 * time.Second},
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
		t.Errorf("invariants: doubleSold=%d soldMismatch=%d negativeStock=%d stockMismatch=%d unsettled=%d replaysBad=%d counters=%d errors=%d; room ok=%v",
			b.DoubleSold, b.SoldMismatch, b.NegativeStock, b.StockMismatch, b.Unsettled, b.ReplaysBad, b.CounterMismatch, b.Errors,
			s.Stopped || s.Outcomes["failed"] != 0)
	}
	// Bookings happened, in every way the crowd can end one.
	if b.HoldsGranted == 0 || b.HoldsRefused == 0 || b.OrdersConfirmed == 0 {
		t.Errorf("holds granted %d, refused %d, orders %d: want all > 0", b.HoldsGranted, b.HoldsRefused, b.OrdersConfirmed)
	}
	for _, o := range []BookOutcome{BookConfirmed, BookReleased, BookWalked, BookNothing} {
		if b.Outcomes[o.String()] == 0 {
			t.Errorf("no booking ended %s: %v", o, b.Outcomes)
		}
	}
	// A walker completes its session T/8 later: its hold ends with the session, before its TTL.
	if b.Counters["ended"] == 0 || b.Counters["released"] == 0 {
		t.Errorf("engine counters %v: want holds both released and ended with their session", b.Counters)
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
