package bookingapi_test

import (
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// storedFixture is the booking fixture with event definitions kept in a
// store of its own (a temp folder), as a deployment keeps them.
func storedFixture(t *testing.T, rdb redis.UniversalClient) (*bookingFixture, durable.Disk) {
	t.Helper()
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	store := durable.Disk{Dir: t.TempDir()}
	b := &bookingFixture{pub: &recorder{}, rdb: rdb}
	b.Fixture = apitest.NewFixtureOn(t, roomdb.New(rdb, roomdb.WithClock(clk.Now)), clk, func(k *token.Keys, o *api.Options) {
		b.eng = bookingdb.New(rdb, bookingdb.WithClock(clk.Now), bookingdb.WithDefinitions(durable.Events(store)))
		o.Booking, o.Sessions, o.Orders = b.eng, token.NewBookingSessions(k.TicketSecret, "vestibule"), b.pub
	})
	return b, store
}

// Over HTTP, a sale across a total loss sells nothing twice: after the loss
// the event's holds answer 503 event_recovering (Retry-After 30, not a Redis
// error), both views say it, the rebuild route puts the origin's order back
// and reopens the event, the sold seat is then taken, and every step is in
// the room's audit log.
func TestBookingSaleAcrossTotalLossSellsNothingTwice(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			f, _ := storedFixture(t, rdb)
			id := f.passthrough()
			apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2"],"stock":{"ga":3},"sessionLimit":4}`), 200, "")
			_, s := f.visitor(id)
			h := f.hold(id, s, `{"seats":["A1"],"units":{"ga":3}}`)
			apitest.WantStatus(t, h, 201, "")
			o := f.confirm(id, id, h.Str("token"), h.Str("session"), "pay-1")
			apitest.WantStatus(t, o, 201, "")

			lose(t, rdb, id)
			_, s2 := f.visitor(id)
			r := f.hold(id, s2, `{"seats":["A1"]}`)
			apitest.WantStatus(t, r, 503, "event_recovering")
			if r.Headers["Retry-After"] != "30" || strings.Contains(f.Logs.String(), metrics.RedisErrors) {
				t.Fatalf("a closed event's hold: Retry-After %q; counted as a Redis error: %v", r.Headers["Retry-After"],
					strings.Contains(f.Logs.String(), metrics.RedisErrors))
			}
			if v := f.Do("GET", "/api/events/"+id, "", nil); v.StatusCode != 200 || v.JSON["recovering"] != true {
				t.Fatalf("the public view while closed: %d %s", v.StatusCode, v.Body)
			}
			g := f.Admin("GET", "/api/admin/events/"+id, "")
			if rs, _ := g.JSON["restore"].(map[string]any); rs["state"] != "recovering" || rs["restoredAt"] == nil {
				t.Fatalf("the admin view while closed: %s", g.Body)
			}
			body := `{"orders":[{"order":"` + o.Str("order") + `","seats":["A1"],"units":{"ga":3}}],"reopen":true}`
			rb := f.Admin("POST", "/api/admin/events/"+id+"/rebuild", body)
			if rb.StatusCode != 200 || rb.Num("added") != 1 || rb.JSON["recovering"] != false {
				t.Fatalf("rebuild: %d %s", rb.StatusCode, rb.Body)
			}
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/events/"+id+"/rebuild", body), 409, "event_open")
			taken := f.hold(id, s2, `{"seats":["A1"]}`)
			apitest.WantStatus(t, taken, 409, "seat_taken")
			apitest.WantStatus(t, f.hold(id, s2, `{"units":{"ga":1}}`), 409, "sold_out")
			h2 := f.hold(id, s2, `{"seats":["A2"]}`)
			apitest.WantStatus(t, h2, 201, "")
			if h2.Str("token") <= o.Str("order") { // same length: decimal order is numeric order
				t.Fatalf("a hold after the rebuild has token %s, not above the recorded %s", h2.Str("token"), o.Str("order"))
			}
			g = f.Admin("GET", "/api/admin/events/"+id, "")
			if rs, _ := g.JSON["restore"].(map[string]any); rs["state"] != "reopened" || rs["rebuiltOrders"] != float64(1) {
				t.Fatalf("the admin view after the rebuild: %s", g.Body)
			}
			log := f.Admin("GET", "/api/admin/rooms/"+id+"/log", "")
			if !strings.Contains(log.Body, `"action":"define event"`) || !strings.Contains(log.Body, `"action":"rebuild event"`) ||
				!strings.Contains(log.Body, `"event":"`+id+`"`) {
				t.Fatalf("the room's audit log: %s", log.Body)
			}
		})
	}
}

