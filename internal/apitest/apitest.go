// Package apitest is what the HTTP API's tests share: a handler over a real
// room engine on a real Redis with a test clock (Fixture), API Gateway events
// as API Gateway sends them, and the answers decoded. The test packages of
// internal/api and its products use it as it is; only tests import it.
package apitest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// AdminKey is the fixtures' admin key.
const AdminKey = "test-admin-key-0123456789"

// Site is the protected site of the gate tests. Without an EdgeGuard (as in
// the fixtures, and in make dev, whose proxy keeps the site's Host) the
// request's Host is the site; behind CloudFront it is X-Forwarded-Host.
const Site = "https://site.example/"

// EdgeCurrent and EdgePrevious are the origin secrets of the edge tests.
const (
	EdgeCurrent  = "current-origin-secret-0123456789abcdef"
	EdgePrevious = "previous-origin-secret-0123456789abcdef"
)

// Fixture is a handler over a real engine on a real Redis, with a test clock.
// A test may replace its handler and keys.
type Fixture struct {
	T       *testing.T // the test that made it: its helpers fail this test
	H       *api.Handler
	Q       *roomdb.Engine
	Clock   *testkit.Clock
	Entries *token.Entries
	Tickets *token.Tickets
	Origins *token.Origins
	Logs    *testkit.Buffer // the handler's log, as JSON lines
}

// Keys are fresh token keys in a temporary folder.
func Keys(t testing.TB) *token.Keys {
	t.Helper()
	k, err := token.LoadLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// NewFixture is the fixture over a fresh engine on rdb, built as every program builds it.
func NewFixture(t *testing.T, rdb redis.UniversalClient) *Fixture {
	t.Helper()
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	q := app.NewEngine(rdb, clk.Now) // as every program builds it: with the minimum poll interval
	return NewFixtureOn(t, q, clk, nil)
}

// NewFixtureOn is the fixture over the queue engine q with the clock clk; more,
// unless nil, adds to the handler's options (with the fixture's keys).
func NewFixtureOn(t *testing.T, q *roomdb.Engine, clk *testkit.Clock, more func(k *token.Keys, o *api.Options)) *Fixture {
	t.Helper()
	k := Keys(t)
	f := &Fixture{T: t, Q: q, Clock: clk, Logs: &testkit.Buffer{},
		Tickets: token.NewTickets(k.TicketSecret, "vestibule"),
		Entries: token.NewEntries(k.Entry, "vestibule"),
		Origins: token.NewOrigins(k.TicketSecret),
	}
	def := room.DefaultConfig()
	def.OriginURL = "https://origin.example/"
	o := api.Options{
		Queue: q, Tickets: f.Tickets, Entries: f.Entries, Origins: f.Origins,
		AdminAuth: api.AdminKey, AdminKey: AdminKey, DefaultRoom: def,
		Clock: clk.Now, Jitter: func() float64 { return 1 },
		Logger: slog.New(slog.NewJSONHandler(f.Logs, nil)),
	}
	if more != nil {
		more(k, &o)
	}
	f.H = api.New(o)
	return f
}

// Gate rebuilds the fixture's handler with fresh keys and the edge gate's
// routes on (InsecureLoopback as loopback), Site the default room's origin;
// more, unless nil, adds to the handler's options. It returns the gate's
// key ring.
func (f *Fixture) Gate(loopback bool, more func(o *api.Options)) gate.KeyRing {
	f.T.Helper()
	k := Keys(f.T)
	ring, err := k.GateKeys()
	if err != nil {
		f.T.Fatal(err)
	}
	f.Entries = token.NewEntries(k.Entry, "vestibule")
	f.Tickets = token.NewTickets(k.TicketSecret, "vestibule")
	f.Origins = token.NewOrigins(k.TicketSecret)
	def := room.DefaultConfig()
	def.OriginURL = Site
	o := api.Options{
		Queue: f.Q, Tickets: f.Tickets, Entries: f.Entries, Origins: f.Origins,
		AdminAuth: api.AdminKey, AdminKey: AdminKey, DefaultRoom: def,
		Clock: f.Clock.Now, Jitter: func() float64 { return 1 },
		Logger: slog.New(slog.NewJSONHandler(f.Logs, nil)),
		Gate:   &api.GateOptions{Keys: ring, InsecureLoopback: loopback},
	}
	if more != nil {
		more(&o)
	}
	f.H = api.New(o)
	return ring
}

// ForEachRedis runs fn against the single node and the 3-node cluster, each
// with a fresh fixture.
func ForEachRedis(t *testing.T, fn func(t *testing.T, f *Fixture)) {
	redistest.ForEach(t, func(t *testing.T, c redis.UniversalClient) { fn(t, NewFixture(t, c)) })
}

// Send has the fixture's handler handle ev (see Send).
func (f *Fixture) Send(ev events.APIGatewayV2HTTPRequest) Response {
	f.T.Helper()
	return Send(f.T, f.H, ev)
}

// Do sends the request of Event(method, path, body, headers).
func (f *Fixture) Do(method, path, body string, headers map[string]string) Response {
	f.T.Helper()
	return f.Send(Event(method, path, body, headers))
}

// Admin sends a request with the admin key.
func (f *Fixture) Admin(method, path, body string) Response {
	f.T.Helper()
	return f.Do(method, path, body, Bearer(AdminKey))
}

// Redeem posts an entry token to consume or complete as the room's origin does.
func (f *Fixture) Redeem(path, tok string) Response {
	f.T.Helper()
	return f.Do("POST", path, `{"token":"`+tok+`"}`, OriginOf(f.Entries, f.Origins, f.Clock.Now(), tok))
}

// Room creates a room with the given settings over the defaults (NewRoom).
func (f *Fixture) Room(settings string) string {
	f.T.Helper()
	return NewRoom(f.T, f.H, settings)
}

// Tick advances the fixture's clock a second and ticks the room (Tick).
func (f *Fixture) Tick(id string) room.TickResult {
	f.T.Helper()
	return Tick(f.T, f.Q, f.Clock, id)
}

// Admit creates a passthrough room with settings and returns an entry token
// of it and the enqueue answer.
func (f *Fixture) Admit(settings string) (string, Response) {
	f.T.Helper()
	id := f.Room(settings)
	r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	if r.StatusCode != 200 || r.Str("entryToken") == "" {
		f.T.Fatalf("enqueue in a passthrough room: %d %s", r.StatusCode, r.Body)
	}
	return r.Str("entryToken"), r
}

// Enter posts the waiting page's form to /.vestibule/enter on host (EnterForm).
func (f *Fixture) Enter(host, tok, ret string, cookies ...string) Response {
	f.T.Helper()
	return f.Send(EnterForm(host, tok, ret, cookies...))
}

// Event builds an API Gateway HTTP API (payload 2.0) request as API Gateway sends it.
func Event(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
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

// Bearer is an Authorization header carrying tok.
func Bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// ViaCloudFront adds what CloudFront adds: the origin header and the viewer's address.
func ViaCloudFront(ev events.APIGatewayV2HTTPRequest, secret, viewer string) events.APIGatewayV2HTTPRequest {
	if secret != "" {
		ev.Headers["x-vestibule-origin"] = secret
	}
	if viewer != "" {
		ev.Headers["cloudfront-viewer-address"] = viewer
	}
	return ev
}

// Response is an answer, with its body decoded when it is JSON.
type Response struct {
	events.APIGatewayV2HTTPResponse
	JSON map[string]any
}

// Str is the string at k of the JSON body ("" if none).
func (r Response) Str(k string) string { return Str(r.JSON, k) }

// Num is the number at k of the JSON body (0 if none).
func (r Response) Num(k string) int64 { return Num(r.JSON, k) }

// Code is the error code of an error body ("" if none).
func (r Response) Code() string { return Code(r.JSON) }

// WantStatus fails the test unless r has the status and, unless code is "",
// the error code.
func WantStatus(t testing.TB, r Response, status int, code string) {
	t.Helper()
	if r.StatusCode != status || (code != "" && r.Code() != code) {
		t.Fatalf("got %d %s, want %d %s", r.StatusCode, r.Body, status, code)
	}
}

// Send has h handle ev within 3 s; a handler error, or a JSON answer whose
// body is not JSON, fails the test.
func Send(t testing.TB, h *api.Handler, ev events.APIGatewayV2HTTPRequest) Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := h.Handle(ctx, ev)
	if err != nil {
		t.Fatalf("%s %s: handler returned an error: %v", ev.RequestContext.HTTP.Method, ev.RawPath, err)
	}
	r := Response{APIGatewayV2HTTPResponse: resp}
	if strings.HasPrefix(resp.Headers["Content-Type"], "application/json") {
		if err := json.Unmarshal([]byte(resp.Body), &r.JSON); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", ev.RequestContext.HTTP.Method, ev.RawPath, resp.Body)
		}
	}
	return r
}

