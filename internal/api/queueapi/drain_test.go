package queueapi_test

import (
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// Draining a closed room empties its queue; grants stay, and a drained
// visitor's poll answers expired, also once the room reopens.
func TestDrain(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"maxActive":1,"admitPerMinute":60,"originUrl":"https://origin.example/"}`)
	var tickets []string
	for range 5 {
		r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		apitest.WantStatus(t, r, 200, "")
		tickets = append(tickets, r.Str("ticket"))
	}
	f.Tick(id) // one grant
	path := "/api/admin/rooms/" + id + "/drain"

	apitest.WantStatus(t, f.Admin("POST", path, ""), 409, "room_not_closed")
	apitest.WantStatus(t, f.Do("POST", path, "", nil), 401, "unauthorized")
	apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/nosuchroom-drain/drain", ""), 404, "unknown_room")

	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"mode":"closed"}`), 200, "")
	d := f.Admin("POST", path, "{}")
	apitest.WantStatus(t, d, 200, "")
	if d.Str("room") != id || d.Num("removed") != 4 {
		t.Fatalf("drain: %s", d.Body)
	}
	if st, err := f.Q.Stats(t.Context(), id); err != nil || st.Waiting != 0 || st.Admitted != 1 {
		t.Fatalf("after drain: %+v %v", st, err)
	}
	// A second drain finds nobody.
	if d := f.Admin("POST", path, ""); d.StatusCode != 200 || d.Num("removed") != 0 {
		t.Fatalf("second drain: %s", d.Body)
	}
	poll := func(tok string) string {
		t.Helper()
		r := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(tok))
		apitest.WantStatus(t, r, 200, "")
		return r.Str("state")
	}
	f.Clock.Advance(pollpolicy.MinInterval)
	if s := poll(tickets[0]); s != "admitted" {
		t.Fatalf("granted visitor after drain: %s", s)
	}
	for _, tok := range tickets[1:] {
		if s := poll(tok); s != "expired" {
			t.Fatalf("drained visitor in the closed room: %s", s)
		}
	}
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"mode":"queue"}`), 200, "")
	f.Clock.Advance(pollpolicy.MinInterval)
	for _, tok := range tickets[1:] {
		if s := poll(tok); s != "expired" {
			t.Fatalf("drained visitor after reopening: %s", s)
		}
	}
	if st, _ := f.Q.Stats(t.Context(), id); st.Waiting != 0 {
		t.Fatalf("a drained place came back: %+v", st)
	}
}

// The history route answers the points the ticks recorded, a minute apart.
func TestHistoryRoute(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	path := "/api/admin/rooms/" + id + "/history"
	if r := f.Admin("GET", path, ""); r.StatusCode != 200 || len(r.JSON["points"].([]any)) != 0 {
		t.Fatalf("before ticks: %s", r.Body)
	}
	f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	for range 3 {
		f.Tick(id)
		f.Clock.Advance(time.Minute)
	}
	r := f.Admin("GET", path, "")
	apitest.WantStatus(t, r, 200, "")
	pts, _ := r.JSON["points"].([]any)
	if r.Str("room") != id || len(pts) != 3 {
		t.Fatalf("history: %s", r.Body)
	}
	p, _ := pts[0].(map[string]any)
	for _, k := range []string{"minute", "waiting", "admitted", "active", "admittedLastMinute", "evicted"} {
		if _, ok := p[k]; !ok {
			t.Fatalf("point lacks %q: %s", k, r.Body)
		}
	}
	apitest.WantStatus(t, f.Do("GET", path, "", nil), 401, "unauthorized")
	apitest.WantStatus(t, f.Admin("GET", "/api/admin/rooms/nosuchroom-hist/history", ""), 404, "unknown_room")
}
