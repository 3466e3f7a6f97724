package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// sampledFixture is the fixture with Options.LogSample = api.SampleLog(f).
func sampledFixture(t *testing.T, f float64) *apitest.Fixture {
	t.Helper()
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	q := app.NewEngine(redistest.Single(t), clk.Now)
	return apitest.NewFixtureOn(t, q, clk, func(_ *token.Keys, o *api.Options) { o.LogSample = api.SampleLog(f) })
}

// requestLines are the routes and statuses of the request lines logged since the last call.
func requestLines(f *apitest.Fixture) []string {
	f.T.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(f.Logs.String()), "\n") {
		var line struct {
			Msg, Route string
			Status     int
		}
		if l == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			f.T.Fatalf("log line %q: %v", l, err)
		}
		if line.Msg == "request" {
			out = append(out, fmt.Sprintf("%s %d", line.Route, line.Status))
		}
	}
	f.Logs.Reset()
	return out
}

// With LOG_SAMPLE=0 a successful poll or status read writes no request line;
// a failed poll does, and so does every request of another route.
func TestLogSampleNone(t *testing.T) {
	f := sampledFixture(t, 0)
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	f.Logs.Reset()
	e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	f.Clock.Advance(pollpolicy.MinInterval)
	apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket"))), 200, "")
	apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/status", "", nil), 200, "")
	apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer("not-a-ticket")), 401, "")
	got := strings.Join(requestLines(f), ", ")
	want := "POST /api/rooms/{room}/enqueue 200, GET /api/rooms/{room}/poll 401"
	if got != want {
		t.Fatalf("request lines %q, want %q", got, want)
	}
}

// With LOG_SAMPLE=1 every request writes its line.
func TestLogSampleAll(t *testing.T) {
	f := sampledFixture(t, 1)
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	f.Logs.Reset()
	e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	for range 3 {
		f.Clock.Advance(pollpolicy.MinInterval)
		apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket"))), 200, "")
	}
	apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/status", "", nil), 200, "")
	if got := len(requestLines(f)); got != 5 {
		t.Fatalf("%d request lines for 5 requests", got)
	}
}

// With LOG_SAMPLE=0.01, 10,000 successful polls log about 100 lines: the
// count is Binomial(10000, 0.01), mean 100, standard deviation 9.95; the bound
// is five deviations either side.
func TestLogSampleFraction(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 polls")
	}
	f := sampledFixture(t, 0.01)
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	tok := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil).Str("ticket")
	f.Logs.Reset()
	const n = 10_000
	for i := range n {
		f.Clock.Advance(pollpolicy.MinInterval)
		if r := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(tok)); r.StatusCode != 200 {
			t.Fatalf("poll %d: %d %s", i, r.StatusCode, r.Body)
		}
		if s := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(tok)); s.StatusCode == 200 {
			t.Fatalf("poll %d again at once: %d", i, s.StatusCode) // too early: an error, always logged
		}
	}
	lines := requestLines(f)
	ok, errs := 0, 0
	for _, l := range lines {
		if strings.HasSuffix(l, " 200") {
			ok++
		} else {
			errs++
		}
	}
	if errs != n {
		t.Errorf("%d error lines for %d failed polls", errs, n)
	}
	if ok < 50 || ok > 150 {
		t.Errorf("%d of %d successful polls logged at LOG_SAMPLE=0.01, want 100 ± 50", ok, n)
	}
	t.Logf("%d of %d successful polls logged", ok, n)
}

// SampleLog's ends are exact and its middle is a fraction.
func TestSampleLog(t *testing.T) {
	for _, c := range []struct {
		f        float64
		min, max int
	}{{0, 0, 0}, {-1, 0, 0}, {1, 1000, 1000}, {2, 1000, 1000}, {0.5, 400, 600}} {
		s, n := api.SampleLog(c.f), 0
		for range 1000 {
			if s() {
				n++
			}
		}
		if n < c.min || n > c.max {
			t.Errorf("SampleLog(%v): %d of 1000, want %d to %d", c.f, n, c.min, c.max)
		}
	}
}

// The request log carries only a valid room id, never the raw path segment
// (issue: a 100,000-character id made a 100 KB log line).
func TestLogCarriesOnlyValidRoomIDs(t *testing.T) {
	var buf bytes.Buffer
	k := apitest.Keys(t)
	h := api.New(api.Options{Queue: failing{nil}, Tickets: token.NewTickets(k.TicketSecret, "vestibule"),
		Entries: token.NewEntries(k.Entry, "vestibule"), AdminAuth: api.AdminKey, AdminKey: apitest.AdminKey,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	long := strings.Repeat("x", 100_000)
	r := apitest.Send(t, h, apitest.Event("GET", "/api/rooms/"+long+"/status", "", nil))
	apitest.WantStatus(t, r, 400, "invalid_room")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log: %v", err)
	}
	if _, ok := line["room"]; ok || buf.Len() > 1000 {
		t.Fatalf("the log line carries the raw room (%d bytes): %.200s", buf.Len(), buf.String())
	}
}
