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

	admitted := func() map[string]any {
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
