package api_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// The fuzz targets feed hostile requests to the real router over the real
// engine on a real Redis (and, for FuzzHandler, the same request to a router
// whose Redis is down), and check the properties of I7: no 500, no panic, a
// documented status, a JSON error body, Retry-After where a client must wait,
// no credential echoed, the size limit enforced. Seeds are in
// testdata/fuzz/<target>/; `go test` runs them, `make fuzz` explores from them.
//
// Random bytes never make a valid ticket, entry token or admin key, so inputs
// name them with placeholders the target fills in from state it prepared:
//
//	$R  the prepared room's id (path, query, headers, body)
//	$T  a ticket holding a grant in $R, $W a ticket waiting in $R (Authorization, headers)
//	$E  an entry token of $R (Authorization, headers, body)
//	$O  the origin credential of $R (Authorization only)
//	$A  the admin key (Authorization only, so any echo of it is an echo of the header)
//
// The state lives in Redis across inputs (a queue grows, a grant gets used), so
// an input's outcome can depend on those before it; the properties hold for any state.

// documented is every status the API may answer (docs/API.md); 500 is a bug.
// 303 is the edge gate's (/.vestibule/enter, leave and renew), and so is 403
// here (leave refuses another site's post); 501 is a room DELETE where the
// settings store cannot delete.
var documented = map[int]bool{200: true, 303: true, 400: true, 401: true, 403: true, 404: true, 405: true, 409: true, 410: true, 413: true, 429: true, 501: true, 503: true}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// roomRoute finds the {room} segment of a room route's path.
var roomRoute = regexp.MustCompile(`^/api/(?:admin/)?rooms/([^/]*)(?:/[^/]*)?$`)

// apiRoutes is docs/API.md's route table, written apart from the router's.
var apiRoutes = []struct {
	method string
	path   *regexp.Regexp
}{
	{"POST", regexp.MustCompile(`^/api/rooms/[^/]+/enqueue$`)},
	{"GET", regexp.MustCompile(`^/api/rooms/[^/]+/poll$`)},
	{"POST", regexp.MustCompile(`^/api/rooms/[^/]+/leave$`)},
	{"GET", regexp.MustCompile(`^/api/rooms/[^/]+/status$`)},
	{"POST", regexp.MustCompile(`^/api/consume$`)},
	{"POST", regexp.MustCompile(`^/api/complete$`)},
	{"GET", regexp.MustCompile(`^/api/jwks\.json$`)},
	{"PUT", regexp.MustCompile(`^/api/admin/rooms/[^/]+$`)},
	{"GET", regexp.MustCompile(`^/api/admin/rooms/[^/]+$`)},
	{"DELETE", regexp.MustCompile(`^/api/admin/rooms/[^/]+$`)},
	{"GET", regexp.MustCompile(`^/api/admin/rooms/[^/]+/log$`)},
	{"GET", regexp.MustCompile(`^/api/admin/rooms$`)},
	{"POST", regexp.MustCompile(`^/\.vestibule/enter$`)},
	{"POST", regexp.MustCompile(`^/\.vestibule/leave$`)},
	{"GET", regexp.MustCompile(`^/\.vestibule/leave$`)},
	{"GET", regexp.MustCompile(`^/\.vestibule/renew$`)},
}

// pageCode is what checkError answers for an HTML page: the edge gate's
// routes answer a person, not a program (gate.go).
const pageCode = "page"

// routeOf says whether the path is the API's and whether the method is its.
func routeOf(method, path string) (pathKnown, routeKnown bool) {
	for _, r := range apiRoutes {
		if r.path.MatchString(path) {
			pathKnown = true
			routeKnown = routeKnown || r.method == method
		}
	}
	return pathKnown, routeKnown
}

