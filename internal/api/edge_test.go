package api_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// withEdge is a handler over the fixture's engine and keys that, as deployed,
// requires CloudFront's origin header on the public routes.
func withEdge(f *apitest.Fixture, g *api.EdgeGuard) *api.Handler {
	return api.New(api.Options{
		Queue: f.Q, Tickets: f.Tickets, Entries: f.Entries, Origins: f.Origins,
		AdminAuth: api.AdminKey, AdminKey: apitest.AdminKey, Edge: g,
		Clock: f.Clock.Now, Jitter: func() float64 { return 1 },
		Logger: slog.New(slog.NewJSONHandler(f.Logs, nil)),
	})
}

// The public routes answer only requests carrying the origin secret, current
// or previous, with a JSON 403 otherwise; admin routes never need it; without
// a guard (make dev, tests) nothing is required.
func TestPublicRoutesNeedTheOriginHeader(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	h := withEdge(f, api.NewEdgeGuard([]string{apitest.EdgeCurrent, apitest.EdgePrevious}, nil, nil))
	enqueue := func(secret string) apitest.Response {
		return apitest.Send(t, h, apitest.ViaCloudFront(apitest.Event("POST", "/api/rooms/"+id+"/enqueue", "", nil), secret, ""))
	}

	// WHEN a public route is called without the header, or with a wrong one
	for _, secret := range []string{"", "wrong", apitest.EdgeCurrent + "x", " " + apitest.EdgeCurrent} {
		r := enqueue(secret)
		// THEN it is refused with 403 forbidden, in the API's error shape
		apitest.WantStatus(t, r, 403, "forbidden")
		if r.JSON == nil {
			t.Fatalf("403 is not JSON: %v %q", r.Headers, r.Body)
		}
	}
	for _, path := range []string{"/api/rooms/" + id + "/status", "/api/jwks.json", "/api/rooms/" + id + "/poll"} {
		apitest.WantStatus(t, apitest.Send(t, h, apitest.Event("GET", path, "", nil)), 403, "forbidden")
	}
	apitest.WantStatus(t, apitest.Send(t, h, apitest.Event("POST", "/api/consume", `{"token":"x"}`, nil)), 403, "forbidden")

	// WHEN it carries the current or the previous value THEN it is served
	apitest.WantStatus(t, enqueue(apitest.EdgeCurrent), 200, "")
	apitest.WantStatus(t, enqueue(apitest.EdgePrevious), 200, "")
	apitest.WantStatus(t, apitest.Send(t, h, apitest.ViaCloudFront(apitest.Event("GET", "/api/rooms/"+id+"/status", "", nil), apitest.EdgeCurrent, "")), 200, "")

	// and admin routes need their own credential, not the origin header
	apitest.WantStatus(t, apitest.Send(t, h, apitest.Event("GET", "/api/admin/rooms/"+id, "", apitest.Bearer(apitest.AdminKey))), 200, "")
	apitest.WantStatus(t, apitest.Send(t, h, apitest.Event("GET", "/api/admin/rooms/"+id, "", nil)), 401, "unauthorized")

	// and without a guard (the local stack) no header is needed
	apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil), 200, "")
	// and the secret never reaches the log
	if s := f.Logs.String(); strings.Contains(s, apitest.EdgeCurrent) || strings.Contains(s, apitest.EdgePrevious) {
		t.Fatal("the origin secret is in the log")
	}
}

