package queueapi_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// With the booking kit, a room's report counts the orders of its events:
// confirmed in the minute, and cancelled.
func TestReportCountsOrders(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			reportCountsOrders(t, rdb)
		})
	}
}

func reportCountsOrders(t *testing.T, rdb redis.UniversalClient) {
	clk := testkit.EngineClock()
	bk := bookingdb.New(rdb, bookingdb.WithClock(clk.Now))
	f := apitest.NewFixtureOn(t, app.NewEngine(rdb, clk.Now), clk, func(_ *token.Keys, o *api.Options) { o.Booking = bk })
	id := f.Room(`{"maxActive":10}`)
	f.Tick(id)
	if err := bk.Define(t.Context(), id, booking.Inventory{Seats: []string{"A1", "A2"}, SessionLimit: 2}); err != nil {
		t.Fatal(err)
	}
	var first booking.OrderEvent
	for i, seat := range []string{"A1", "A2"} {
		h, err := bk.Hold(t.Context(), id, "s", booking.Request{Seats: []string{seat}})
		if err != nil {
			t.Fatal(err)
		}
		o, err := bk.Confirm(t.Context(), id, "s", h.Token, "k"+seat)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = o
		}
	}
	if _, err := bk.Cancel(t.Context(), id, first.Order, "refund"); err != nil {
		t.Fatal(err)
	}
	r := f.Admin("GET", "/api/admin/rooms/"+id+"/report", "")
	apitest.WantStatus(t, r, 200, "")
	tot, _ := r.JSON["totals"].(map[string]any)
	if tot["ordersConfirmed"] != float64(2) || tot["ordersCancelled"] != float64(1) {
		t.Fatalf("report totals %v, want 2 orders confirmed and 1 cancelled", tot)
	}
}