// One line of an origin's export with an order id of 2^53 broke an event for
// good: the fence went past what a Lua number counts, and every later hold got
// the same token. The rebuild route refuses such an id (400 invalid_request,
// nothing put back, the event still closed), and one more than a day ahead
// of the clock or from before 2020 (not the kit's); the event then rebuilt
// from the real record sells with tokens that grow.
func TestBookingRebuildRefusesOrderIDsPastWhatALuaNumberCounts(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			f, _ := storedFixture(t, rdb)
			id := f.passthrough()
			apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2","A3"],"sessionLimit":4}`), 200, "")
			_, s := f.visitor(id)
			h := f.hold(id, s, `{"seats":["A1"]}`)
			apitest.WantStatus(t, h, 201, "")
			o := f.confirm(id, id, h.Str("token"), h.Str("session"), "pay-1")
			apitest.WantStatus(t, o, 201, "")
			lose(t, rdb, id)
			ahead := strconv.FormatInt(f.Clock.Now().Add(49*time.Hour).UnixMicro(), 10)
			for _, bad := range []string{"9007199254740992", "9007199254740993", ahead, "10042"} {
				r := f.Admin("POST", "/api/admin/events/"+id+"/rebuild", `{"orders":[{"order":"`+bad+`","seats":["A2"]}],"reopen":true}`)
				apitest.WantStatus(t, r, 400, "invalid_request")
			}
			if g := f.Admin("GET", "/api/admin/events/"+id, ""); !strings.Contains(g.Body, `"state":"recovering"`) {
				t.Fatalf("after refused rebuilds the event is not still closed: %s", g.Body)
			}
			rb := f.Admin("POST", "/api/admin/events/"+id+"/rebuild", `{"orders":[{"order":"`+o.Str("order")+`","seats":["A1"]}],"reopen":true}`)
			if rb.StatusCode != 200 || rb.Num("added") != 1 {
				t.Fatalf("rebuild from the real record: %d %s", rb.StatusCode, rb.Body)
			}
			_, s2 := f.visitor(id)
			h2, h3 := f.hold(id, s2, `{"seats":["A2"]}`), f.hold(id, s2, `{"seats":["A3"]}`)
			apitest.WantStatus(t, h2, 201, "")
			apitest.WantStatus(t, h3, 201, "")
			if !(o.Str("order") < h2.Str("token") && h2.Str("token") < h3.Str("token")) { // same length: decimal order is numeric order
				t.Fatalf("tokens after the rebuild: %s, %s after the recorded %s; want them growing", h2.Str("token"), h3.Str("token"), o.Str("order"))
			}
		})
	}
}

// A stored definition that is no definition (a value out of range, a key
// twice, not JSON) makes the event's routes answer 503 event_unrestorable,
// like a room's: no internals in the answer, not counted as a Redis error,
// and a PUT of the event brings it back.
func TestBookingUnreadableDefinitionIsUnrestorable(t *testing.T) {
	f, store := storedFixture(t, redistest.Single(t))
	for rec, body := range map[string]string{
		"invalid": `{"seats":["A1"],"sessionLimit":0}`,
		"twice":   `{"seats":["A1"],"sessionLimit":1,"sessionLimit":2}`,
		"garbage": `{"seats":`,
	} {
		ev := redistest.Room(t) + rec
		if err := store.PutEvent(t.Context(), ev, []byte(body)); err != nil {
			t.Fatal(err)
		}
		for _, r := range []apitest.Response{
			f.Do("GET", "/api/events/"+ev, "", nil),
			f.Admin("GET", "/api/admin/events/"+ev, ""),
		} {
			msg, _ := r.JSON["error"].(map[string]any)["message"].(string)
			if r.StatusCode != 503 || r.Code() != "event_unrestorable" || strings.Contains(msg, "durable") ||
				strings.Contains(msg, "session limit") || strings.Contains(msg, ev) {
				t.Fatalf("%s: %d %s", rec, r.StatusCode, r.Body)
			}
		}
		if strings.Contains(f.Logs.String(), metrics.RedisErrors) {
			t.Fatalf("%s: counted as a Redis error: %s", rec, f.Logs.String())
		}
		apitest.WantStatus(t, f.define(ev, `{"seats":["A1"],"sessionLimit":1}`), 200, "")
		apitest.WantStatus(t, f.Do("GET", "/api/events/"+ev, "", nil), 200, "")
	}
}

// An admin PUT of an event is kept in its room's audit log, as a room's
// admin writes are: who, the event, and each setting's old and new value; a
// PUT that changes nothing adds no entry.
func TestBookingEventDefinitionIsAudited(t *testing.T) {
	forEachBooking(t, func(t *testing.T, f *bookingFixture) {
		id := f.passthrough()
		apitest.WantStatus(t, f.define(id, `{"seats":["A1"],"sessionLimit":1}`), 200, "")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2"],"sessionLimit":1}`), 200, "")
		apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2"],"sessionLimit":1}`), 200, "")
		log := f.Admin("GET", "/api/admin/rooms/"+id+"/log", "")
		entries, _ := log.JSON["entries"].([]any)
		var events []map[string]any
		for _, e := range entries {
			if m := e.(map[string]any); m["action"] == "define event" {
				events = append(events, m)
			}
		}
		if len(events) != 2 || events[0]["event"] != id || events[0]["who"] != "admin key" {
			t.Fatalf("audit log: %s", log.Body)
		}
		ch, _ := events[1]["changes"].([]any)
		if len(ch) != 1 || ch[0].(map[string]any)["setting"] != "seats" || ch[0].(map[string]any)["old"] != float64(1) ||
			ch[0].(map[string]any)["new"] != float64(2) {
			t.Fatalf("the second definition's changes: %v", events[1])
		}
		if !strings.Contains(f.Logs.String(), `"msg":"admin change"`) || !strings.Contains(f.Logs.String(), `"event":"`+id+`"`) {
			t.Fatalf("no admin change line: %s", f.Logs.String())
		}
	})
}

