package bookingapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/orders"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// recorder is a booking.Publisher that keeps what it was given, or fails.
type recorder struct {
	mu   sync.Mutex
	evs  []booking.OrderEvent
	fail bool
}

func (r *recorder) Publish(_ context.Context, evs []booking.OrderEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("bus down")
	}
	r.evs = append(r.evs, evs...)
	return nil
}

func (r *recorder) events() []booking.OrderEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]booking.OrderEvent(nil), r.evs...)
}

func (r *recorder) setFail(b bool) { r.mu.Lock(); r.fail = b; r.mu.Unlock() }

// own is the booking engine as the sweep sees it, with the registry cut down
// to the test's own events: the Redis is shared with other tests (other
// packages' too, with REDIS_URL), whose events a sweep of the whole registry
// would count.
type own struct {
	*bookingdb.Engine
	ids []string
}

func (o own) Events(context.Context) ([]string, error) { return o.ids, nil }

// sweep is orders.Sweep over the test's own events only.
func (f *bookingFixture) sweep(pub booking.Publisher, ids ...string) orders.SweepSummary {
	return orders.Sweep(context.Background(), own{f.eng, ids}, pub, f.Clock.Now(), nil)
}

// bookingFixture is the API fixture with the booking kit wired in.
type bookingFixture struct {
	*apitest.Fixture
	eng *bookingdb.Engine
	pub *recorder
	rdb redis.UniversalClient
}

func newBookingFixture(t *testing.T, rdb redis.UniversalClient) *bookingFixture {
	t.Helper()
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	b := &bookingFixture{eng: bookingdb.New(rdb, bookingdb.WithClock(clk.Now)), pub: &recorder{}, rdb: rdb}
	b.Fixture = apitest.NewFixtureOn(t, roomdb.New(rdb, roomdb.WithClock(clk.Now)), clk, func(k *token.Keys, o *api.Options) {
		o.Booking, o.Sessions, o.Orders = b.eng, token.NewBookingSessions(k.TicketSecret, "vestibule"), b.pub
	})
	return b
}

func forEachBooking(t *testing.T, fn func(t *testing.T, f *bookingFixture)) {
	for name, c := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) { fn(t, newBookingFixture(t, c)) })
	}
}

// passthrough creates a room that admits at once.
func (f *bookingFixture) passthrough() string {
	f.T.Helper()
	return f.Room(`{"mode":"passthrough","maxActive":100,"sessionTTLSeconds":600}`)
}

// visitor joins the room, is admitted, and the origin consumes the entry:
// it returns the entry token and the booking session consume answered.
func (f *bookingFixture) visitor(roomID string) (entry, session string) {
	f.T.Helper()
	e := f.Do("POST", "/api/rooms/"+roomID+"/enqueue", "", nil)
	entry = e.Str("entryToken")
	if entry == "" {
		f.T.Fatalf("not admitted: %s", e.Body)
	}
	c := f.Redeem("/api/consume", entry)
	apitest.WantStatus(f.T, c, 200, "")
	if session = c.Str("bookingSession"); session == "" {
		f.T.Fatalf("consume without bookingSession: %s", c.Body)
	}
	return entry, session
}

// define defines an event as the admin.
func (f *bookingFixture) define(event, body string) apitest.Response {
	f.T.Helper()
	return f.Admin("PUT", "/api/admin/events/"+event, body)
}

func (f *bookingFixture) hold(event, session, body string) apitest.Response {
	f.T.Helper()
	return f.Do("POST", "/api/events/"+event+"/holds", body, apitest.Bearer(session))
}

// origin calls an origin route with the credential of roomID.
func (f *bookingFixture) origin(roomID, path, body string, headers ...string) apitest.Response {
	f.T.Helper()
	h := apitest.Bearer(f.Origins.Credential(roomID))
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return f.Do("POST", path, body, h)
}

func (f *bookingFixture) confirm(roomID, event, tok, session, key string) apitest.Response {
	f.T.Helper()
	return f.origin(roomID, "/api/events/"+event+"/holds/"+tok+"/confirm", `{"session":"`+session+`"}`, "Idempotency-Key", key)
}

func errField(r apitest.Response, k string) any {
	e, _ := r.JSON["error"].(map[string]any)
	return e[k]
}

