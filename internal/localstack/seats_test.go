package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestSeatPickerBackend drives the origin's /hold and /confirm against a fake
// waiting room: the confirm carries the origin credential and the
// Idempotency-Key, only the hold's booking session may confirm it, an order
// the store refuses (a newer token has the seat: 409 stale_order; another
// order, not cancelled, has it: 409 seat_sold) is cancelled, and the
// origin's cancel reaches its own record, so the seat sells again.
func TestSeatPickerBackend(t *testing.T) {
	var (
		mu       sync.Mutex
		fence    int64 = 500
		cancels  []string
		holds    = 999
		confirms []http.Header
	)
	room := http.NewServeMux()
	room.HandleFunc("POST /api/events/demo-api/holds", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer bs-1" && r.Header.Get("Authorization") != "Bearer bs-2" {
			writeJSON(w, http.StatusUnauthorized, apiErr("invalid_session", ""))
			return
		}
		mu.Lock()
		holds++
		tok := strconv.Itoa(holds)
		mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"event": "demo-api", "session": "demo-api:1", "token": tok,
			"seats": []string{"A1"}, "expiresAt": time.Now().Add(time.Minute)})
	})
	room.HandleFunc("POST /api/events/demo-api/holds/{token}/confirm", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		confirms = append(confirms, r.Header.Clone())
		tok := fence
		mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"type": "booking.order.confirmed", "event": "demo-api",
			"order": r.PathValue("token"), "session": "demo-api:1", "fencingToken": tok, "seats": []string{"A1"}})
	})
	room.HandleFunc("POST /api/events/demo-api/orders/{order}/cancel", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cancels = append(cancels, r.PathValue("order"))
		mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{})
	})
	wr := httptest.NewServer(room)
	defer wr.Close()

	ctx := context.Background()
	db, err := openOrderDB(ctx, filepath.Join(t.TempDir(), "orders.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mux := http.NewServeMux()
	newSeatPicker(wr.URL, func(room string) string { return "cred-" + room }, db, slog.New(slog.DiscardHandler)).routes(mux)
	post := func(path string, in any) (int, map[string]any) {
		b, _ := json.Marshal(in)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(b)))
		out := map[string]any{}
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	code := func(body map[string]any) any { e, _ := body["error"].(map[string]any); return e["code"] }

	if c, _ := post("/hold", map[string]string{"bookingSession": "bs-1", "seat": "A1"}); c != http.StatusCreated {
		t.Fatalf("hold: %d", c)
	}
	// Another visitor cannot confirm it.
	if c, b := post("/confirm", map[string]string{"bookingSession": "bs-2", "hold": "1000"}); c != http.StatusNotFound {
		t.Errorf("confirm by another session: %d %v", c, b)
	}
	if c, b := post("/confirm", map[string]string{"bookingSession": "bs-1", "hold": "1000"}); c != http.StatusCreated || b["order"] != "1000" {
		t.Fatalf("confirm: %d %v", c, b)
	}
	if h := confirms[0]; h.Get("Authorization") != "Bearer cred-demo-api" || h.Get("Idempotency-Key") != "demo-1000" {
		t.Errorf("confirm headers: %v", h)
	}
	if order, tok, _ := db.Seat(ctx, "demo-api", "A1"); order != "1000" || tok != 500 {
		t.Errorf("store: %q %d", order, tok)
	}

	// A second hold whose order comes back with a token the store has seen:
	// refused, cancelled, 409.
	post("/hold", map[string]string{"bookingSession": "bs-1", "seat": "A1"})
	mu.Lock()
	fence = 400
	mu.Unlock()
	// (order 1001 comes back with fencing token 400, older than the seat's 500)
	if c, b := post("/confirm", map[string]string{"bookingSession": "bs-1", "hold": "1001"}); c != http.StatusConflict || code(b) != "stale_order" {
		t.Errorf("stale confirm: %d %v", c, b)
	}
	if len(cancels) != 1 || cancels[0] != "1001" {
		t.Errorf("cancels = %v, want the stale order", cancels)
	}
	if order, tok, _ := db.Seat(ctx, "demo-api", "A1"); order != "1000" || tok != 500 {
		t.Errorf("store after the stale write: %q %d", order, tok)
	}

	// A kit that lost Redis sells A1 again, with a larger token: the store
	// keeps order 1000 (not cancelled), the new order is cancelled, 409.
	post("/hold", map[string]string{"bookingSession": "bs-1", "seat": "A1"})
	mu.Lock()
	fence = 9000
	mu.Unlock()
	if c, b := post("/confirm", map[string]string{"bookingSession": "bs-1", "hold": "1002"}); c != http.StatusConflict || code(b) != "seat_sold" {
		t.Errorf("an order over a standing one: %d %v", c, b)
	}
	if len(cancels) != 2 || cancels[1] != "1002" {
		t.Errorf("cancels = %v, want the second order cancelled", cancels)
	}
	if order, tok, _ := db.Seat(ctx, "demo-api", "A1"); order != "1000" || tok != 500 {
		t.Errorf("store after an order over a standing one: %q %d", order, tok)
	}

	// The origin's cancel reaches its own record: then A1 sells again.
	p := newSeatPicker(wr.URL, func(room string) string { return "cred-" + room }, db, slog.New(slog.DiscardHandler))
	if err := p.cancelOrder(ctx, "1000", "refund"); err != nil {
		t.Fatal(err)
	}
	post("/hold", map[string]string{"bookingSession": "bs-1", "seat": "A1"})
	if c, b := post("/confirm", map[string]string{"bookingSession": "bs-1", "hold": "1003"}); c != http.StatusCreated {
		t.Errorf("a new order after the cancel: %d %v", c, b)
	}
	if order, tok, _ := db.Seat(ctx, "demo-api", "A1"); order != "1003" || tok != 9000 {
		t.Errorf("store after the cancel and a new order: %q %d", order, tok)
	}
}
