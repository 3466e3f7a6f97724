package queueapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/admission"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The schedule's routes: a change is checked when planned (its time in the
// future, its settings valid over the room's now), listed, cancelled, and
// each step is in the audit log; mistakes get their 4xx.
func TestScheduledChangeRoutes(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"maxActive": 5}`)
	base := "/api/admin/rooms/" + id + "/schedule"
	at := f.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := f.Clock.Now().Add(-time.Second).UTC().Format(time.RFC3339)

	apitest.WantStatus(t, f.Admin("POST", base, `{"at":"`+past+`","settings":{"maxActive":9}}`), 400, "invalid_schedule")
	apitest.WantStatus(t, f.Admin("POST", base, `{"settings":{"maxActive":9}}`), 400, "invalid_schedule")
	apitest.WantStatus(t, f.Admin("POST", base, `{"at":"`+at+`","settings":{"maxActive":-1}}`), 400, "invalid_config")
	apitest.WantStatus(t, f.Admin("POST", base, `{"at":"`+at+`","settings":{"maxActiv":9}}`), 400, "bad_json")
	apitest.WantStatus(t, f.Admin("POST", base, `{"at":"`+at+`","settings":{"maxActive":9},"x":1}`), 400, "bad_json")
	apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/no-such-room/schedule", `{"at":"`+at+`","settings":{"maxActive":9}}`), 404, "unknown_room")
	apitest.WantStatus(t, f.Do("POST", base, `{"at":"`+at+`","settings":{"maxActive":9}}`, nil), 401, "")

	r := f.Admin("POST", base, `{"at":"`+at+`","settings":{"maxActive":9,"mode":"closed"}}`)
	apitest.WantStatus(t, r, 200, "")
	var planned struct{ Change room.ScheduledChange }
	if err := json.Unmarshal([]byte(r.Body), &planned); err != nil || len(planned.Change.ID) != 16 || planned.Change.CreatedBy != "admin key" {
		t.Fatalf("plan answered %s", r.Body)
	}
	r = f.Admin("GET", base, "")
	apitest.WantStatus(t, r, 200, "")
	var list struct{ Changes []room.ScheduledChange }
	if err := json.Unmarshal([]byte(r.Body), &list); err != nil || len(list.Changes) != 1 || list.Changes[0].ID != planned.Change.ID ||
		string(list.Changes[0].Settings) != `{"maxActive":9,"mode":"closed"}` {
		t.Fatalf("schedule %s", r.Body)
	}
	if c := f.Admin("GET", "/api/admin/rooms/"+id, ""); c.JSON["config"].(map[string]any)["maxActive"] != 5.0 {
		t.Fatalf("planning changed the room: %s", c.Body)
	}
	apitest.WantStatus(t, f.Admin("POST", base+"/cancel", `{"id":"0123456789abcdef"}`), 404, "unknown_change")
	apitest.WantStatus(t, f.Admin("POST", base+"/cancel", `{"id":"../x"}`), 404, "unknown_change")
	apitest.WantStatus(t, f.Admin("POST", base+"/cancel", `{"id":"`+planned.Change.ID+`"}`), 200, "")
	apitest.WantStatus(t, f.Admin("POST", base+"/cancel", `{"id":"`+planned.Change.ID+`"}`), 404, "unknown_change")
	r = f.Admin("GET", base, "")
	if json.Unmarshal([]byte(r.Body), &list) != nil || len(list.Changes) != 0 {
		t.Fatalf("schedule after the cancel: %s", r.Body)
	}
	r = f.Admin("GET", "/api/admin/rooms/"+id+"/log", "")
	var log struct{ Entries []room.AuditEntry }
	_ = json.Unmarshal([]byte(r.Body), &log)
	n := len(log.Entries)
	if n < 2 || log.Entries[n-2].Action != "schedule" || log.Entries[n-1].Action != "unschedule" || log.Entries[n-1].Schedule != planned.Change.ID {
		t.Fatalf("audit log %s", r.Body)
	}
}

// onlyRoom is a Planner that sees one room: the test applies its own room's
// changes, none of another test's on the shared server.
type onlyRoom struct {
	*durable.Queue
	id string
}

func (o onlyRoom) Rooms(context.Context) ([]string, error) { return []string{o.id}, nil }

// A change gone from the schedule is said why at its cancel, as the room's
// audit log has it: 409 change_applied with when, for one the ticks applied
// at its time (a console that listed it before may ask); 404 unknown_change
// with when and by whom, for one cancelled before.
func TestCancelOfAGoneChangeSaysWhy(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"maxActive": 5}`)
	base := "/api/admin/rooms/" + id + "/schedule"
	plan := func() string {
		t.Helper()
		at := f.Clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		r := f.Admin("POST", base, `{"at":"`+at+`","settings":{"maxActive":9}}`)
		apitest.WantStatus(t, r, 200, "")
		var planned struct{ Change room.ScheduledChange }
		if err := json.Unmarshal([]byte(r.Body), &planned); err != nil {
			t.Fatal(err)
		}
		return planned.Change.ID
	}
	cancelled := plan()
	apitest.WantStatus(t, f.Admin("POST", base+"/cancel", `{"id":"`+cancelled+`"}`), 200, "")
	r := f.Admin("POST", base+"/cancel", `{"id":"`+cancelled+`"}`)
	apitest.WantStatus(t, r, 404, "unknown_change")
	if !strings.Contains(r.Body, "cancelled at "+f.Clock.Now().UTC().Format(time.RFC3339)+" by admin key") {
		t.Errorf("a second cancel: %s", r.Body)
	}

	applied := plan()
	f.Clock.Advance(2 * time.Minute)
	p := onlyRoom{durable.New(f.Q, durable.Options{Store: durable.Disk{Dir: t.TempDir()}, Clock: f.Clock.Now, NoNudge: true}), id}
	if n := admission.ApplySchedules(context.Background(), p, nil); n != 1 {
		t.Fatalf("applied %d changes, want 1", n)
	}
	r = f.Admin("POST", base+"/cancel", `{"id":"`+applied+`"}`)
	apitest.WantStatus(t, r, 409, "change_applied")
	if !strings.Contains(r.Body, "the change was applied at "+f.Clock.Now().UTC().Format(time.RFC3339)) {
		t.Errorf("a cancel of an applied change: %s", r.Body)
	}
	apitest.WantStatus(t, f.Admin("POST", base+"/cancel", `{"id":"0123456789abcdef"}`), 404, "unknown_change")
}
