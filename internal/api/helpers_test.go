package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

const adminKey = "test-admin-key-0123456789"

// fixture is a handler over a real engine on a real Redis, with a test clock.
type fixture struct {
	t       *testing.T
	h       *api.Handler
	q       *roomdb.Engine
	clock   *testkit.Clock
	entries *token.Entries
	tickets *token.Tickets
	origins *token.Origins
	logs    *testkit.Buffer
}

func keys(t testing.TB) *token.Keys {
	t.Helper()
	k, err := token.LoadLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newFixture(t *testing.T, rdb redis.UniversalClient) *fixture {
	t.Helper()
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	q := app.NewEngine(rdb, clk.Now) // as every program builds it: with the minimum poll interval
	return newFixtureOn(t, q, clk, nil)
}

// newFixtureOn is the fixture over the queue engine q with the clock clk; more,
// unless nil, adds to the handler's options (with the fixture's keys).
func newFixtureOn(t *testing.T, q *roomdb.Engine, clk *testkit.Clock, more func(k *token.Keys, o *api.Options)) *fixture {
	t.Helper()
	k := keys(t)
	f := &fixture{t: t, q: q, clock: clk, logs: &testkit.Buffer{},
		tickets: token.NewTickets(k.TicketSecret, "vestibule"),
		entries: token.NewEntries(k.Entry, "vestibule"),
		origins: token.NewOrigins(k.TicketSecret),
	}
	def := room.DefaultConfig()
	def.OriginURL = "https://origin.example/"
	o := api.Options{
		Queue: q, Tickets: f.tickets, Entries: f.entries, Origins: f.origins,
		AdminAuth: api.AdminKey, AdminKey: adminKey, DefaultRoom: def,
		Clock: clk.Now, Jitter: func() float64 { return 1 },
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil)),
	}
	if more != nil {
		more(k, &o)
	}
	f.h = api.New(o)
	return f
}

// event builds an API Gateway HTTP API (payload 2.0) request as API Gateway sends it.
func event(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	raw, query, _ := strings.Cut(path, "?")
	h := map[string]string{"host": "api.example", "user-agent": "test"}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	if body != "" {
		h["content-type"] = "application/json"
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: raw, RawQueryString: query, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", Stage: "$default", RequestID: "req-1",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: raw, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1"},
		},
	}
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

type response struct {
	events.APIGatewayV2HTTPResponse
	json map[string]any
}

func (r response) str(k string) string { s, _ := r.json[k].(string); return s }
func (r response) num(k string) int64 {
	f, _ := r.json[k].(float64)
	return int64(f)
}
func (r response) code() string {
	e, _ := r.json["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (f *fixture) send(ev events.APIGatewayV2HTTPRequest) response {
	f.t.Helper()
	return send(f.t, f.h, ev)
}

func send(t testing.TB, h *api.Handler, ev events.APIGatewayV2HTTPRequest) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := h.Handle(ctx, ev)
	if err != nil {
		t.Fatalf("%s %s: handler returned an error: %v", ev.RequestContext.HTTP.Method, ev.RawPath, err)
	}
	r := response{APIGatewayV2HTTPResponse: resp}
	if strings.HasPrefix(resp.Headers["Content-Type"], "application/json") {
		if err := json.Unmarshal([]byte(resp.Body), &r.json); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", ev.RequestContext.HTTP.Method, ev.RawPath, resp.Body)
		}
	}
	return r
}

func (f *fixture) do(method, path, body string, headers map[string]string) response {
	f.t.Helper()
	return f.send(event(method, path, body, headers))
}

// redeem posts an entry token to consume or complete as the room's origin
// does: with the origin credential of the room the token names.
func (f *fixture) redeem(path, tok string) response {
	f.t.Helper()
	var h map[string]string
	if c, err := f.entries.Verify(tok, f.clock.Now()); err == nil {
		h = bearer(f.origins.Credential(c.Room))
	} else if p, ok := token.Peek(tok); ok {
		h = bearer(f.origins.Credential(p.Room))
	}
	return f.do("POST", path, `{"token":"`+tok+`"}`, h)
}

func (f *fixture) admin(method, path, body string) response {
	f.t.Helper()
	return f.do(method, path, body, bearer(adminKey))
}

// room creates a room with the given settings over the defaults.
func (f *fixture) room(settings string) string {
	f.t.Helper()
	id := redistest.Room(f.t)
	if r := f.admin("PUT", "/api/admin/rooms/"+id, settings); r.StatusCode != 200 {
		f.t.Fatalf("create room: %d %s", r.StatusCode, r.Body)
	}
	return id
}

func (f *fixture) tick(id string) room.TickResult {
	f.t.Helper()
	f.clock.Advance(time.Second)
	r, err := f.q.Tick(context.Background(), id)
	if err != nil {
		f.t.Fatalf("tick: %v", err)
	}
	return r
}

func wantStatus(t testing.TB, r response, status int, code string) {
	t.Helper()
	if r.StatusCode != status || (code != "" && r.code() != code) {
		t.Fatalf("got %d %s, want %d %s", r.StatusCode, r.Body, status, code)
	}
}
