package operator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

// EventOrders follows the cursor to "0" and gives each order once, though
// the API may give one on two pages; an order cancelled between two pages
// comes as its cancellation, in the place it first came.
func TestEventOrdersPages(t *testing.T) {
	var cursors []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/admin/events/concert/orders" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		c := r.URL.Query().Get("cursor")
		cursors = append(cursors, c)
		w.Header().Set("Content-Type", "application/json")
		switch c {
		case "0":
			fmt.Fprint(w, `{"event":"concert","orders":[{"type":"booking.order.confirmed","order":"1","seats":["A1"]},
				{"type":"booking.order.confirmed","order":"2","seats":["A2"]}],"next":"17"}`)
		case "17":
			fmt.Fprint(w, `{"event":"concert","orders":[{"type":"booking.order.cancelled","order":"2","seats":["A2"],"reason":"refund"},
				{"type":"booking.order.confirmed","order":"1","seats":["A1"]},{"type":"booking.order.confirmed","order":"3"}],"next":"0"}`)
		default:
			http.Error(w, "bad cursor", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	c := &Client{Endpoint: srv.URL, Auth: BearerKey("k")}
	orders, err := c.EventOrders(context.Background(), "concert")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range orders {
		got = append(got, o.Order+" "+o.Type)
	}
	want := []string{"1 " + booking.OrderConfirmed, "2 " + booking.OrderCancelled, "3 " + booking.OrderConfirmed}
	if !slices.Equal(got, want) || !slices.Equal(cursors, []string{"0", "17"}) {
		t.Errorf("orders %q, want %q; cursors %q", got, want, cursors)
	}

	if _, err := c.EventOrders(context.Background(), "no/such"); err == nil {
		t.Error("an event id with a slash was sent")
	}
}
