package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// reconcile compares the kit's sold items with the origin's JSON lines and
// prints every difference: a seat the origin lacks, a seat in another order,
// a seat of a cancelled order, units that differ; a record that agrees is 0.
func TestBookingReconcile(t *testing.T) {
	s, rdb := stackRedis(t)
	ctx := context.Background()
	ev := redistest.Room(t) // an event of its own: the Redis is shared, and a rerun must not meet the last run's orders
	if code, _, m := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/events/"+ev, adminKey,
		map[string]any{"seats": []string{"A1", "A2", "A3", "A4"}, "stock": map[string]int64{"ga": 10}, "sessionLimit": 10}); code != 200 {
		t.Fatalf("define: %d %v", code, m)
	}
	eng := bookingdb.New(rdb)
	buy := buyer(t, eng, ev)
	o1 := buy(booking.Request{Seats: []string{"A1"}, Units: map[string]int64{"ga": 2}})
	o2 := buy(booking.Request{Seats: []string{"A2"}})
	o3 := buy(booking.Request{Seats: []string{"A3"}})
	o4 := buy(booking.Request{Seats: []string{"A4"}})
	if _, err := eng.Cancel(ctx, ev, o3, "refund"); err != nil {
		t.Fatal(err)
	}
	line := func(seat, order string) string {
		return `{"event":"` + ev + `","seat":"` + seat + `","order":"` + order + `"}`
	}
	write := func(lines ...string) string {
		p := filepath.Join(t.TempDir(), "origin.jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	agree := write(line("A1", o1), `{"event":"`+ev+`","sku":"ga","units":2,"order":"`+o1+`"}`, line("A2", o2), line("A4", o4),
		`{"event":"another","seat":"A9","order":"1"}`)
	out, errs, code := vestibule(t, s, "booking", "reconcile", ev, "--origin", agree)
	if code != 0 || !strings.Contains(out, "no differences: 3 seats and 2 units sold in 3 orders") {
		t.Fatalf("a record that agrees: %d %q %q", code, out, errs)
	}
	// Seeded: A2 recorded under another order, A3 recorded though cancelled, A4 missing, 1 unit short.
	seeded := write(line("A1", o1), `{"event":"`+ev+`","sku":"ga","units":1,"order":"`+o1+`"}`, line("A2", "999"), line("A3", o3))
	out, errs, code = vestibule(t, s, "booking", "reconcile", ev, "--origin", seeded)
	want := []string{
		"seat A2: sold by the kit in order " + o2 + ", the origin recorded order 999",
		"seat A3: in the origin's record for order " + o3 + ", cancelled in the kit",
		"seat A4: sold by the kit in order " + o4 + ", not in the origin's record",
		"order " + o1 + " sku ga: the kit sold 2 units, the origin recorded 1",
	}
	if code != 1 || strings.TrimSpace(out) != strings.Join(want, "\n") || !strings.Contains(errs, "4 differences") {
		t.Fatalf("seeded differences: %d\n%s\nwant\n%s\n%s", code, out, strings.Join(want, "\n"), errs)
	}
	_, errs, code = vestibule(t, s, "booking", "reconcile", ev)
	if code != 2 || !strings.Contains(errs, "--origin") {
		t.Fatalf("without --origin: %d %q", code, errs)
	}
	_, errs, code = vestibule(t, s, "booking", "reconcile", ev, "--origin", write(`{"seat":"A1"}`))
	if code != 1 || !strings.Contains(errs, "line 1") {
		t.Fatalf("a bad line: %d %q", code, errs)
	}
}

// buyer returns a function that holds and confirms req in event ev for one
// visitor, straight on the engine, and returns the order's id.
func buyer(t *testing.T, eng *bookingdb.Engine, ev string) func(booking.Request) string {
	return func(req booking.Request) string {
		t.Helper()
		ctx := context.Background()
		h, err := eng.Hold(ctx, ev, "v:1", req)
		if err != nil {
			t.Fatal(err)
		}
		o, err := eng.Confirm(ctx, ev, "v:1", h.Token, "k"+strconv.FormatInt(h.Token, 10))
		if err != nil {
			t.Fatal(err)
		}
		return o.Order
	}
}
