package api

import (
	"slices"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Each function's part binds exactly the routes the table gives that
// function (what the stack sends it), in the table's order, and the parts
// together cover every route: a route dropped from a part, or bound in the
// wrong one, stops NewPart (bind panics) or fails here.
func TestPartsAreTheFunctionsRoutes(t *testing.T) {
	parts := []Part{EnqueuePart(), PollPart(), StatusPart(), ConsumePart(), AdminPart(), BookingPart()}
	k, err := token.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Queue: struct{ Queue }{}, Tickets: token.NewTickets(k.TicketSecret, "t"), Entries: token.NewEntries(k.Entry, "t")}
	covered := map[string]bool{}
	for _, p := range parts {
		var want []string
		for _, r := range routes.All {
			if r.Function == p.Function {
				want = append(want, r.Key())
			}
		}
		var got []string
		for _, r := range NewPart(o, p).table {
			got = append(got, r.key)
			covered[r.key] = true
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("part of %q binds\n %v\nwant\n %v", p.Function, got, want)
		}
	}
	for _, r := range routes.All {
		if !covered[r.Key()] {
			t.Errorf("%s (function %q) is in no function's part", r.Key(), r.Function)
		}
	}
	// The handler of every route is All's.
	if all := NewPart(o, All()); len(all.table) != len(routes.All) {
		t.Errorf("All binds %d routes, want %d", len(all.table), len(routes.All))
	}
}

// A part whose products lack one of its routes, or bind another function's,
// is a wiring bug that stops the program at start-up.
func TestPartBindPanics(t *testing.T) {
	k, err := token.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Queue: struct{ Queue }{}, Tickets: token.NewTickets(k.TicketSecret, "t"), Entries: token.NewEntries(k.Entry, "t")}
	panics := func(name string, p Part) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: NewPart did not panic", name)
			}
		}()
		NewPart(o, p)
	}
	// poll without the notices' sign-up and withdrawal
	panics("a route dropped", Part{routes.Poll, func(p *products) []handlers { return []handlers{p.queue.PollHandlers()} }})
	// status also binding enqueue's route
	panics("another function's route", Part{routes.Status, func(p *products) []handlers {
		return []handlers{p.queue.StatusHandlers(), p.queue.EnqueueHandlers()}
	}})
}
