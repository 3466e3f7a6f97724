package api

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// The chain's steps, each on its own. The HTTP tests (the _test packages of
// api and its products) check them together through Handle.

// unitHandler is a Handler over no engine: only the steps before the
// handler run in these tests.
func unitHandler(t *testing.T, o Options) *Handler {
	t.Helper()
	k, err := token.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	o.Queue = struct{ Queue }{}
	o.Tickets, o.Entries = token.NewTickets(k.TicketSecret, "t"), token.NewEntries(k.Entry, "t")
	return New(o)
}

// ev is a request as API Gateway sends it.
func ev(method, path string, headers map[string]string) *events.APIGatewayV2HTTPRequest {
	if headers == nil {
		headers = map[string]string{}
	}
	e := &events.APIGatewayV2HTTPRequest{RawPath: path, Headers: headers}
	e.RequestContext.HTTP.Method = method
	return e
}

// matchedExchange is x after matched, which must match.
func matchedExchange(t *testing.T, h *Handler, method, path string, headers map[string]string) *exchange {
	t.Helper()
	x := newExchange(ev(method, path, headers), time.Now())
	if !h.matched(x) {
		t.Fatalf("%s %s: no route (%d %s)", method, path, x.resp.StatusCode, x.resp.Body)
	}
	return x
}

// Every route of internal/routes has exactly one product's handler, in the
// table's order; a route without a handler, or one handler too many, stops
// the program at start-up.
func TestBindCoversTheRouteTable(t *testing.T) {
	h := unitHandler(t, Options{})
	if len(h.table) != len(routes.All) {
		t.Fatalf("%d routes bound, want %d", len(h.table), len(routes.All))
	}
	all := map[routes.Route]httpapi.HandlerFunc{}
	for i, r := range routes.All {
		if h.table[i].key != r.Key() || h.table[i].fn == nil {
			t.Errorf("route %d: %q bound, want %q with a handler", i, h.table[i].key, r.Key())
		}
		all[r] = h.table[i].fn
	}
	panics := func(name string, products ...map[routes.Route]httpapi.HandlerFunc) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: bind did not panic", name)
			}
		}()
		bind("", products...)
	}
	missing := maps.Clone(all)
	delete(missing, routes.JWKS)
	panics("a route without a handler", missing)
	nothing := routes.Route{Method: "GET", Path: "/api/nothing", Function: routes.Status}
	panics("a handler without a route", all, map[routes.Route]httpapi.HandlerFunc{nothing: all[routes.JWKS]})
	panics("a route two products claim", all, map[routes.Route]httpapi.HandlerFunc{routes.JWKS: all[routes.JWKS]})
	// A route the table has, with a field the product's copy lacks, is not
	// the same route: the product binds by the table's own values.
	sampled := routes.RoomPoll
	sampled.Sampled = false
	changed := maps.Clone(all)
	delete(changed, routes.RoomPoll)
	changed[sampled] = all[routes.RoomPoll]
	panics("a route whose fields differ from the table's", changed)
}

