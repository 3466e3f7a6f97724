package bookingapi_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// The tests' names for apitest's helpers (docs in apitest).

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

const adminKey = apitest.AdminKey

var (
	keys   = apitest.Keys
	event  = apitest.Event
	bearer = apitest.Bearer
)

// fixture is apitest.Fixture; a test may replace its handler and keys.
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

func newFixture(t *testing.T, rdb redis.UniversalClient) *fixture {
	t.Helper()
	return fixtureOf(t, apitest.NewFixture(t, rdb))
}

func newFixtureOn(t *testing.T, q *roomdb.Engine, clk *testkit.Clock, more func(k *token.Keys, o *api.Options)) *fixture {
	t.Helper()
	return fixtureOf(t, apitest.NewFixtureOn(t, q, clk, more))
}

func fixtureOf(t *testing.T, a *apitest.Fixture) *fixture {
	return &fixture{t: t, h: a.H, q: a.Q, clock: a.Clock, entries: a.Entries, tickets: a.Tickets, origins: a.Origins, logs: a.Logs}
}

// forEachRedis runs a test against the single node and the 3-node cluster.
func forEachRedis(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for name, c := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) { fn(t, newFixture(t, c)) })
	}
}

type response struct {
	events.APIGatewayV2HTTPResponse
	json map[string]any
}

func (r response) str(k string) string { return apitest.Str(r.json, k) }
func (r response) num(k string) int64  { return apitest.Num(r.json, k) }
func (r response) code() string        { return apitest.Code(r.json) }

func send(t testing.TB, h *api.Handler, ev events.APIGatewayV2HTTPRequest) response {
	t.Helper()
	r := apitest.Send(t, h, ev)
	return response{r.APIGatewayV2HTTPResponse, r.JSON}
}

func (f *fixture) send(ev events.APIGatewayV2HTTPRequest) response {
	f.t.Helper()
	return send(f.t, f.h, ev)
}

func (f *fixture) do(method, path, body string, headers map[string]string) response {
	f.t.Helper()
	return f.send(event(method, path, body, headers))
}

// redeem posts an entry token to consume or complete as the room's origin does.
func (f *fixture) redeem(path, tok string) response {
	f.t.Helper()
	return f.do("POST", path, `{"token":"`+tok+`"}`, apitest.OriginOf(f.entries, f.origins, f.clock.Now(), tok))
}

func (f *fixture) admin(method, path, body string) response {
	f.t.Helper()
	return f.do(method, path, body, bearer(adminKey))
}

func (f *fixture) room(settings string) string {
	f.t.Helper()
	return apitest.NewRoom(f.t, f.h, settings)
}

func wantStatus(t testing.TB, r response, status int, code string) {
	t.Helper()
	if r.StatusCode != status || (code != "" && r.code() != code) {
		t.Fatalf("got %d %s, want %d %s", r.StatusCode, r.Body, status, code)
	}
}

// site is the protected site of the gate tests (apitest.Site).
const site = apitest.Site

// admit creates a passthrough room with settings and returns an entry token
// of it and the enqueue answer.
func (f *fixture) admit(settings string) (string, response) {
	f.t.Helper()
	id := f.room(settings)
	r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	if r.StatusCode != 200 || r.str("entryToken") == "" {
		f.t.Fatalf("enqueue in a passthrough room: %d %s", r.StatusCode, r.Body)
	}
	return r.str("entryToken"), r
}

// enter posts the waiting page's form to /.vestibule/enter on host.
func (f *fixture) enter(host, tok, ret string, cookies ...string) response {
	f.t.Helper()
	return f.send(apitest.EnterForm(host, tok, ret, cookies...))
}

// setCookie parses the response's one Set-Cookie.
func setCookie(t *testing.T, r response) *http.Cookie {
	t.Helper()
	return apitest.SetCookie(t, r.Cookies)
}
