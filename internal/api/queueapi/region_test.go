package queueapi_test

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// POST /api/admin/rooms/{room}/region gives the room to the functions'
// region once: admin only, 404 for no room, and 409 no_region from functions
// that write for none.
func TestClaimRegion(t *testing.T) {
	rdb := redistest.Single(t)
	clk := testkit.FixedClock(time.Now().UTC().Truncate(time.Second))
	f := apitest.NewFixtureOn(t, app.NewEngine(rdb, clk.Now, roomdb.WithRegion("us-west-2")), clk, nil)
	id := f.Room(`{"maxActive":1,"admitPerMinute":60,"originUrl":"https://origin.example/"}`)
	path := "/api/admin/rooms/" + id + "/region"

	apitest.WantStatus(t, f.Do("POST", path, "", nil), 401, "unauthorized")
	apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/nosuchroom-claim/region", ""), 404, "unknown_room")
	r := f.Admin("POST", path, "{}")
	apitest.WantStatus(t, r, 200, "")
	if r.Str("room") != id || r.Str("region") != "us-west-2" || r.Num("epoch") != 0 || r.Str("previous") != "us-west-2" {
		t.Errorf("claim of a room the region created: %s", r.Body)
	}

	plain := apitest.NewFixture(t, rdb)
	other := plain.Room(`{"maxActive":1,"admitPerMinute":60,"originUrl":"https://origin.example/"}`)
	apitest.WantStatus(t, plain.Admin("POST", "/api/admin/rooms/"+other+"/region", ""), 409, "no_region")
	r = f.Admin("POST", "/api/admin/rooms/"+other+"/region", "")
	apitest.WantStatus(t, r, 200, "")
	if r.Num("epoch") != 1 || r.Str("previous") != "" {
		t.Errorf("claim of a room no region named: %s", r.Body)
	}
	// The room is the region's now: functions of no region are fenced out.
	apitest.WantStatus(t, plain.Admin("PUT", "/api/admin/rooms/"+other, `{"mode":"paused"}`), 503, "")
}