// The whole path: define, view, hold with the booking session consume gave,
// confirm (one event), retry (same order, no event), cancel (seats back, one
// event), and every refusal on the way.
func TestBookingJourney(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		ev := id // the event is named after its room: the hold checks the session in one script

		apitest.WantStatus(t, f.Do("PUT", "/api/admin/events/"+ev, `{"seats":["A1"],"sessionLimit":1}`, nil), 401, "unauthorized")
		d := f.define(ev, `{"seats":["A1","A2","A3"],"stock":{"parking":2},"sessionLimit":4,"holdTTLSeconds":60}`)
		apitest.WantStatus(t, d, 200, "")
		if d.Str("room") != id || d.Num("seats") != 3 || d.Num("holdTTLSeconds") != 60 {
			t.Fatalf("define: %s", d.Body)
		}
		g := f.Admin("GET", "/api/admin/events/"+ev, "")
		apitest.WantStatus(t, g, 200, "")
		if g.Str("room") != id || g.JSON["seats"].(map[string]any)["A2"] != "available" {
			t.Fatalf("admin get: %s", g.Body)
		}
		apitest.WantStatus(t, f.Do("GET", "/api/admin/events/"+ev, "", nil), 401, "unauthorized")
		v := f.Do("GET", "/api/events/"+ev, "", nil)
		apitest.WantStatus(t, v, 200, "")
		if v.Headers["Cache-Control"] != "public, max-age=1" || v.JSON["stock"].(map[string]any)["parking"] != float64(2) {
			t.Fatalf("view: %v %s", v.Headers, v.Body)
		}

		entry, s1 := f.visitor(id)
		_, s2 := f.visitor(id)

		// Who may hold: a booking session, nothing else.
		body := `{"seats":["A1"],"units":{"parking":1}}`
		apitest.WantStatus(t, f.Do("POST", "/api/events/"+ev+"/holds", body, nil), 401, "missing_session")
		apitest.WantStatus(t, f.hold(ev, "garbage", body), 401, "invalid_session")
		apitest.WantStatus(t, f.hold(ev, entry, body), 401, "invalid_session")
		apitest.WantStatus(t, f.hold(ev, f.Origins.Credential(id), body), 401, "invalid_session")

		h := f.hold(ev, s1, body)
		apitest.WantStatus(t, h, 201, "")
		tok := h.Str("token")
		if tok == "" || !strings.HasPrefix(h.Str("session"), id+":") || h.Str("expiresAt") == "" {
			t.Fatalf("hold: %s", h.Body)
		}
		taken := f.hold(ev, s2, `{"seats":["A1","A2"]}`)
		apitest.WantStatus(t, taken, 409, "seat_taken")
		if s, _ := errField(taken, "seats").([]any); len(s) != 1 || s[0] != "A1" {
			t.Fatalf("seat_taken names %v", errField(taken, "seats"))
		}
		short := f.hold(ev, s2, `{"units":{"parking":2}}`)
		apitest.WantStatus(t, short, 409, "sold_out")
		if errField(short, "sku") != "parking" || errField(short, "available") != float64(1) {
			t.Fatalf("sold_out: %s", short.Body)
		}
		apitest.WantStatus(t, f.hold(ev, s2, `{"seats":["A2","A3"],"units":{"parking":1},"x":1}`), 400, "bad_json")
		apitest.WantStatus(t, f.hold(ev, s1, `{"seats":["A2","A3","B9"]}`), 404, "unknown_seat")
		apitest.WantStatus(t, f.hold(ev, s1, `{"seats":["A2","A3"],"units":{"parking":1}}`), 409, "session_limit")
		h2 := f.hold(ev, s2, `{"seats":["A2"]}`)
		apitest.WantStatus(t, h2, 201, "")

		// Confirm: the origin, with the room's credential and an idempotency key.
		sess1 := h.Str("session")
		path := "/api/events/" + ev + "/holds/" + tok + "/confirm"
		apitest.WantStatus(t, f.origin(id, path, `{"session":"`+sess1+`"}`), 400, "missing_idempotency_key")
		apitest.WantStatus(t, f.Do("POST", path, `{"session":"`+sess1+`"}`, map[string]string{"Idempotency-Key": "pi_1"}), 401, "invalid_origin_credential")
		apitest.WantStatus(t, f.confirm(id+"x", ev, tok, sess1, "pi_1"), 401, "invalid_origin_credential")
		apitest.WantStatus(t, f.confirm(id, ev, tok, h2.Str("session"), "pi_1"), 403, "wrong_session")
		c := f.confirm(id, ev, tok, sess1, "pi_1")
		apitest.WantStatus(t, c, 201, "")
		if c.Str("type") != booking.OrderConfirmed || c.Str("order") != tok || c.Str("idempotencyKey") != "pi_1" || c.Headers["Idempotent-Replayed"] != "" {
			t.Fatalf("confirm: %v %s", c.Headers, c.Body)
		}
		if evs := f.pub.events(); len(evs) != 1 || evs[0].Type != booking.OrderConfirmed || evs[0].Order != tok {
			t.Fatalf("published %+v, want the one confirmed order", evs)
		}
		if p, err := f.eng.Outbox(context.Background(), ev, 100, f.Clock.Now().Add(time.Hour)); err != nil || slices.ContainsFunc(p, func(x booking.Pending) bool { return x.Inventory == nil }) {
			t.Fatalf("outbox after a published confirm: %+v, %v", p, err)
		}
		// A retry with the same key: the same order, no second event.
		r := f.confirm(id, ev, tok, sess1, "pi_1")
		apitest.WantStatus(t, r, 200, "")
		if r.Headers["Idempotent-Replayed"] != "true" || r.Str("order") != tok || r.Str("confirmedAt") != c.Str("confirmedAt") {
			t.Fatalf("replay: %v %s", r.Headers, r.Body)
		}
		if n := len(f.pub.events()); n != 1 {
			t.Fatalf("%d events after a replay, want 1", n)
		}
		apitest.WantStatus(t, f.confirm(id, ev, h2.Str("token"), h2.Str("session"), "pi_1"), 422, "idempotency_key_reused")
		apitest.WantStatus(t, f.confirm(id, ev, tok, sess1, "pi_2"), 409, "already_confirmed")
		apitest.WantStatus(t, f.origin(id, "/api/events/"+ev+"/holds/"+tok+"/release", `{"session":"`+sess1+`"}`), 409, "already_confirmed")

		// Compensation: the payment failed after confirm; cancel gives everything back, once.
		cancel := "/api/events/" + ev + "/orders/" + tok + "/cancel"
		apitest.WantStatus(t, f.Do("POST", cancel, `{"reason":"payment_failed"}`, nil), 401, "invalid_origin_credential")
		x := f.origin(id, cancel, `{"reason":"payment_failed"}`)
		apitest.WantStatus(t, x, 200, "")
		if x.Str("type") != booking.OrderCancelled || x.Str("reason") != "payment_failed" || x.Str("cancelledAt") == "" {
			t.Fatalf("cancel: %s", x.Body)
		}
		evs := f.pub.events()
		if len(evs) != 2 || evs[1].Type != booking.OrderCancelled || evs[1].Order != tok {
			t.Fatalf("published %+v, want confirmed then cancelled", evs)
		}
		v = f.Do("GET", "/api/events/"+ev, "", nil)
		if v.JSON["seats"].(map[string]any)["A1"] != "available" || v.JSON["stock"].(map[string]any)["parking"] != float64(2) {
			t.Fatalf("after cancel: %s", v.Body)
		}
		again := f.origin(id, cancel, `{"reason":"webhook twice"}`)
		apitest.WantStatus(t, again, 200, "")
		if again.Headers["Idempotent-Replayed"] != "true" || again.Str("reason") != "payment_failed" || len(f.pub.events()) != 2 {
			t.Fatalf("second cancel: %v %s, %d events", again.Headers, again.Body, len(f.pub.events()))
		}
		apitest.WantStatus(t, f.confirm(id, ev, tok, sess1, "pi_1"), 409, "order_cancelled")
		apitest.WantStatus(t, f.origin(id, "/api/events/"+ev+"/orders/123/cancel", ``), 404, "unknown_order")

		// Release: the hold's seat returns; a second release is no error.
		rel := "/api/events/" + ev + "/holds/" + h2.Str("token") + "/release"
		apitest.WantStatus(t, f.origin(id, rel, `{"session":"`+sess1+`"}`), 403, "wrong_session")
		apitest.WantStatus(t, f.origin(id, rel, `{"session":"`+h2.Str("session")+`"}`), 200, "")
		apitest.WantStatus(t, f.origin(id, rel, `{"session":"`+h2.Str("session")+`"}`), 200, "")

		g = f.Admin("GET", "/api/admin/events/"+ev, "")
		cnt := g.JSON["counters"].(map[string]any)
		if cnt["holds"] != float64(2) || cnt["confirmed"] != float64(1) || cnt["cancelled"] != float64(1) || cnt["released"] != float64(1) || cnt["live"] != float64(0) || g.Str("fence") != h2.Str("token") {
			t.Fatalf("counters: %s", g.Body)
		}
	})
}

