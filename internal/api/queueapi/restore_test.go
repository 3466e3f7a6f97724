package queueapi_test

import (
	"context"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Three rooms in the durable store, one of whose settings records is
// unreadable (garbage, or a field that is no setting), then a total loss: the
// admin list shows the two others in full and marks the third with its error,
// the third's own routes answer room_unrestorable, and none of it counts as
// a Redis error.
func TestOneUnreadableRoomHidesNoOther(t *testing.T) {
	for name, body := range map[string]string{"garbage": "\x00garbage", "unknown field": `{"maxActive":5,"originUrl":"https://o.example/","nope":1}`} {
		t.Run(name, func(t *testing.T) {
			srv, err := redistest.Start() // its own server: the test flushes it
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { rdb.Close() })
			dir := t.TempDir()
			clk := testkit.FixedClock(time.Now().Truncate(time.Second))
			eng := app.NewEngine(rdb, clk.Now)
			f := apitest.NewFixtureOn(t, eng, clk, func(_ *token.Keys, o *api.Options) {
				o.Queue = durable.New(eng, durable.Options{Store: durable.Disk{Dir: dir}, Clock: clk.Now, NoNudge: true})
			})
			ids := []string{"room-a", "room-b", "room-c"}
			for _, id := range ids {
				apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"maxActive":7}`), 200, "")
			}
			if err := rdb.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "room-b.json"), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			f.Logs.Reset()
			r := f.Admin("GET", "/api/admin/rooms", "")
			apitest.WantStatus(t, r, 200, "")
			rooms, _ := r.JSON["rooms"].([]any)
			if len(rooms) != 3 {
				t.Fatalf("listed %d rooms, want 3: %s", len(rooms), r.Body)
			}
			for i, v := range rooms {
				m, _ := v.(map[string]any)
				cfg, _ := m["config"].(map[string]any)
				e, _ := m["error"].(map[string]any)
				if m["room"] != ids[i] {
					t.Errorf("room %d is %v, want %s", i, m["room"], ids[i])
				}
				if ids[i] == "room-b" {
					if e["code"] != "room_unrestorable" || e["message"] == "" {
						t.Errorf("the unreadable room is not marked: %v", m)
					}
					continue
				}
				if e != nil || cfg["maxActive"] != float64(7) {
					t.Errorf("room %s: %v", ids[i], m)
				}
			}
			s := f.Do("GET", "/api/rooms/room-b/status", "", nil)
			apitest.WantStatus(t, s, 503, "room_unrestorable")
			apitest.WantStatus(t, f.Admin("GET", "/api/admin/rooms/room-b", ""), 503, "room_unrestorable")
			if strings.Contains(f.Logs.String(), "RedisErrors") {
				t.Errorf("an unreadable record counted as a Redis error: %s", f.Logs.String())
			}
			// The operator PUTs the room again (all of it: nothing could be read).
			apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/room-b", `{"maxActive":9}`), 200, "")
			apitest.WantStatus(t, f.Do("GET", "/api/rooms/room-b/status", "", nil), 200, "")
		})
	}
}
