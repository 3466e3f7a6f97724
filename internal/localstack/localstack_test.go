package localstack_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// The whole journey through plain HTTP: the page's API calls, the ticks the
// stack runs by itself, and the hand-integration example origin redeeming the
// token server to server — on the embedded Redis and on a real one. (The
// gated demo site's journey is gate_test.go's.)
func TestStack(t *testing.T) {
	for name, url := range map[string]string{
		"embedded": "",
		"redis":    "redis://" + redistest.Own(t).Options().Addr,
	} {
		t.Run(name, func(t *testing.T) {
			static := t.TempDir()
			os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
			s, err := localstack.Start(context.Background(), localstack.Options{
				RedisURL: url, StaticDir: static, KeyDir: t.TempDir(), TickInterval: 50 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if len(s.AdminKey()) < 16 {
				t.Fatalf("admin key %q", s.AdminKey())
			}

			resp, err := http.Get(s.URL() + "/")
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(page, []byte("<title>wait</title>")) || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Fatalf("static page: %d %q %v", resp.StatusCode, page, resp.Header)
			}

			code, _, cfg := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/demo", s.AdminKey(), "")
			c, _ := cfg["config"].(map[string]any)
			if code != 200 || c["originUrl"] != s.OriginURL()+"/" || c["maxActive"] != float64(5) || c["gate"] != true {
				t.Fatalf("demo room: %d %v", code, cfg)
			}
			code, _, cfg = testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/demo-api", s.AdminKey(), "")
			c, _ = cfg["config"].(map[string]any)
			if code != 200 || c["originUrl"] != s.ManualOriginURL()+"/" || c["gate"] != false {
				t.Fatalf("demo-api room: %d %v", code, cfg)
			}
			if code, _, _ := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms", "wrong-key-wrong-key", ""); code != 401 {
				t.Fatalf("admin with a wrong key: %d", code)
			}

			code, _, e := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/demo-api/enqueue", "", "")
			ticket, _ := e["ticket"].(string)
			if code != 200 || ticket == "" {
				t.Fatalf("enqueue: %d %v", code, e)
			}
			var tok string
			deadline := time.Now().Add(5 * time.Second)
			for tok == "" && time.Now().Before(deadline) {
				time.Sleep(pollpolicy.MinInterval) // as the page does: no faster than the engine allows
				code, _, p := testkit.CallJSON(t, "GET", s.URL()+"/api/rooms/demo-api/poll", ticket, "")
				if code != 200 {
					t.Fatalf("poll: %d %v", code, p)
				}
				tok, _ = p["entryToken"].(string)
				time.Sleep(50 * time.Millisecond)
			}
			if tok == "" {
				t.Fatal("not admitted by the stack's own ticks")
			}

			// The hand-integration origin: its page, then its backend redeeming the token.
			resp, err = http.Get(s.ManualOriginURL() + "/")
			if err != nil {
				t.Fatal(err)
			}
			page, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Contains(page, []byte("location.hash")) || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Fatalf("origin page: %v", resp.Header)
			}
			body := `{"token":"` + tok + `"}`
			code, _, sess := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/session", "", body)
			if code != 200 || sess["room"] != "demo-api" || sess["visitor"] == "" || sess["sessionExpiresAt"] == nil {
				t.Fatalf("origin session: %d %v", code, sess)
			}
			if code, _, r := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/session", "", body); code != 409 {
				t.Fatalf("replay through the origin: %d %v", code, r)
			}
			if code, _, r := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/complete", "", body); code != 200 {
				t.Fatalf("complete through the origin: %d %v", code, r)
			}

			// A room that sends its visitors to another site: the example origin
			// redeems none of its tokens (it is not that room's origin).
			other := redistest.Room(t)
			if code, _, r := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/rooms/"+other, s.AdminKey(),
				`{"originUrl":"https://elsewhere.example/","mode":"passthrough"}`); code != 200 {
				t.Fatalf("PUT other room: %d %v", code, r)
			}
			_, _, oe := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/"+other+"/enqueue", "", "")
			otherTok, _ := oe["entryToken"].(string)
			if otherTok == "" {
				t.Fatalf("passthrough enqueue gave no entry token: %v", oe)
			}
			if code, _, r := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/session", "", `{"token":"`+otherTok+`"}`); code != 403 {
				t.Fatalf("another room's token at the demo origin: %d %v, want 403", code, r)
			}
			if code, _, _ := testkit.CallJSON(t, "GET", s.URL()+"/api/nope", "", ""); code != 404 {
				t.Fatalf("unknown API route: %d", code)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if _, err := http.Get(s.URL() + "/"); err == nil {
				t.Fatal("still serving after Close")
			}
		})
	}
}

// The local stack refuses a guessable admin key.
func TestShortAdminKeyRefused(t *testing.T) {
	_, err := localstack.Start(context.Background(), localstack.Options{KeyDir: t.TempDir(), AdminKey: "short"})
	if err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("a 5-character admin key: %v", err)
	}
}

// The path form of a room's page serves the page itself, as CloudFront's
// function does in AWS; other unknown paths stay 404.
func TestRoomPathServesThePage(t *testing.T) {
	static := t.TempDir()
	page := "<!doctype html><title>the waiting page</title>"
	os.WriteFile(filepath.Join(static, "index.html"), []byte(page), 0o644)
	s, err := localstack.Start(context.Background(), localstack.Options{StaticDir: static, KeyDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/r/demo", "/rooms/spring-concert"} {
		if code, body := get(p); code != 200 || body != page {
			t.Errorf("GET %s = %d %q, want the page", p, code, body)
		}
	}
	if code, _ := get("/nothing-here"); code != 404 {
		t.Errorf("GET /nothing-here = %d, want 404", code)
	}
}

// make dev serves the booking kit too: an event defined through the admin API
// shows its seats on the public availability route.
func TestBookingKitLocally(t *testing.T) {
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL: "redis://" + redistest.Own(t).Options().Addr, StaticDir: t.TempDir(), KeyDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := redistest.Room(t)
	if code, _, r := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/events/"+ev, s.AdminKey(), `{"room":"demo","seats":["A1","A2"],"stock":{"parking":3},"sessionLimit":4}`); code != 200 {
		t.Fatalf("define event: %d %v", code, r)
	}
	code, _, view := testkit.CallJSON(t, "GET", s.URL()+"/api/events/"+ev, "", "")
	if code != 200 || !strings.Contains(fmt.Sprint(view), "A1") {
		t.Fatalf("availability: %d %v", code, view)
	}
}