// A hold's token that is no longer a live hold is refused: 410 when the
// confirm finds it overdue, 409 stale_token once it is gone and its seat
// held by someone else.
func TestBookingStaleAndExpired(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2"],"sessionLimit":2,"holdTTLSeconds":60}`), 200, "")
		_, s1 := f.visitor(id)
		_, s2 := f.visitor(id)
		a := f.hold(id, s1, `{"seats":["A1"]}`)
		b := f.hold(id, s1, `{"seats":["A2"]}`)
		f.Clock.Advance(61 * time.Second)
		apitest.WantStatus(t, f.confirm(id, id, a.Str("token"), a.Str("session"), "k1"), 410, "hold_expired")
		// b expired too; s2 holds its seat now, with a larger token.
		c := f.hold(id, s2, `{"seats":["A2"]}`)
		apitest.WantStatus(t, c, 201, "")
		if nc, nb := atoi(t, c.Str("token")), atoi(t, b.Str("token")); nc <= nb {
			t.Fatalf("new token %s not above %s", c.Str("token"), b.Str("token"))
		}
		apitest.WantStatus(t, f.confirm(id, id, b.Str("token"), b.Str("session"), "k2"), 409, "stale_token")
		apitest.WantStatus(t, f.confirm(id, id, "999", b.Str("session"), "k3"), 409, "stale_token")
		if n := len(f.pub.events()); n != 0 {
			t.Fatalf("%d events published, want none", n)
		}
	})
}

