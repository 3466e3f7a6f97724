package queueapi_test

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// Draining a closed room empties its queue; grants stay, and a drained
// visitor's poll answers expired, also once the room reopens.
func TestDrain(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"maxActive":1,"admitPerMinute":60,"originUrl":"https://origin.example/"}`)
	var tickets []string
	for range 5 {
		r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		wantStatus(t, r, 200, "")
		tickets = append(tickets, r.str("ticket"))
	}
	f.tick(id) // one grant
	path := "/api/admin/rooms/" + id + "/drain"

	wantStatus(t, f.admin("POST", path, ""), 409, "room_not_closed")
	wantStatus(t, f.do("POST", path, "", nil), 401, "unauthorized")
	wantStatus(t, f.admin("POST", "/api/admin/rooms/nosuchroom-drain/drain", ""), 404, "unknown_room")

	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"mode":"closed"}`), 200, "")
	d := f.admin("POST", path, "{}")
	wantStatus(t, d, 200, "")
	if d.str("room") != id || d.num("removed") != 4 {
		t.Fatalf("drain: %s", d.Body)
	}
	if st, err := f.q.Stats(t.Context(), id); err != nil || st.Waiting != 0 || st.Admitted != 1 {
		t.Fatalf("after drain: %+v %v", st, err)
	}
	// A second drain finds nobody.
	if d := f.admin("POST", path, ""); d.StatusCode != 200 || d.num("removed") != 0 {
		t.Fatalf("second drain: %s", d.Body)
	}
	poll := func(tok string) string {
		t.Helper()
		r := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(tok))
		wantStatus(t, r, 200, "")
		return r.str("state")
	}
	f.clock.Advance(pollpolicy.MinInterval)
	if s := poll(tickets[0]); s != "admitted" {
		t.Fatalf("granted visitor after drain: %s", s)
	}
	for _, tok := range tickets[1:] {
		if s := poll(tok); s != "expired" {
			t.Fatalf("drained visitor in the closed room: %s", s)
		}
	}
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"mode":"queue"}`), 200, "")
	f.clock.Advance(pollpolicy.MinInterval)
	for _, tok := range tickets[1:] {
		if s := poll(tok); s != "expired" {
			t.Fatalf("drained visitor after reopening: %s", s)
		}
	}
	if st, _ := f.q.Stats(t.Context(), id); st.Waiting != 0 {
		t.Fatalf("a drained place came back: %+v", st)
	}
}

// The history route answers the points the ticks recorded, a minute apart.
func TestHistoryRoute(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"originUrl":"https://origin.example/"}`)
	path := "/api/admin/rooms/" + id + "/history"
	if r := f.admin("GET", path, ""); r.StatusCode != 200 || len(r.json["points"].([]any)) != 0 {
		t.Fatalf("before ticks: %s", r.Body)
	}
	f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	for range 3 {
		f.tick(id)
		f.clock.Advance(time.Minute)
	}
	r := f.admin("GET", path, "")
	wantStatus(t, r, 200, "")
	pts, _ := r.json["points"].([]any)
	if r.str("room") != id || len(pts) != 3 {
		t.Fatalf("history: %s", r.Body)
	}
	p, _ := pts[0].(map[string]any)
	for _, k := range []string{"minute", "waiting", "admitted", "active", "admittedLastMinute", "evicted"} {
		if _, ok := p[k]; !ok {
			t.Fatalf("point lacks %q: %s", k, r.Body)
		}
	}
	wantStatus(t, f.do("GET", path, "", nil), 401, "unauthorized")
	wantStatus(t, f.admin("GET", "/api/admin/rooms/nosuchroom-hist/history", ""), 404, "unknown_room")
}