// The clock is real time plus an offset the setup moves forward, so tickets,
// grants and rate limits behave as in production while setup can skip ahead.

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// fuzzEnv is one prepared room behind two routers: live (real Redis) and down
// (every Queue call fails as if Redis were unreachable).
type fuzzEnv struct {
	rdb      redis.UniversalClient
	q        *roomdb.Engine
	live     *api.Handler
	down     *api.Handler
	tickets  *token.Tickets
	clock    *testkit.Clock
	room     string
	adminKey string
	canary   string
	subst    map[string]string // placeholder -> value
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	rdb := redistest.Single(f)
	k := apitest.Keys(f)
	e := &fuzzEnv{rdb: rdb, clock: testkit.SkewedClock(), room: redistest.Room(f),
		// Random per process: nothing but an echo can put them in a response.
		adminKey: "adm-" + randomHex(16), canary: "cny" + randomHex(12),
		tickets: token.NewTickets(k.TicketSecret, "vestibule"),
	}
	entries := token.NewEntries(k.Entry, "vestibule")
	e.q = roomdb.New(rdb, roomdb.WithClock(e.clock.Now))
	def := room.DefaultConfig()
	def.OriginURL = "https://origin.example/"
	origins := token.NewOrigins(k.TicketSecret)
	ring, err := k.GateKeys()
	if err != nil {
		f.Fatal(err)
	}
	opts := api.Options{Queue: e.q, Tickets: e.tickets, Entries: entries, Origins: origins,
		AdminAuth: api.AdminKey, AdminKey: e.adminKey, DefaultRoom: def, Clock: e.clock.Now,
		Gate: &api.GateOptions{Keys: ring}}
	e.live = api.New(opts)
	opts.Queue = failing{fmt.Errorf("%w: dial tcp 10.0.0.7:6379: connection refused", room.ErrUnavailable)}
	e.down = api.New(opts)

	// One visitor holds a grant, one waits; the client limit is off so the
	// fuzzer's enqueues keep reaching the engine rather than the limiter.
	cfg := def
	cfg.MaxActive, cfg.AdmitPerMinute, cfg.ClientEnqueuePerMinute = 1, 60, 0
	ctx := context.Background()
	if _, err := e.q.PutConfig(ctx, e.room, cfg); err != nil {
		f.Fatal(err)
	}
	enqueue := func() string {
		r := apitest.Send(f, e.live, apitest.Event("POST", "/api/rooms/"+e.room+"/enqueue", "", nil))
		if r.StatusCode != 200 || r.Str("ticket") == "" {
			f.Fatalf("setup enqueue: %d %s", r.StatusCode, r.Body)
		}
		return r.Str("ticket")
	}
	admitted, waiting := enqueue(), enqueue()
	var entry string
	for i := 0; i < 5 && entry == ""; i++ {
		e.clock.Advance(2 * time.Second)
		if _, err := e.q.Tick(ctx, e.room); err != nil {
			f.Fatal(err)
		}
		r := apitest.Send(f, e.live, apitest.Event("GET", "/api/rooms/"+e.room+"/poll", "", apitest.Bearer(admitted)))
		entry = r.Str("entryToken")
	}
	if entry == "" {
		f.Fatal("setup: the first visitor was never admitted")
	}
	e.clock.Advance(2 * time.Second) // past the poll interval of the setup's last poll
	e.subst = map[string]string{"$R": e.room, "$T": admitted, "$W": waiting, "$E": entry, "$A": e.adminKey,
		"$O": origins.Credential(e.room)}
	return e
}

// fill replaces the placeholders in s that the given set allows.
func (e *fuzzEnv) fill(s string, allowed string) string {
	for _, p := range strings.Split(allowed, " ") {
		s = strings.ReplaceAll(s, p, e.subst[p])
	}
	return s
}

const (
	maxFuzzHeaders = 10_000
	maxBigHeader   = 128 << 10
	maxBodyPad     = 64 << 10
)

// Body encodings of FuzzHandler's enc argument.
const (
	encRaw       = 0 // the body as is
	encBase64    = 1 // base64 of the body, flagged (what API Gateway does with binary)
	encMislabel  = 2 // the body as is, but flagged base64 (usually invalid base64)
	encodingsLen = 3
)