// Only an active session holds: completed, past its end, or of another room is refused.
func TestBookingSessionChecks(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		other := f.passthrough()
		apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2","A3"],"sessionLimit":3}`), 200, "")
		entry, s := f.visitor(id)
		_, stranger := f.visitor(other)
		apitest.WantStatus(t, f.hold(id, stranger, `{"seats":["A1"]}`), 401, "invalid_session")
		apitest.WantStatus(t, f.hold(id, s, `{"seats":["A1"]}`), 201, "")
		// The origin completes the session: no more holds.
		apitest.WantStatus(t, f.Redeem("/api/complete", entry), 200, "")
		apitest.WantStatus(t, f.hold(id, s, `{"seats":["A2"]}`), 401, "session_ended")
		// A session past its end (600 s): the token itself says so.
		_, s3 := f.visitor(id)
		f.Clock.Advance(601*time.Second + token.Leeway)
		apitest.WantStatus(t, f.hold(id, s3, `{"seats":["A3"]}`), 401, "session_ended")
	})
}

// An event that names another room: its sessions hold (the session is read
// before the hold, the keys being in another slot), its origin confirms.
func TestBookingEventOfAnotherRoom(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		ev := redistest.Room(t)
		apitest.WantStatus(t, f.define(ev, `{"room":"`+id+`","stock":{"ga":10},"sessionLimit":2}`), 200, "")
		entry, s := f.visitor(id)
		h := f.hold(ev, s, `{"units":{"ga":2}}`)
		apitest.WantStatus(t, h, 201, "")
		apitest.WantStatus(t, f.confirm(ev, ev, h.Str("token"), h.Str("session"), "k"), 401, "invalid_origin_credential")
		apitest.WantStatus(t, f.confirm(id, ev, h.Str("token"), h.Str("session"), "k"), 201, "")
		apitest.WantStatus(t, f.Redeem("/api/complete", entry), 200, "")
		apitest.WantStatus(t, f.hold(ev, s, `{"units":{"ga":1}}`), 401, "session_ended")
	})
}

