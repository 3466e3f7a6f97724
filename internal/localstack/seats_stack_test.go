package localstack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestStackSeats: make dev's default, the embedded Redis, runs the seat
// picker's whole path over plain HTTP: admitted to demo-api, the origin's
// session carries a bookingSession, /seats shows A1–A8, /hold holds A2 (a
// second hold of A2 is 409 seat_taken), /confirm books it and the public
// view says sold.
func TestStackSeats(t *testing.T) {
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
	s, err := localstack.Start(context.Background(), localstack.Options{
		StaticDir: static, KeyDir: filepath.Join(t.TempDir(), "keys"), TickInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	admitted := func() map[string]any { return admittedToDemo(t, s) }
	body := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	a, b := admitted(), admitted()

	code, _, view := testkit.CallJSON(t, "GET", s.ManualOriginURL()+"/seats", "", "")
	seats, _ := view["seats"].(map[string]any)
	if code != 200 || len(seats) != len(localstack.DemoSeats) || seats["A2"] != "available" {
		t.Fatalf("seats: %d %v", code, view)
	}
	code, _, hold := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/hold", "", body(map[string]any{"bookingSession": a["bookingSession"], "seat": "A2"}))
	if code != 201 || hold["token"] == nil || hold["expiresAt"] == nil {
		t.Fatalf("hold: %d %v", code, hold)
	}
	if exp, _ := time.Parse(time.RFC3339, hold["expiresAt"].(string)); time.Until(exp) < 100*time.Second || time.Until(exp) > 121*time.Second {
		t.Errorf("hold expires in %v, want about 120 s", time.Until(exp))
	}
	code, _, taken := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/hold", "", body(map[string]any{"bookingSession": b["bookingSession"], "seat": "A2"}))
	if e, _ := taken["error"].(map[string]any); code != 409 || e["code"] != "seat_taken" {
		t.Fatalf("second hold of A2: %d %v", code, taken)
	}
	code, _, order := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/confirm", "", body(map[string]any{"bookingSession": a["bookingSession"], "hold": hold["token"]}))
	if code != 201 || order["order"] != hold["token"] || order["stored"] != true {
		t.Fatalf("confirm: %d %v", code, order)
	}
	_, _, view = testkit.CallJSON(t, "GET", s.URL()+"/api/events/demo-api", "", "")
	if seats, _ := view["seats"].(map[string]any); seats["A2"] != "sold" {
		t.Errorf("after confirm: %v", view)
	}
}

// admittedToDemo joins the demo-api room, waits for the entry and opens the
// hand-integration origin's session: its answer carries the bookingSession.
func admittedToDemo(t *testing.T, s *localstack.Stack) map[string]any {
	t.Helper()
	_, _, e := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/demo-api/enqueue", "", "")
	ticket, _ := e["ticket"].(string)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(pollpolicy.MinInterval)
		_, _, p := testkit.CallJSON(t, "GET", s.URL()+"/api/rooms/demo-api/poll", ticket, "")
		if tok, _ := p["entryToken"].(string); tok != "" {
			code, _, sess := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/session", "", `{"token":"`+tok+`"}`)
			if code != 200 || sess["bookingSession"] == nil {
				t.Fatalf("origin session: %d %v", code, sess)
			}
			return sess
		}
	}
	t.Fatal("not admitted")
	return nil
}

// buyDemoSeat holds and confirms a seat at the demo origin for a visitor:
// the order, recorded in the origin's store.
func buyDemoSeat(t *testing.T, s *localstack.Stack, visitor map[string]any, seat string) string {
	t.Helper()
	body := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	code, _, hold := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/hold", "", body(map[string]any{"bookingSession": visitor["bookingSession"], "seat": seat}))
	if code != 201 {
		t.Fatalf("hold %s: %d %v", seat, code, hold)
	}
	code, _, order := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/confirm", "", body(map[string]any{"bookingSession": visitor["bookingSession"], "hold": hold["token"]}))
	if code != 201 || order["stored"] != true {
		t.Fatalf("confirm %s: %d %v", seat, code, order)
	}
	return order["order"].(string)
}

// A restart of make dev on its embedded Redis, which starts empty, sells no
// seat twice: the demo event comes back closed to holds and is rebuilt from
// the demo origin's own store before the origin serves, so a seat sold
// before the restart is sold after it, and its holds say so.
func TestDemoRestartOnAnEmptyRedisSellsNothingTwice(t *testing.T) {
	dir := t.TempDir()
	start := func() *localstack.Stack {
		t.Helper()
		s, err := localstack.Start(context.Background(), localstack.Options{
			StaticDir: t.TempDir(), KeyDir: filepath.Join(dir, "keys"), TickInterval: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	order := buyDemoSeat(t, s, admittedToDemo(t, s), "A3")
	s.Close()

	for restart := range 2 { // a second restart on an empty Redis too
		s = start()
		_, _, view := testkit.CallJSON(t, "GET", s.URL()+"/api/events/demo-api", "", "")
		if seats, _ := view["seats"].(map[string]any); seats["A3"] != "sold" || view["recovering"] != nil {
			t.Fatalf("restart %d: the demo event: %v", restart, view)
		}
		body, _ := json.Marshal(map[string]any{"bookingSession": admittedToDemo(t, s)["bookingSession"], "seat": "A3"})
		code, _, taken := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/hold", "", string(body))
		if e, _ := taken["error"].(map[string]any); code != 409 || e["code"] != "seat_taken" {
			t.Fatalf("restart %d: a hold of the seat sold before: %d %v", restart, code, taken)
		}
		code, _, g := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/events/demo-api", s.AdminKey(), nil)
		if rs, _ := g["restore"].(map[string]any); code != 200 || rs["state"] != "reopened" || rs["rebuiltOrders"] != float64(1) {
			t.Fatalf("restart %d: the admin view: %d %v (order %s)", restart, code, g, order)
		}
		s.Close()
	}
}
