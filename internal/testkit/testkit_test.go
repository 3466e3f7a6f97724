package testkit_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := testkit.FixedClock(t0)
	if !c.Now().Equal(t0) {
		t.Fatalf("fixed clock at %v, want %v", c.Now(), t0)
	}
	c.Advance(90 * time.Second)
	if want := t0.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance %v, want %v", c.Now(), want)
	}
	c.Set(t0)
	if !c.Now().Equal(t0) {
		t.Fatalf("after Set %v, want %v", c.Now(), t0)
	}
	s := testkit.SkewedClock()
	s.Advance(time.Hour)
	if d := time.Until(s.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("skewed clock %v ahead, want an hour", d)
	}
	e := testkit.EngineClock()
	if now := e.Now(); now.Nanosecond() != 0 || now.Location() != time.UTC || time.Since(now) > 2*time.Second {
		t.Fatalf("engine clock at %v, want now in UTC on a whole second", now)
	}
}

func TestFreePortAndWaitFor(t *testing.T) {
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d was not free: %v", port, err)
	}
	l.Close()
	var n atomic.Int32
	if !testkit.WaitFor(time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("WaitFor gave up on a condition that came true")
	}
	if testkit.WaitFor(60*time.Millisecond, func() bool { return false }) {
		t.Fatal("WaitFor reported a condition that never held")
	}
}

func TestCallJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.Header.Get("Authorization")+" "+r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]string{"body": string(b)})
	}))
	defer srv.Close()
	for _, c := range []struct {
		bearer   string
		body     any
		seen     string
		received string
	}{
		{"", nil, "GET", ""}, // header values lose their trailing spaces
		{"k", `{"a":1}`, "GET Bearer k application/json", `{"a":1}`},
		{"", map[string]int{"a": 1}, "GET  application/json", `{"a":1}`},
	} {
		code, h, out := testkit.CallJSON(t, "GET", srv.URL, c.bearer, c.body)
		if code != http.StatusCreated || h.Get("X-Seen") != c.seen || out["body"] != c.received {
			t.Errorf("%v: %d %q %v; want 201 %q %q", c.body, code, h.Get("X-Seen"), out, c.seen, c.received)
		}
	}
}

// fakeTB records what Missing did.
type fakeTB struct{ failed, skipped string }

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }
func (f *fakeTB) Skipf(format string, args ...any)  { f.skipped = fmt.Sprintf(format, args...) }

// A missing tool fails the test under CI and skips it elsewhere.
func TestMissing(t *testing.T) {
	t.Setenv("CI", "")
	var local fakeTB
	testkit.Missing(&local, "node", "install node")
	if local.skipped == "" || local.failed != "" {
		t.Errorf("outside CI: skipped %q, failed %q; want a skip", local.skipped, local.failed)
	}
	t.Setenv("CI", "true")
	var ci fakeTB
	testkit.Missing(&ci, "node", "install node")
	if ci.failed == "" || ci.skipped != "" || !strings.Contains(ci.failed, "install node") {
		t.Errorf("in CI: failed %q, skipped %q; want a failure naming the install", ci.failed, ci.skipped)
	}
}

// The Makefile's deps-axe installs the axe-core version AxeCore names.
func TestAxeCorePinnedOnce(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	want := "AXE_CORE_VERSION := " + testkit.AxeCoreVersion + "\n"
	if !strings.Contains(string(b), want) {
		t.Fatalf("the Makefile does not pin axe-core %s (%q)", testkit.AxeCoreVersion, want)
	}
}