// A confirm whose publication fails still confirms; the event waits in the
// outbox and the sweep publishes it, once.
func TestBookingOutboxWhenPublishFails(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1}`), 200, "")
		_, s := f.visitor(id)
		h := f.hold(id, s, `{"seats":["A1"]}`)
		f.pub.setFail(true)
		apitest.WantStatus(t, f.confirm(id, id, h.Str("token"), h.Str("session"), "k"), 201, "")
		if !strings.Contains(f.Logs.String(), "order event left in the outbox") {
			t.Fatalf("no log of the failed publication: %s", f.Logs.String())
		}
		// Within the grace the sweep leaves it to the route.
		if sum := f.sweep(f.pub, id); sum.Published != 0 {
			t.Fatalf("sweep within the grace: %+v", sum)
		}
		f.pub.setFail(false)
		apitest.WantStatus(t, f.confirm(id, id, h.Str("token"), h.Str("session"), "k"), 200, "") // a replay publishes nothing
		if n := len(f.pub.events()); n != 0 {
			t.Fatalf("a replay published %d events", n)
		}
		f.Clock.Advance(orders.Grace)
		if sum := f.sweep(f.pub, id); sum.Published != 1 || sum.Errors != 0 {
			t.Fatalf("sweep: %+v", sum)
		}
		if sum := f.sweep(f.pub, id); sum.Published != 0 {
			t.Fatalf("second sweep: %+v", sum)
		}
		if evs := f.pub.events(); len(evs) != 1 || evs[0].Order != h.Str("token") || evs[0].Type != booking.OrderConfirmed {
			t.Fatalf("published %+v", evs)
		}
	})
}

// Bad input is a 400 (or 404, 413) with a JSON error, never a 5xx.
func TestBookingBadInput(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		_, s := f.visitor(id)
		apitest.WantStatus(t, f.Do("GET", "/api/events/bad.id", "", nil), 400, "invalid_event")
		apitest.WantStatus(t, f.Do("GET", "/api/events/"+id, "", nil), 404, "unknown_event")
		apitest.WantStatus(t, f.hold(id, s, `{"seats":["A1"]}`), 404, "unknown_event")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":0}`), 400, "invalid_inventory")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1","A1"],"sessionLimit":1}`), 400, "invalid_inventory")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1,"holdTTLSeconds":7200}`), 400, "invalid_inventory")
		apitest.WantStatus(t, f.define(id, `{"room":"no room!","seats":["A1"],"sessionLimit":1}`), 400, "invalid_inventory")
		apitest.WantStatus(t, f.define(id, `{"seats":"A1"}`), 400, "bad_json")
		apitest.WantStatus(t, f.define("bad.id", `{"seats":["A1"],"sessionLimit":1}`), 400, "invalid_event")
		// A venue's seat list is larger than 8 KiB: this route takes up to 1 MiB.
		many := make([]string, 3000)
		for i := range many {
			many[i] = `"S` + strconv.Itoa(i) + `"`
		}
		big := `{"seats":[` + strings.Join(many, ",") + `],"sessionLimit":4}`
		if len(big) <= api.MaxBody {
			t.Fatalf("seat list of %d bytes is not over MaxBody", len(big))
		}
		apitest.WantStatus(t, f.define(id, big), 200, "")
		apitest.WantStatus(t, f.define(id, `{"seats":["`+strings.Repeat("A", api.MaxEventBody)+`"],"sessionLimit":1}`), 413, "body_too_large")
		apitest.WantStatus(t, f.hold(id, s, `{"seats":["`+strings.Repeat("A", api.MaxBody)+`"]}`), 413, "body_too_large")

		apitest.WantStatus(t, f.hold(id, s, ``), 400, "bad_json")
		apitest.WantStatus(t, f.hold(id, s, `{"seats":["S1","S1"]}`), 400, "invalid_request")
		apitest.WantStatus(t, f.hold(id, s, `{}`), 400, "invalid_request")
		apitest.WantStatus(t, f.hold(id, s, `{"units":{"ga":1}}`), 404, "unknown_sku")
		h := f.hold(id, s, `{"seats":["S1"]}`)
		apitest.WantStatus(t, h, 201, "")
		// A new definition while a hold is live is refused.
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1}`), 409, "event_in_use")
		for _, tok := range []string{"abc", "0", "-1", "0012", "99999999999999999999"} {
			apitest.WantStatus(t, f.confirm(id, id, tok, h.Str("session"), "k"), 400, "invalid_request")
		}
		apitest.WantStatus(t, f.confirm(id, id, h.Str("token"), h.Str("session"), "bad key!"), 400, "invalid_request")
		apitest.WantStatus(t, f.origin(id, "/api/events/"+id+"/holds/"+h.Str("token")+"/confirm", `not json`, "Idempotency-Key", "k"), 400, "bad_json")
		apitest.WantStatus(t, f.origin(id, "/api/events/"+id+"/holds/"+h.Str("token")+"/release", `{"session":""}`), 400, "invalid_request")
		apitest.WantStatus(t, f.origin(id, "/api/events/"+id+"/orders/"+h.Str("token")+"/cancel", `{"reason":"`+strings.Repeat("x", 201)+`"}`), 400, "invalid_request")
		apitest.WantStatus(t, f.Do("DELETE", "/api/events/"+id, "", nil), 405, "method_not_allowed")
		apitest.WantStatus(t, f.Do("POST", "/api/events/"+id+"/holds//confirm", "", nil), 404, "unknown_route")
	})
}

// Without a booking engine the booking routes do not exist.
func TestBookingDisabled(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		apitest.WantStatus(t, f.Do("GET", "/api/events/ev", "", nil), 404, "unknown_route")
	})
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("token %q: %v", s, err)
	}
	return n
}

// A session's holds end with it: the origin's complete frees the seats and
// stock at once (the event named after the room, or another event of the
// room), a late confirm is refused; a session that times out frees them at
// the sweep, and a confirm in between is refused already.
func TestBookingHoldsEndWithTheSession(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		ev2 := redistest.Room(t)
		apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2","A3"],"sessionLimit":4,"holdTTLSeconds":3600}`), 200, "")
		apitest.WantStatus(t, f.define(ev2, `{"room":"`+id+`","stock":{"ga":3},"sessionLimit":4,"holdTTLSeconds":3600}`), 200, "")
		entry, s1 := f.visitor(id)
		h := f.hold(id, s1, `{"seats":["A1"]}`)
		apitest.WantStatus(t, h, 201, "")
		u := f.hold(ev2, s1, `{"units":{"ga":2}}`)
		apitest.WantStatus(t, u, 201, "")

		apitest.WantStatus(t, f.Redeem("/api/complete", entry), 200, "")
		v := f.Do("GET", "/api/events/"+id, "", nil)
		if v.JSON["seats"].(map[string]any)["A1"] != "available" {
			t.Fatalf("A1 after complete: %s", v.Body)
		}
		if v := f.Do("GET", "/api/events/"+ev2, "", nil); v.JSON["stock"].(map[string]any)["ga"] != float64(3) {
			t.Fatalf("stock after complete: %s", v.Body)
		}
		apitest.WantStatus(t, f.confirm(id, id, h.Str("token"), h.Str("session"), "late"), 409, "stale_token")
		apitest.WantStatus(t, f.confirm(id, ev2, u.Str("token"), u.Str("session"), "late"), 409, "stale_token")
		g := f.Admin("GET", "/api/admin/events/"+id, "")
		if g.JSON["counters"].(map[string]any)["ended"] != float64(1) || atoi(t, g.Str("fence")) <= atoi(t, h.Str("token")) {
			t.Fatalf("after complete: %s", g.Body)
		}

		// Timed out (the room's sessions last 600 s): refused at once, freed at the sweep.
		_, s2 := f.visitor(id)
		_, s3 := f.visitor(id)
		h2 := f.hold(id, s2, `{"seats":["A2"]}`)
		h3 := f.hold(id, s3, `{"seats":["A3"]}`)
		apitest.WantStatus(t, h3, 201, "")
		f.Clock.Advance(601 * time.Second)
		apitest.WantStatus(t, f.confirm(id, id, h2.Str("token"), h2.Str("session"), "late2"), 409, "stale_token")
		if _, err := f.Q.Tick(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		sum := f.sweep(nil, id)
		if sum.Ended != 1 || sum.Errors != 0 {
			t.Fatalf("sweep: %+v, want session 3's hold ended", sum)
		}
		v = f.Do("GET", "/api/events/"+id, "", nil)
		if st := v.JSON["seats"].(map[string]any); st["A2"] != "available" || st["A3"] != "available" {
			t.Fatalf("after the timeout and the sweep: %s", v.Body)
		}
	})
}