// Str is the string at k of a JSON object ("" if none).
func Str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// Num is the number at k of a JSON object (0 if none).
func Num(m map[string]any, k string) int64 {
	f, _ := m[k].(float64)
	return int64(f)
}

// Code is the error code of an error body ("" if none).
func Code(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// OriginOf is the Authorization header of the origin of tok's room, as the
// origin presents it to consume and complete (none for a token that names no room).
func OriginOf(entries *token.Entries, origins *token.Origins, now time.Time, tok string) map[string]string {
	if c, err := entries.Verify(tok, now); err == nil {
		return Bearer(origins.Credential(c.Room))
	} else if p, ok := token.Peek(tok); ok {
		return Bearer(origins.Credential(p.Room))
	}
	return nil
}

// NewRoom creates a room with the given settings over the defaults, by the admin route.
func NewRoom(t testing.TB, h *api.Handler, settings string) string {
	t.Helper()
	id := redistest.Room(t)
	if r := Send(t, h, Event("PUT", "/api/admin/rooms/"+id, settings, Bearer(AdminKey))); r.StatusCode != 200 {
		t.Fatalf("create room: %d %s", r.StatusCode, r.Body)
	}
	return id
}

// Tick advances the clock a second and ticks the room.
func Tick(t testing.TB, q *roomdb.Engine, clk *testkit.Clock, id string) room.TickResult {
	t.Helper()
	clk.Advance(time.Second)
	r, err := q.Tick(context.Background(), id)
	if err != nil {
		t.Fatalf("tick: %v", err)
	}
	return r
}

// EnterForm is the waiting page's form posted to /.vestibule/enter on host.
func EnterForm(host, tok, ret string, cookies ...string) events.APIGatewayV2HTTPRequest {
	form := url.Values{"token": {tok}, "return": {ret}}.Encode()
	ev := Event("POST", "/.vestibule/enter", "", map[string]string{
		"content-type": "application/x-www-form-urlencoded", "host": host,
	})
	ev.Body, ev.Cookies = form, cookies
	return ev
}

// SetCookie parses the answer's one Set-Cookie.
func SetCookie(t testing.TB, r Response) *http.Cookie {
	t.Helper()
	cookies := r.Cookies
	if len(cookies) != 1 {
		t.Fatalf("%d cookies set, want 1: %v", len(cookies), cookies)
	}
	c, err := http.ParseSetCookie(cookies[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}
