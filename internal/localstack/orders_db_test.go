package localstack

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestSeatOrdersFencing checks the origin's own guard on the real SQLite
// driver and a file: a token not newer than the seat's last is refused, a
// confirmed order is never replaced by another unless it was cancelled (then
// only by a newer token), and of racing writers one order gets the seat.
func TestSeatOrdersFencing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.db")
	db, err := openOrderDB(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	if err := db.Record(ctx, "ev", "A1", 100, "100"); err != nil {
		t.Fatalf("first write: %v", err)
	}
	// A stale token (an order confirmed before, written late) and the same token again.
	for _, tok := range []int64{99, 100} {
		if err := db.Record(ctx, "ev", "A1", tok, "late"); !errors.Is(err, ErrStaleWrite) {
			t.Errorf("token %d: err = %v, want ErrStaleWrite", tok, err)
		}
	}
	if order, tok, _ := db.Seat(ctx, "ev", "A1"); order != "100" || tok != 100 {
		t.Errorf("after stale writes: %q %d, want 100 100", order, tok)
	}
	// A newer token of another order while the seat's order stands (what a
	// kit that lost Redis would send) replaces nothing.
	if err := db.Record(ctx, "ev", "A1", 5000, "5000"); !errors.Is(err, ErrSeatSold) {
		t.Fatalf("another order over a confirmed one: %v, want ErrSeatSold", err)
	}
	// Once the order is cancelled, a newer one is accepted, an older one not.
	if n, err := db.Cancel(ctx, "ev", "100"); err != nil || n != 1 {
		t.Fatalf("cancel: %d, %v", n, err)
	}
	if n, _ := db.Cancel(ctx, "ev", "100"); n != 0 {
		t.Fatalf("a second cancel marked %d seats", n)
	}
	if err := db.Record(ctx, "ev", "A1", 99, "99"); !errors.Is(err, ErrStaleWrite) {
		t.Fatalf("an older order over a cancelled one: %v, want ErrStaleWrite", err)
	}
	if err := db.Record(ctx, "ev", "A1", 101, "101"); err != nil {
		t.Fatalf("newer write after the cancel: %v", err)
	}
	// Another seat and another event are other rows.
	if err := db.Record(ctx, "ev", "A2", 5, "5"); err != nil {
		t.Fatal(err)
	}
	if err := db.Record(ctx, "other", "A1", 5, "5"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// The file keeps it: reopened, the guard still holds.
	db, err = openOrderDB(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Record(ctx, "ev", "A1", 100, "again"); !errors.Is(err, ErrStaleWrite) {
		t.Errorf("after reopen: err = %v, want ErrStaleWrite", err)
	}

	// Racing writers of different orders for one seat: exactly one gets it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for tok := int64(200); tok < 232; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := strconv.FormatInt(tok, 10)
			err := db.Record(ctx, "ev", "B1", tok, order)
			switch {
			case err == nil:
				mu.Lock()
				won = append(won, order)
				mu.Unlock()
			case !errors.Is(err, ErrStaleWrite) && !errors.Is(err, ErrSeatSold):
				t.Errorf("token %d: %v", tok, err)
			}
		}()
	}
	wg.Wait()
	if order, _, err := db.Seat(ctx, "ev", "B1"); err != nil || len(won) != 1 || order != won[0] {
		t.Errorf("after the race: %q (%v), winners %v: want one", order, err, won)
	}
}

// The guard exports what it recorded as the JSON lines reconcile reads: one
// line per seat of the event, with its order and token, no other event's.
func TestSeatOrdersExport(t *testing.T) {
	ctx := context.Background()
	db, err := openOrderDB(ctx, filepath.Join(t.TempDir(), "orders.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range []struct {
		ev, seat string
		tok      int64
	}{{"ev", "A2", 7}, {"ev", "A1", 5}, {"ev-2", "A1", 9}, {"e", "v/A3", 1}} {
		if err := db.Record(ctx, r.ev, r.seat, r.tok, strconv.FormatInt(r.tok, 10)); err != nil {
			t.Fatal(err)
		}
	}
	var buf strings.Builder
	if err := db.Export(ctx, &buf, "ev"); err != nil {
		t.Fatal(err)
	}
	want := `{"event":"ev","seat":"A1","order":"5","fencingToken":5}` + "\n" + `{"event":"ev","seat":"A2","order":"7","fencingToken":7}` + "\n"
	if buf.String() != want {
		t.Fatalf("export:\n%s\nwant:\n%s", buf.String(), want)
	}
	// A cancelled order's seats are no longer sold: out of the export.
	if _, err := db.Cancel(ctx, "ev", "7"); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := db.Export(ctx, &buf, "ev"); err != nil || buf.String() != `{"event":"ev","seat":"A1","order":"5","fencingToken":5}`+"\n" {
		t.Fatalf("export after a cancel: %q, %v", buf.String(), err)
	}
}