// The small ones: holdTTLSeconds 0 is refused like any value outside 1–3600
// (absent is the default); consume answers the session id ('room:seq') that
// confirm and release name, the same as the hold's answer.
func TestBookingDefinitionEdges(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1,"holdTTLSeconds":0}`), 400, "invalid_inventory")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1,"holdTTLSeconds":-1}`), 400, "invalid_inventory")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1,"holdTTLSeconds":3601}`), 400, "invalid_inventory")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1,"holdTTLSeconds":1}`), 200, "")
		d := f.define(id, `{"seats":["A1"],"sessionLimit":1}`)
		apitest.WantStatus(t, d, 200, "")
		if d.Num("holdTTLSeconds") != 300 {
			t.Fatalf("default TTL: %s", d.Body)
		}
		e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		c := f.Redeem("/api/consume", e.Str("entryToken"))
		apitest.WantStatus(t, c, 200, "")
		h := f.hold(id, c.Str("bookingSession"), `{"seats":["A1"]}`)
		apitest.WantStatus(t, h, 201, "")
		if c.Str("session") == "" || c.Str("session") != h.Str("session") || !strings.HasPrefix(c.Str("session"), id+":") {
			t.Fatalf("consume's session %q, the hold's %q", c.Str("session"), h.Str("session"))
		}
	})
}

// Extend over HTTP: bounded by the event, idempotent by its number, refused
// for a confirmed or expired hold; the confirm after it checks the same token.
func TestBookingExtend(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		d := f.define(id, `{"seats":["A1","A2"],"sessionLimit":2,"holdTTLSeconds":60,"maxHoldExtensions":2,"maxHoldSeconds":150}`)
		apitest.WantStatus(t, d, 200, "")
		if d.Num("maxHoldExtensions") != 2 || d.Num("maxHoldSeconds") != 150 {
			t.Fatalf("define: %s", d.Body)
		}
		_, s := f.visitor(id)
		h := f.hold(id, s, `{"seats":["A1"]}`)
		tok, sess := h.Str("token"), h.Str("session")
		ext := func(n int) apitest.Response {
			return f.origin(id, "/api/events/"+id+"/holds/"+tok+"/extend", `{"session":"`+sess+`","extension":`+strconv.Itoa(n)+`}`)
		}
		f.Clock.Advance(50 * time.Second)
		x := ext(1)
		apitest.WantStatus(t, x, 200, "")
		want := f.Clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		if x.Str("expiresAt") != want || x.Num("extensions") != 1 || x.Str("token") != tok || x.Headers["Idempotent-Replayed"] != "" {
			t.Fatalf("extend: %s, want expiresAt %s", x.Body, want)
		}
		r := ext(1)
		apitest.WantStatus(t, r, 200, "")
		if r.Headers["Idempotent-Replayed"] != "true" || r.Str("expiresAt") != want {
			t.Fatalf("retried extend: %v %s", r.Headers, r.Body)
		}
		apitest.WantStatus(t, ext(3), 409, "extension_limit")
		apitest.WantStatus(t, f.origin(id, "/api/events/"+id+"/holds/"+tok+"/extend", `{"session":"`+sess+`"}`), 400, "bad_json")
		apitest.WantStatus(t, f.origin(id, "/api/events/"+id+"/holds/"+tok+"/extend", `{"session":"`+sess+`","extension":0}`), 400, "invalid_request")
		apitest.WantStatus(t, f.Do("POST", "/api/events/"+id+"/holds/"+tok+"/extend", `{"session":"`+sess+`","extension":2}`, nil), 401, "invalid_origin_credential")
		f.Clock.Advance(30 * time.Second) // past the first TTL: still held
		apitest.WantStatus(t, f.confirm(id, id, tok, sess, "pay"), 201, "")
		apitest.WantStatus(t, ext(2), 409, "already_confirmed")

		_, s2 := f.visitor(id)
		h2 := f.hold(id, s2, `{"seats":["A2"]}`)
		f.Clock.Advance(61 * time.Second)
		apitest.WantStatus(t, f.origin(id, "/api/events/"+id+"/holds/"+h2.Str("token")+"/extend", `{"session":"`+h2.Str("session")+`","extension":1}`), 410, "hold_expired")
		g := f.Admin("GET", "/api/admin/events/"+id, "")
		if g.JSON["counters"].(map[string]any)["extended"] != float64(1) || g.Num("maxHoldSeconds") != 150 || g.Num("holdTTLSeconds") != 60 {
			t.Fatalf("admin get: %s", g.Body)
		}
	})
}