// matched answers 404 for an unknown path and 405 with Allow for a known
// path's other method, in the API's error shape; a gate path's answer is a page.
func TestMatched(t *testing.T) {
	h := unitHandler(t, Options{})
	x := newExchange(ev("GET", "/api/nothing", nil), time.Now())
	if h.matched(x) || x.resp.StatusCode != 404 || x.err.Code != "unknown_route" {
		t.Errorf("unknown path: %d %+v", x.resp.StatusCode, x.err)
	}
	x = newExchange(ev("DELETE", "/api/consume", nil), time.Now())
	if h.matched(x) || x.resp.StatusCode != 405 || x.resp.Headers["Allow"] != "POST" {
		t.Errorf("wrong method: %d %v", x.resp.StatusCode, x.resp.Headers)
	}
	x = newExchange(ev("PUT", "/.vestibule/enter", nil), time.Now())
	if h.matched(x) || x.resp.StatusCode != 405 || !strings.HasPrefix(x.resp.Headers["Content-Type"], "text/html") {
		t.Errorf("wrong method on a gate path: %d %v", x.resp.StatusCode, x.resp.Headers)
	}
	x = matchedExchange(t, h, "POST", "/api/events/e1/holds/7/confirm", nil)
	if x.route.key != "POST /api/events/{event}/holds/{token}/confirm" || x.req.Path.Event != "e1" || x.req.Path.Token != "7" {
		t.Errorf("matched %q %+v", x.route.key, x.req.Path)
	}
	// A route of any method, whose {path+} takes the rest of the path as
	// sent: slashes, empty segments and escapes kept.
	for path, rest := range map[string]string{
		"/api/gate/check/nginx":                "nginx",
		"/api/gate/check/":                     "",
		"/api/gate/check/envoy//x/%2E%2e/y;z/": "envoy//x/%2E%2e/y;z/",
	} {
		for _, method := range []string{"GET", "DELETE", "PATCH"} {
			x = matchedExchange(t, h, method, path, nil)
			if x.route.key != "ANY /api/gate/check/{path+}" || x.req.Path.Rest != rest {
				t.Errorf("%s %s: matched %q, rest %q, want %q", method, path, x.route.key, x.req.Path.Rest, rest)
			}
		}
	}
	x = newExchange(ev("GET", "/api/gate/check", nil), time.Now())
	if h.matched(x) || x.resp.StatusCode != 404 {
		t.Errorf("/api/gate/check without a proxy: %d", x.resp.StatusCode)
	}
}

// recovered turns a panic into a 500 whose cause is the panic, and lets
// every other outcome through.
func TestRecovered(t *testing.T) {
	x := newExchange(ev("GET", "/api/jwks.json", nil), time.Now())
	recovered(x, func() { panic("boom") })
	if x.resp.StatusCode != 500 || x.err == nil || x.err.Cause == nil || x.err.Cause.Error() != "panic: boom" || strings.Contains(x.resp.Body, "boom") {
		t.Fatalf("after a panic: %d %s %+v", x.resp.StatusCode, x.resp.Body, x.err)
	}
	x = newExchange(ev("GET", "/api/jwks.json", nil), time.Now())
	recovered(x, func() { x.resp.StatusCode = 200 })
	if x.resp.StatusCode != 200 || x.err != nil {
		t.Fatalf("without a panic: %d %+v", x.resp.StatusCode, x.err)
	}
}

// sampledOut leaves out only a sampled route's success that the draw leaves out.
func TestSampledOut(t *testing.T) {
	never := func() bool { return false }
	h := unitHandler(t, Options{LogSample: never})
	for _, c := range []struct {
		method, path string
		status       int
		want         bool
	}{
		{"GET", "/api/rooms/r1/poll", 200, true},
		{"GET", "/api/rooms/r1/status", 304, true},
		{"GET", "/api/rooms/r1/poll", 401, false},
		{"POST", "/api/rooms/r1/enqueue", 200, false},
	} {
		x := matchedExchange(t, h, c.method, c.path, nil)
		x.resp.StatusCode = c.status
		if got := h.sampledOut(x); got != c.want {
			t.Errorf("%s %s %d: sampled out %v, want %v", c.method, c.path, c.status, got, c.want)
		}
	}
	x := newExchange(ev("GET", "/api/nothing", nil), time.Now())
	x.resp.StatusCode = 200
	if h.sampledOut(x) {
		t.Error("an unmatched request is sampled out")
	}
	if x := matchedExchange(t, unitHandler(t, Options{}), "GET", "/api/rooms/r1/poll", nil); unitHandler(t, Options{}).sampledOut(x) {
		t.Error("without LogSample a poll is sampled out")
	}
}