// Behind CloudFront every request comes from a few edge addresses: the join
// limit keys on CloudFront-Viewer-Address when the origin header proves the
// request came through CloudFront, and on the source address otherwise, so a
// spoofed viewer address buys nothing.
func TestEnqueueLimitKeysOnTheViewerAddress(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"clientEnqueuePerMinute":60,"originUrl":"https://origin.example/"}`) // burst 6
	h := withEdge(f, api.NewEdgeGuard([]string{apitest.EdgeCurrent}, nil, nil))
	join := func(h *api.Handler, sourceIP, secret, viewer string) apitest.Response {
		ev := apitest.ViaCloudFront(apitest.Event("POST", "/api/rooms/"+id+"/enqueue", "", nil), secret, viewer)
		ev.RequestContext.HTTP.SourceIP = sourceIP
		return apitest.Send(t, h, ev)
	}
	const edge = "130.176.0.1" // one CloudFront edge server, in front of everybody

	// GIVEN twenty visitors behind one edge server, each with an address of their own
	// (in IPv6, a /64 of their own: the limit counts a /64 as one client)
	// THEN all of them join (the source address alone would have stopped the seventh)
	for i := 0; i < 20; i++ {
		viewer := []string{"198.51.100.%d:4431", "2001:db8:%x::1:50123", "[2001:db8:1:%x::1]:443"}[i%3]
		apitest.WantStatus(t, join(h, edge, apitest.EdgeCurrent, fmt.Sprintf(viewer, i+1)), 200, "")
	}
	// GIVEN one visitor reaching several edge servers THEN the limit still holds them to the burst
	joined := 0
	for i := 0; i < 12; i++ {
		if join(h, fmt.Sprintf("130.176.0.%d", i+2), apitest.EdgeCurrent, "203.0.113.50:1234").StatusCode == 200 {
			joined++
		}
	}
	if joined != 6 {
		t.Fatalf("one viewer joined %d times through several edges, want the burst of 6", joined)
	}
	// GIVEN an IPv4-mapped or bracketed form of that same viewer THEN it is the same client
	apitest.WantStatus(t, join(h, edge, apitest.EdgeCurrent, "[::ffff:203.0.113.50]:9"), 429, "rate_limited")

	// GIVEN requests straight to the API with spoofed viewer addresses and no origin secret
	// THEN the guarded handler refuses them
	apitest.WantStatus(t, join(h, "192.0.2.77", "", "198.51.100.250:1"), 403, "forbidden")
	// and the local handler (no guard) ignores the header and keys on the source address
	joined = 0
	for i := 0; i < 12; i++ {
		if join(f.H, "192.0.2.77", "", fmt.Sprintf("198.51.100.%d:1", 100+i)).StatusCode == 200 {
			joined++
		}
	}
	if joined != 6 {
		t.Fatalf("spoofed viewer addresses got %d joins from one source, want the burst of 6", joined)
	}
	// and an unparseable viewer address through CloudFront falls back to the source address
	for i := 0; i < 6; i++ {
		apitest.WantStatus(t, join(h, "130.176.9.9", apitest.EdgeCurrent, "not-an-address"), 200, "")
	}
	apitest.WantStatus(t, join(h, "130.176.9.9", apitest.EdgeCurrent, "garbage:port"), 429, "rate_limited")
}

func TestParseViewerAddress(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"198.51.100.10:46532", "198.51.100.10"},
		{" 198.51.100.10:1 ", "198.51.100.10"},
		{"2001:db8::1:46532", "2001:db8::1"},
		{"2a02:1234:5678:9abc:def0:1234:5678:9abc:443", "2a02:1234:5678:9abc:def0:1234:5678:9abc"},
		{"[2001:db8::1]:46532", "2001:db8::1"},
		{"::ffff:198.51.100.10:80", "198.51.100.10"},
		{"198.51.100.10", ""}, // no port: CloudFront always sends one
		{"", ""},
		{":443", ""},
		{"198.51.100.10:", ""},
		{"198.51.100.10:http", ""},
		{"198.51.100.10:123456", ""},
		{"999.1.1.1:80", ""},
		{"fe80::1%eth0:80", ""},
		{"[2001:db8::1]", ""},
		{"example.com:443", ""},
	} {
		a, ok := api.ParseViewerAddress(tc.in)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tc.want {
			t.Errorf("ParseViewerAddress(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// After a rotation CloudFront sends a value an older instance has never seen:
// the guard reloads (at most once a minute) and accepts it; a guess costs at
// most one reload a minute; a failed reload keeps the values it had.
func TestEdgeGuardReloadsAfterARotation(t *testing.T) {
	clk := testkit.FixedClock(time.Unix(1_800_000_000, 0))
	reloads := 0
	var next []string
	var fail error
	g := api.NewEdgeGuard([]string{"old"}, func(context.Context) ([]string, error) {
		reloads++
		return next, fail
	}, clk.Now)
	ctx := context.Background()

	if !g.Verify(ctx, "old") || reloads != 0 {
		t.Fatalf("a known value: reloads %d", reloads)
	}
	if g.Verify(ctx, "") || reloads != 0 {
		t.Fatal("an empty header is accepted or reloads")
	}
	// WHEN the secret rotated and CloudFront sends the new value
	next = []string{"new", "old"}
	if !g.Verify(ctx, "new") || reloads != 1 {
		t.Fatalf("the new value after a rotation: reloads %d", reloads)
	}
	// THEN the old one still works, and guesses do not reload again within the minute
	if !g.Verify(ctx, "old") {
		t.Fatal("the previous value is refused")
	}
	for i := 0; i < 100; i++ {
		if g.Verify(ctx, "guess") {
			t.Fatal("a guess is accepted")
		}
	}
	if reloads != 1 {
		t.Fatalf("%d reloads for a minute of guesses, want 1", reloads)
	}
	// and a failing reload a minute later keeps the values
	clk.Advance(api.EdgeReloadInterval)
	fail = errors.New("secrets manager unreachable")
	if g.Verify(ctx, "guess") || reloads != 2 {
		t.Fatalf("reloads %d", reloads)
	}
	if !g.Verify(ctx, "new") || !g.Verify(ctx, "old") {
		t.Fatal("a failed reload dropped the values")
	}
}