// lose deletes every key of the events ids, as a total loss of Redis would,
// and only theirs: the Redis is shared with other tests, and a FLUSHALL would
// take their keys too.
func lose(t *testing.T, rdb redis.UniversalClient, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		if err := rdb.Del(ctx, bookingdb.KeysFor(id).List()...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Del(ctx, bookingdb.RoomEventsKey(id)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.SRem(ctx, bookingdb.RegistryKey, id).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Definitions survive a total loss: kept in the rooms' settings store, an
// event Redis lost is defined again when a call finds it missing.
func TestBookingDefinitionsSurviveTotalLoss(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			clk := testkit.FixedClock(time.Now().Truncate(time.Second))
			store := durable.Disk{Dir: t.TempDir()}
			b := &bookingFixture{eng: bookingdb.New(rdb, bookingdb.WithClock(clk.Now), bookingdb.WithDefinitions(durable.Events(store))), pub: &recorder{}}
			b.Fixture = apitest.NewFixtureOn(t, roomdb.New(rdb, roomdb.WithClock(clk.Now)), clk, func(k *token.Keys, o *api.Options) {
				o.Booking, o.Sessions, o.Orders = b.eng, token.NewBookingSessions(k.TicketSecret, "vestibule"), b.pub
			})
			f := b
			id := f.passthrough()
			ev2 := redistest.Room(t)
			apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2"],"stock":{"ga":5},"sessionLimit":2,"holdTTLSeconds":90,"maxHoldExtensions":1}`), 200, "")
			apitest.WantStatus(t, f.define(ev2, `{"room":"`+id+`","stock":{"ga":3},"sessionLimit":1}`), 200, "")
			_, s := f.visitor(id)
			h := f.hold(id, s, `{"seats":["A1"]}`)
			apitest.WantStatus(t, h, 201, "")

			lose(t, rdb, id, ev2)
			g := f.Admin("GET", "/api/admin/events/"+id, "")
			apitest.WantStatus(t, g, 200, "")
			if g.Str("room") != id || g.Num("holdTTLSeconds") != 90 || g.Num("sessionLimit") != 2 || g.Num("maxHoldExtensions") != 1 ||
				g.JSON["seats"].(map[string]any)["A1"] != "available" || g.JSON["stock"].(map[string]any)["ga"] != float64(5) {
				t.Fatalf("after a total loss: %s", g.Body)
			}
			if v := f.Do("GET", "/api/events/"+ev2, "", nil); v.StatusCode != 200 || v.JSON["stock"].(map[string]any)["ga"] != float64(3) {
				t.Fatalf("the other event after a total loss: %d %s", v.StatusCode, v.Body)
			}
			apitest.WantStatus(t, f.Do("GET", "/api/events/"+redistest.Room(t), "", nil), 404, "unknown_event")
		})
	}
}

// Inventory events take the order events' path: the outbox, then the sweep
// publishes them as PutEvents entries (source vestibule.booking,
// detail-type the type), numbered without a gap.
func TestBookingInventoryEventsReachTheBus(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2"],"sessionLimit":2,"maxHoldExtensions":1}`), 200, "")
		entry, s := f.visitor(id)
		h := f.hold(id, s, `{"seats":["A1"]}`)
		f.Clock.Advance(time.Second)
		apitest.WantStatus(t, f.origin(id, "/api/events/"+id+"/holds/"+h.Str("token")+"/extend", `{"session":"`+h.Str("session")+`","extension":1}`), 200, "")
		apitest.WantStatus(t, f.confirm(id, id, h.Str("token"), h.Str("session"), "pay"), 201, "")
		apitest.WantStatus(t, f.hold(id, s, `{"seats":["A2"]}`), 201, "")
		apitest.WantStatus(t, f.Redeem("/api/complete", entry), 200, "")
		f.Clock.Advance(orders.Grace)
		var buf strings.Builder
		sum := f.sweep(orders.NewLog(&buf), id)
		if sum.Errors != 0 {
			t.Fatalf("sweep: %+v", sum)
		}
		var types []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			en, err := eventbus.ParseLine(line)
			if err != nil || en.Source != orders.Source {
				t.Fatalf("line %q: %v", line, err)
			}
			var iv booking.InventoryEvent
			if err := json.Unmarshal(en.Detail, &iv); err != nil || iv.Type != en.DetailType {
				t.Fatalf("entry %s %s (%v)", en.DetailType, en.Detail, err)
			}
			if iv.Sequence != int64(len(types)+1) {
				t.Fatalf("entry %d: %s", len(types), en.Detail)
			}
			types = append(types, en.DetailType)
		}
		want := []string{booking.InventoryHeld, booking.InventoryExtended, booking.InventoryConfirmed, booking.InventoryHeld, booking.InventoryEnded}
		if !slices.Equal(types, want) {
			t.Fatalf("published %v, want %v", types, want)
		}
		if sum := f.sweep(orders.NewLog(&buf), id); sum.Published+sum.Inventory != 0 {
			t.Fatalf("second sweep published %+v", sum)
		}
	})
}