// A region failover closes the standby's events (POST …/close): over HTTP a
// close answers what the event has live, a second close changes nothing, a
// new hold answers 503 event_recovering while a hold made before the close is
// still confirmed, the admin view says when it closed, the rebuild gives the
// origin's record back (a seat another session held given up) and reopens it,
// and the close is in the room's audit log. Bad input gets 400 and 404.
func TestBookingCloseThenRebuild(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			f, _ := storedFixture(t, rdb)
			id := f.passthrough()
			apitest.WantStatus(t, f.define(id, `{"seats":["A1","A2","A3"],"sessionLimit":4}`), 200, "")
			_, s := f.visitor(id)
			h := f.hold(id, s, `{"seats":["A1"]}`)
			o := f.confirm(id, id, h.Str("token"), h.Str("session"), "pay-1")
			apitest.WantStatus(t, o, 201, "")
			_, s2 := f.visitor(id)
			h2 := f.hold(id, s2, `{"seats":["A2"]}`)
			_, s3 := f.visitor(id)
			h3 := f.hold(id, s3, `{"seats":["A3"]}`)
			apitest.WantStatus(t, h3, 201, "")

			if l := f.Admin("GET", "/api/admin/events", ""); l.StatusCode != 200 || !strings.Contains(l.Body, `"`+id+`"`) {
				t.Fatalf("the list of events: %d %s", l.StatusCode, l.Body)
			}
			c := f.Admin("POST", "/api/admin/events/"+id+"/close", "")
			if c.StatusCode != 200 || c.JSON["closedNow"] != true || c.JSON["recovering"] != true || c.Num("holds") != 2 || c.Num("live") != 1 {
				t.Fatalf("close: %d %s", c.StatusCode, c.Body)
			}
			if c := f.Admin("POST", "/api/admin/events/"+id+"/close", "{}"); c.StatusCode != 200 || c.JSON["closedNow"] != false {
				t.Fatalf("a second close: %d %s", c.StatusCode, c.Body)
			}
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/events/"+id+"/close", `{"x":1}`), 400, "bad_json")
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/events/no-such-event/close", ""), 404, "unknown_event")
			_, s4 := f.visitor(id)
			apitest.WantStatus(t, f.hold(id, s4, `{"seats":["A3"]}`), 503, "event_recovering")
			apitest.WantStatus(t, f.confirm(id, id, h2.Str("token"), h2.Str("session"), "pay-2"), 201, "")
			g := f.Admin("GET", "/api/admin/events/"+id, "")
			if rs, _ := g.JSON["restore"].(map[string]any); rs["state"] != "recovering" || rs["closedAt"] == nil || rs["restoredAt"] != nil {
				t.Fatalf("the admin view while closed: %s", g.Body)
			}
			// The origin's record: A1's order, and A3 sold in the lost second to an
			// order this kit never saw (the fixed clock's tokens follow each
			// other: an id below the first hold's is no other).
			lost, _ := strconv.ParseInt(o.Str("order"), 10, 64)
			body := `{"orders":[{"order":"` + o.Str("order") + `","seats":["A1"]},{"order":"` + strconv.FormatInt(lost-1, 10) + `","seats":["A3"]}],"reopen":true}`
			rb := f.Admin("POST", "/api/admin/events/"+id+"/rebuild", body)
			if rb.StatusCode != 200 || rb.Num("added") != 1 || rb.Num("kept") != 1 || rb.Num("holdsReleased") != 1 || rb.JSON["recovering"] != false {
				t.Fatalf("rebuild: %d %s", rb.StatusCode, rb.Body)
			}
			apitest.WantStatus(t, f.confirm(id, id, h3.Str("token"), h3.Str("session"), "pay-3"), 409, "stale_token")
			if v := f.Do("GET", "/api/events/"+id, "", nil); v.StatusCode != 200 || !strings.Contains(v.Body, `"A3":"sold"`) || v.JSON["recovering"] != nil {
				t.Fatalf("the public view after the rebuild: %d %s", v.StatusCode, v.Body)
			}
			g = f.Admin("GET", "/api/admin/events/"+id, "")
			if rs, _ := g.JSON["restore"].(map[string]any); rs["state"] != "reopened" || rs["closedAt"] == nil {
				t.Fatalf("the admin view after the rebuild: %s", g.Body)
			}
			log := f.Admin("GET", "/api/admin/rooms/"+id+"/log", "")
			if strings.Count(log.Body, `"action":"close event"`) != 1 || !strings.Contains(log.Body, `"action":"rebuild event"`) {
				t.Fatalf("the room's audit log: %s", log.Body)
			}
		})
	}
}
