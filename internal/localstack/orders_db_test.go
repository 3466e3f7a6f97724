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

// TestSeatOrdersFencing checks the origin's own fencing guard on the real
// SQLite driver and a file: a token not newer than the seat's last is refused,
// a newer one replaces it, and of racing writers only the largest token stays.
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
	// A newer one (the seat cancelled and sold again) is accepted.
	if err := db.Record(ctx, "ev", "A1", 101, "101"); err != nil {
		t.Fatalf("newer write: %v", err)
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

	// Racing writers: whatever the order, the largest token is what stays.
	var wg sync.WaitGroup
	for tok := int64(200); tok < 232; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.Record(ctx, "ev", "B1", tok, "o"); err != nil && !errors.Is(err, ErrStaleWrite) {
				t.Errorf("token %d: %v", tok, err)
			}
		}()
	}
	wg.Wait()
	if _, tok, err := db.Seat(ctx, "ev", "B1"); err != nil || tok != 231 {
		t.Errorf("after the race: token %d (%v), want 231", tok, err)
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
}