// fuzzEvent builds the API Gateway event of FuzzHandler's arguments. headers
// holds "name:value" lines; a repeated name is joined with commas, as API
// Gateway joins repeated headers.
func (e *fuzzEnv) fuzzEvent(method, path, query, auth string, headers, body []byte, enc uint8, nHeaders uint16, bigHeader, bodyPad uint32) (events.APIGatewayV2HTTPRequest, string) {
	raw := e.fill(path, "$R")
	h := map[string]string{}
	put := func(k, v string) {
		if old, ok := h[k]; ok {
			v = old + "," + v
		}
		h[k] = v
	}
	for _, line := range strings.Split(string(headers), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k != "" {
			put(k, e.fill(strings.TrimLeft(v, " "), "$R $T $W $E"))
		}
	}
	for i := range min(int(nHeaders), maxFuzzHeaders) {
		h["x-fuzz-"+strconv.Itoa(i)] = strconv.Itoa(i)
	}
	if n := min(int(bigHeader), maxBigHeader); n > 0 {
		put("x-big", strings.Repeat("b", n))
	}
	// A credential with no placeholder carries the canary: any echo of the
	// Authorization header then shows in the response.
	authValue := ""
	if auth != "" {
		authValue = e.fill(auth, "$T $W $E $O $A")
		if authValue == auth {
			authValue += e.canary
		}
		put("authorization", authValue)
	}
	b := e.fill(string(body), "$R $E") + strings.Repeat("A", min(int(bodyPad), maxBodyPad))
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: raw, RawQueryString: e.fill(query, "$R"), Headers: h,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", Stage: "$default", RequestID: "fuzz",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: raw, Protocol: "HTTP/1.1", SourceIP: "198.51.100.7"},
		},
	}
	if p, err := url.PathUnescape(raw); err == nil {
		ev.RequestContext.HTTP.Path = p
	}
	if q, err := url.ParseQuery(ev.RawQueryString); err == nil && len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	switch enc % encodingsLen {
	case encRaw:
		ev.Body = b
	case encBase64:
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(b)), true
	case encMislabel:
		ev.Body, ev.IsBase64Encoded = b, true
	}
	return ev, authValue
}

// decodedLen is the body's length as the handler must see it, and whether the
// body is decodable at all.
func decodedLen(ev events.APIGatewayV2HTTPRequest) (int, bool) {
	if !ev.IsBase64Encoded {
		return len(ev.Body), true
	}
	d, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		return len(ev.Body) * 3 / 4, false
	}
	return len(d), true
}