// The admin reads an event's orders page by page (what reconcile compares
// with the origin's record): every order once, cancelled ones marked.
func TestBookingOrdersPages(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		seats := make([]string, 600)
		for i := range seats {
			seats[i] = `"S` + strconv.Itoa(i) + `"`
		}
		apitest.WantStatus(t, f.define(id, `{"seats":[`+strings.Join(seats, ",")+`],"sessionLimit":1000}`), 200, "")
		for i := range 600 {
			h, err := f.eng.Hold(context.Background(), id, "r:1", booking.Request{Seats: []string{"S" + strconv.Itoa(i)}})
			if err != nil {
				t.Fatal(err)
			}
			o, err := f.eng.Confirm(context.Background(), id, "r:1", h.Token, "k"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			if i == 7 {
				if _, err := f.eng.Cancel(context.Background(), id, o.Order, "refund"); err != nil {
					t.Fatal(err)
				}
			}
		}
		seen, cancelled, pages := map[string]bool{}, 0, 0
		for cursor := "0"; pages < 100; pages++ {
			g := f.Admin("GET", "/api/admin/events/"+id+"/orders?cursor="+cursor, "")
			apitest.WantStatus(t, g, 200, "")
			var page struct {
				Orders []booking.OrderEvent
				Next   string
			}
			if err := json.Unmarshal([]byte(g.Body), &page); err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Orders {
				seen[o.Order] = true
				if o.Type == booking.OrderCancelled {
					cancelled++
				}
			}
			if cursor = page.Next; cursor == "0" {
				break
			}
		}
		if len(seen) != 600 || cancelled != 1 || pages < 1 {
			t.Fatalf("%d orders over %d pages, %d cancelled", len(seen), pages+1, cancelled)
		}
		// The orders were made on the engine, not the routes: their events stay in the outbox of the
		// shared Redis, where another test's sweep would find them. Take them out.
		for {
			p, err := f.eng.Outbox(context.Background(), id, 1000, f.Clock.Now().Add(time.Hour))
			if err != nil || len(p) == 0 {
				break
			}
			ids := make([]string, len(p))
			for i, x := range p {
				ids[i] = x.ID
			}
			if err := f.eng.Ack(context.Background(), id, ids...); err != nil {
				t.Fatal(err)
			}
		}
		apitest.WantStatus(t, f.Admin("GET", "/api/admin/events/"+id+"/orders?cursor=x", ""), 400, "invalid_request")
		apitest.WantStatus(t, f.Admin("GET", "/api/admin/events/"+redistest.Room(t)+"/orders", ""), 404, "unknown_event")
		apitest.WantStatus(t, f.Do("GET", "/api/admin/events/"+id+"/orders", "", nil), 401, "unauthorized")
	})
}

// The gate's leave (/.vestibule/leave) ends the session through the same
// Complete, so it releases the session's holds at once too.
func TestBookingGateLeaveReleasesHolds(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		f.Gate(false, func(o *api.Options) { o.Booking = f.eng })
		tok, _ := f.Admit(`{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`)
		claims, _ := f.Entries.Verify(tok, f.Clock.Now())
		id := claims.Room
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1}`), 200, "")
		c := apitest.SetCookie(t, f.Enter("site.example", tok, "/"))
		ends, err := f.rdb.ZScore(t.Context(), roomdb.KeysFor(id).Active, strconv.FormatInt(claims.Seq, 10)).Result()
		if err != nil {
			t.Fatal(err)
		}
		h, err := f.eng.HoldSession(t.Context(), id, booking.RoomSession{Room: id, Seq: claims.Seq, Ends: time.UnixMilli(int64(ends))},
			booking.Request{Seats: []string{"A1"}})
		if err != nil {
			t.Fatal(err)
		}
		ev := apitest.Event("POST", "/.vestibule/leave", "", map[string]string{"x-forwarded-host": "site.example",
			"origin": "https://site.example", "sec-fetch-site": "same-origin"})
		ev.Cookies = []string{gate.CookieName + "=" + c.Value}
		if r := f.Send(ev); r.StatusCode != 303 {
			t.Fatalf("leave: %d %s", r.StatusCode, r.Body)
		}
		if v, err := f.eng.View(t.Context(), id); err != nil || v.Seats["A1"] != booking.SeatAvailable || v.Ended != 1 {
			t.Fatalf("after the gate's leave: %+v, %v", v, err)
		}
		apitest.WantStatus(t, f.confirm(id, id, strconv.FormatInt(h.Token, 10), h.Session, "late"), 409, "stale_token")
	})
}