// logLine: info below 500; an error with its cause from 500; a 503 of
// Redis trouble carries the metric, a room that cannot be restored does not.
func TestLogLine(t *testing.T) {
	attrs := func(a []slog.Attr) map[string]string {
		m := map[string]string{}
		for _, x := range a {
			m[x.Key] = x.Value.String()
		}
		return m
	}
	x := newExchange(ev("GET", "/api/nothing", nil), time.Now())
	x.ev.RequestContext.RequestID = "req-9"
	x.resp.StatusCode, x.roomID = 404, "r1"
	level, a := logLine(x)
	if m := attrs(a); level != slog.LevelInfo || m["route"] != "unknown" || m["status"] != "404" || m["room"] != "r1" || m["request_id"] != "req-9" || m["error"] != "" {
		t.Errorf("404: %v %v", level, m)
	}
	x.fail(httpapi.ToError(errors.New("redis: i/o timeout")))
	level, a = logLine(x)
	if m := attrs(a); level != slog.LevelError || m["status"] != "503" || m["error"] != "redis: i/o timeout" || m["_aws"] == "" {
		t.Errorf("503: %v %v", level, m)
	}
	x.fail(&httpapi.Error{Status: http.StatusServiceUnavailable, Code: "room_unrestorable", Message: "m"})
	if _, a = logLine(x); attrs(a)["_aws"] != "" {
		t.Errorf("room_unrestorable counts as a Redis error: %v", attrs(a))
	}
}

// The checks before the handler: the edge header on public routes only, the
// body's limit, the admin key on admin routes only, a valid room id.
func TestChecks(t *testing.T) {
	ctx := context.Background()
	h := unitHandler(t, Options{AdminKey: "k", Edge: NewEdgeGuard([]string{"secret"}, nil, nil)})
	x := matchedExchange(t, h, "GET", "/api/rooms/r1/status", nil)
	if e := h.checkEdge(ctx, x); e != errForbidden {
		t.Errorf("public route without the header: %v", e)
	}
	x = matchedExchange(t, h, "GET", "/api/rooms/r1/status", map[string]string{"x-vestibule-origin": "secret"})
	if e := h.checkEdge(ctx, x); e != nil || !x.req.ViaEdge {
		t.Errorf("public route with the header: %v, via edge %v", e, x.req.ViaEdge)
	}
	x = matchedExchange(t, h, "GET", "/api/admin/rooms", nil)
	if e := h.checkEdge(ctx, x); e != nil {
		t.Errorf("admin route without the header: %v", e)
	}
	if e := h.checkAdmin(ctx, x); e == nil || e.Status != 401 {
		t.Errorf("admin route without the key: %v", e)
	}
	x = matchedExchange(t, h, "GET", "/api/admin/rooms", map[string]string{"authorization": "Bearer k"})
	if e := h.checkAdmin(ctx, x); e != nil {
		t.Errorf("admin route with the key: %v", e)
	}
	x = matchedExchange(t, h, "POST", "/api/rooms/r1/enqueue", nil)
	x.ev.Body = strings.Repeat("x", MaxBody+1)
	if e := h.readBody(ctx, x); e == nil || e.Status != 413 {
		t.Errorf("body over the limit: %v", e)
	}
	x = matchedExchange(t, h, "PUT", "/api/admin/events/e1", nil)
	x.ev.Body = strings.Repeat("x", MaxBody+1)
	if e := h.readBody(ctx, x); e != nil || len(x.req.Body) != MaxBody+1 {
		t.Errorf("an event's definition over MaxBody: %v", e)
	}
	x = matchedExchange(t, h, "GET", "/api/rooms/bad.id/status", nil)
	if e := h.checkRoomID(ctx, x); e == nil || e.Code != "invalid_room" {
		t.Errorf("an invalid room id: %v", e)
	}
}

// The products import neither each other nor the composition: each stands on
// httpapi and the engines' types; only internal/api puts them together.
func TestProductsImportNoOtherProduct(t *testing.T) {
	const base = "github.com/vestibule-dev/vestibule/internal/api"
	products := []string{base + "/queueapi", base + "/bookingapi", base + "/gateapi", base + "/noticeapi", base + "/httpapi"}
	for _, p := range products {
		out, err := exec.Command("go", "list", "-deps", p).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			if d != p && (d == base || strings.HasPrefix(d, base+"/") && d != base+"/httpapi" && d != base+"/roomhttp") {
				t.Errorf("%s imports %s", p, d)
			}
		}
	}
}