// checkError asserts the shape every non-2xx body must have:
// exactly {"error":{"code":"snake_case","message":"..."}}.
func checkError(t *testing.T, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	if strings.HasPrefix(resp.Headers["Content-Type"], "text/html") {
		if resp.Headers["Cache-Control"] != "no-store" {
			t.Fatalf("%d: a page without Cache-Control: no-store: %v", resp.StatusCode, resp.Headers)
		}
		return pageCode
	}
	if !strings.HasPrefix(resp.Headers["Content-Type"], "application/json") {
		t.Fatalf("%d with Content-Type %q: %q", resp.StatusCode, resp.Headers["Content-Type"], resp.Body)
	}
	var b struct {
		Error *struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || dec.More() || b.Error == nil || b.Error.Code == nil || b.Error.Message == nil {
		t.Fatalf("%d: error body is not {\"error\":{\"code\",\"message\"}}: %q (%v)", resp.StatusCode, resp.Body, err)
	}
	if !snakeCase.MatchString(*b.Error.Code) || *b.Error.Message == "" {
		t.Fatalf("%d: error code %q is not snake_case or the message is empty: %q", resp.StatusCode, *b.Error.Code, resp.Body)
	}
	return *b.Error.Code
}

// checkResponse asserts the properties every response has, whatever the input.
func checkResponse(t *testing.T, resp events.APIGatewayV2HTTPResponse, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	if !documented[resp.StatusCode] {
		t.Fatalf("undocumented status %d: %q", resp.StatusCode, resp.Body)
	}
	html := strings.HasPrefix(resp.Headers["Content-Type"], "text/html")
	if !(html || json.Valid([]byte(resp.Body))) || !utf8.ValidString(resp.Body) {
		t.Fatalf("%d: body is not JSON: %q", resp.StatusCode, resp.Body)
	}
	for k, v := range resp.Headers {
		if strings.ContainsAny(k+v, "\r\n\x00") {
			t.Fatalf("header %q: %q carries a control character", k, v)
		}
	}
	code := ""
	if resp.StatusCode >= 300 {
		code = checkError(t, resp)
	}
	if resp.StatusCode == 429 || resp.StatusCode == 503 {
		if n, err := strconv.Atoi(resp.Headers["Retry-After"]); err != nil || n < 1 {
			t.Fatalf("%d without a whole positive Retry-After: %v", resp.StatusCode, resp.Headers)
		}
	}
	if resp.StatusCode == 405 && resp.Headers["Allow"] == "" {
		t.Fatalf("405 without Allow: %v", resp.Headers)
	}
	return code
}

// contains reports whether s occurs in the response's body or headers.
func contains(resp events.APIGatewayV2HTTPResponse, s string) bool {
	if strings.Contains(resp.Body, s) {
		return true
	}
	for k, v := range resp.Headers {
		if strings.Contains(k, s) || strings.Contains(v, s) {
			return true
		}
	}
	return false
}

func FuzzHandler(f *testing.F) {
	e := newFuzzEnv(f)
	validRoom := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	f.Fuzz(func(t *testing.T, method, path, query, auth string, headers, body []byte, enc uint8, nHeaders uint16, bigHeader, bodyPad uint32) {
		ev, authValue := e.fuzzEvent(method, path, query, auth, headers, body, enc, nHeaders, bigHeader, bodyPad)
		size, decodable := decodedLen(ev)
		seg := roomRoute.FindStringSubmatch(ev.RawPath)
		pathKnown, routeKnown := routeOf(ev.RequestContext.HTTP.Method, ev.RawPath)

		for _, target := range []struct {
			name string
			h    *api.Handler
		}{{"live", e.live}, {"redis down", e.down}} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := target.h.Handle(ctx, ev)
			cancel()
			code := checkResponse(t, resp, err)
			where := fmt.Sprintf("%s: %q %q -> %d %s", target.name, ev.RequestContext.HTTP.Method, ev.RawPath, resp.StatusCode, code)
			if os.Getenv("FUZZ_DEBUG") != "" {
				t.Log(where)
			}

			// Under /.vestibule every answer is for a person: errors, the
			// router's too, are pages (N10); elsewhere never.
			gatePath := ev.RawPath == "/.vestibule" || strings.HasPrefix(ev.RawPath, "/.vestibule/")
			switch {
			case code == pageCode && !gatePath:
				t.Fatalf("%s: an HTML page outside the gate's routes", where)
			case gatePath && resp.StatusCode >= 400 && code != pageCode:
				t.Fatalf("%s: an error under /.vestibule that is not a page", where)
			case resp.StatusCode == 403 && !(gatePath && routeKnown):
				t.Fatalf("%s: a 403 outside the gate's routes", where)
			case resp.StatusCode == 303 && !gatePath:
				t.Fatalf("%s: a 303 outside the gate's routes", where)
			case !pathKnown && (resp.StatusCode != 404 || code != "unknown_route" && !gatePath):
				t.Fatalf("%s: a path outside the API was not answered 404 unknown_route", where)
			case pathKnown && !routeKnown && resp.StatusCode != 405:
				t.Fatalf("%s: a method the path does not take was not answered 405", where)
			case routeKnown && size > api.MaxBody && resp.StatusCode != 413:
				t.Fatalf("%s: a body of %d bytes (limit %d) was not refused with 413", where, size, api.MaxBody)
			case decodable && size <= api.MaxBody && resp.StatusCode == 413:
				t.Fatalf("%s: a body of %d bytes (limit %d) was refused as too large", where, size, api.MaxBody)
			}
			if resp.StatusCode == 200 && seg != nil && !validRoom.MatchString(seg[1]) {
				t.Fatalf("%s: 200 for the invalid room id %q", where, seg[1])
			}
			if contains(resp, e.canary) {
				t.Fatalf("%s: the response echoes the Authorization header %q: %q %v", where, authValue, resp.Body, resp.Headers)
			}
			if contains(resp, e.adminKey) {
				t.Fatalf("%s: the response echoes the admin key: %q %v", where, resp.Body, resp.Headers)
			}
			// The origin credential is shown only to an admin.
			if contains(resp, e.subst["$O"]) && (resp.StatusCode != 200 || !strings.HasPrefix(ev.RawPath, "/api/admin/")) {
				t.Fatalf("%s: the response carries the origin credential: %q", where, resp.Body)
			}
			// A ticket comes back only to its holder, from enqueue or poll.
			for _, p := range []string{"$T", "$W"} {
				if contains(resp, e.subst[p]) && (resp.StatusCode != 200 || seg == nil || !(strings.HasSuffix(ev.RawPath, "/enqueue") || strings.HasSuffix(ev.RawPath, "/poll"))) {
					t.Fatalf("%s: the response carries the ticket %s: %q", where, p, resp.Body)
				}
			}

			if target.h == e.live {
				// Redis is up: a 503 would be an input-made failure in disguise.
				if resp.StatusCode == 503 {
					t.Fatalf("%s: 503 with Redis up: %q", where, resp.Body)
				}
				e.forget(ev, resp)
			} else if resp.StatusCode == 200 && !(ev.RequestContext.HTTP.Method == "GET" && (ev.RawPath == "/api/jwks.json" || ev.RawPath == "/.vestibule/leave")) {
				// Redis is down: only the key set and the leave page are served without it.
				t.Fatalf("%s: 200 without Redis: %q", where, resp.Body)
			}
		}
	})
}

// forget deletes a room the fuzzer created through the admin API, so rooms do
// not pile up in the registry and make the room list slower with every input.
func (e *fuzzEnv) forget(ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	id, ok := strings.CutPrefix(ev.RawPath, "/api/admin/rooms/")
	if ev.RequestContext.HTTP.Method != "PUT" || resp.StatusCode != 200 || !ok || id == e.room {
		return
	}
	ctx := context.Background()
	e.rdb.Del(ctx, roomdb.KeysFor(id).List()...)
	e.rdb.SRem(ctx, roomdb.RegistryKey, id)
}

// FuzzConfigJSON sends random JSON as an admin PUT of a room that exists (with
// a known config) or does not. A config that validates is answered 200, survives
// a JSON round trip unchanged and reads back equal; one that does not is
// answered 400 and leaves the room as it was (the previous config, or 404).
func FuzzConfigJSON(f *testing.F) {
	rdb := redistest.Single(f)
	k := apitest.Keys(f)
	adminKey := "adm-" + randomHex(16)
	q := roomdb.New(rdb)
	def := room.DefaultConfig()
	def.OriginURL = "https://origin.example/"
	h := api.New(api.Options{Queue: q, Tickets: token.NewTickets(k.TicketSecret, "vestibule"),
		Entries: token.NewEntries(k.Entry, "vestibule"), Origins: token.NewOrigins(k.TicketSecret),
		AdminAuth: api.AdminKey, AdminKey: adminKey, DefaultRoom: def})
	id := redistest.Room(f)
	path := "/api/admin/rooms/" + id
	opens := time.Date(2031, 5, 1, 10, 0, 0, 0, time.UTC)
	prev := room.Config{MaxActive: 7, AdmitPerMinute: 70, SessionTTLSeconds: 700, ClaimTTLSeconds: 70,
		HeartbeatTTLSeconds: 77, Mode: room.ModePaused, OpensAt: &opens, OriginURL: "https://prev.example/x?y=1",
		ClientEnqueuePerMinute: 7, Page: &room.Page{Title: room.Text{ByLang: map[string]string{"en": "Prev", "ko": "이전"}}}}
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, body []byte, exists bool) {
		// Reset the room to the state this input starts from.
		base := def
		if exists {
			if _, err := q.PutConfig(ctx, id, prev); err != nil {
				t.Fatal(err)
			}
			base = prev
		} else if err := rdb.Del(ctx, roomdb.KeysFor(id).List()...).Err(); err != nil {
			t.Fatal(err)
		}

		// What the API promises: the body overlays the current (or default)
		// config, unknown fields and trailing data are refused, and Validate decides.
		want := base
		want.OpensAt = clonePtr(base.OpensAt)
		want.Page = clonePtr(base.Page) // a page in the body replaces it through the pointer
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		err := dec.Decode(&want)
		if err == nil && dec.More() {
			err = errors.New("trailing data")
		}
		if k, dup := api.DuplicateKey(body); err == nil && dup {
			err = errors.New("duplicate key " + k) // encoding/json would take the last
		}
		if want.Page.IsZero() { // an empty page is stored, and so answered, as none
			want.Page = nil
		}
		if err == nil {
			err = want.Validate()
		}

		put := apitest.Send(t, h, apitest.Event("PUT", path, string(body), apitest.Bearer(adminKey)))
		checkResponse(t, put.APIGatewayV2HTTPResponse, nil)
		get := apitest.Send(t, h, apitest.Event("GET", path, "", apitest.Bearer(adminKey)))
		checkResponse(t, get.APIGatewayV2HTTPResponse, nil)

		if len(body) > api.MaxBody {
			if put.StatusCode != 413 {
				t.Fatalf("PUT of %d bytes: %d %s, want 413", len(body), put.StatusCode, put.Body)
			}
		} else if err != nil {
			if put.StatusCode != 400 || (put.Code() != "bad_json" && put.Code() != "invalid_config") {
				t.Fatalf("PUT %q (invalid: %v): %d %s, want 400", body, err, put.StatusCode, put.Body)
			}
		} else if put.StatusCode != 200 {
			t.Fatalf("PUT %q (valid %+v): %d %s, want 200", body, want, put.StatusCode, put.Body)
		}

		if put.StatusCode != 200 {
			// Nothing was stored: the room is as it was.
			if !exists {
				apitest.WantStatus(t, get, 404, "unknown_room")
				return
			}
			apitest.WantStatus(t, get, 200, "")
			if got := configOf(t, get.Body); !cmp.Equal(got, prev) {
				t.Fatalf("a refused PUT %q changed the room (-before +after):\n%s", body, cmp.Diff(prev, got))
			}
			return
		}

		answered := configOf(t, put.Body)
		if want.OpensAt != nil { // stored, and so answered, to the millisecond
			want.OpensAt = ptr(want.OpensAt.Truncate(time.Millisecond))
		}
		if !cmp.Equal(answered, want) {
			t.Fatalf("PUT %q answered a config other than the one sent (-want +answered):\n%s", body, cmp.Diff(want, answered))
		}
		if err := answered.Validate(); err != nil {
			t.Fatalf("PUT %q answered an invalid config: %v", body, err)
		}
		b, err := json.Marshal(answered)
		if err != nil {
			t.Fatal(err)
		}
		var again room.Config
		if err := json.Unmarshal(b, &again); err != nil || !cmp.Equal(again, answered) {
			t.Fatalf("config %s does not round-trip through JSON: %+v, %v", b, again, err)
		}
		apitest.WantStatus(t, get, 200, "")
		if stored := configOf(t, get.Body); !cmp.Equal(stored, answered) {
			t.Fatalf("PUT %q stored a config other than the one answered (-answered +stored):\n%s", body, cmp.Diff(answered, stored))
		}
	})
}

// configOf reads the "config" of an admin response.
func configOf(t *testing.T, body string) room.Config {
	t.Helper()
	var r struct {
		Config room.Config `json:"config"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("admin response %q: %v", body, err)
	}
	return r.Config
}

func ptr[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
