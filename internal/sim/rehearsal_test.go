package sim

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// A rehearsal leaves no trace: it refuses an existing room (whose settings
// stay as they were), deletes the room it created when it ends, and when it
// is interrupted it reports what ran and still deletes its room, leaving no
// key of it in Redis but its audit log.
func TestRehearsalLeavesNoTrace(t *testing.T) {
	rdb := redistest.Single(t)
	d, cfg := virtualRoom(t, rdb, 20, 600)
	cfg.ClientEnqueuePerMinute = 0
	ctx := context.Background()
	get := func(id string) (int, map[string]any) {
		t.Helper()
		status, body, _, err := d.Do(ctx, "GET", "/api/admin/rooms/"+id, d.AdminKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		return status, m
	}
	leftKeys := func(id string) []string {
		t.Helper()
		keys, err := rdb.Keys(ctx, "*"+id+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			if strings.HasSuffix(k, ":audit") {
				continue
			}
			// A deleted room's state keeps its tombstone alone (docs/ENGINE.md, "Deleting a room").
			if f, err := rdb.HKeys(ctx, k).Result(); err == nil && strings.HasSuffix(k, ":st") && len(f) == 2 &&
				slices.Contains(f, "dead") && slices.Contains(f, "seq") {
				continue
			}
			out = append(out, k)
		}
		return out
	}
	base := Config{Visitors: 60, Shape: Burst, Seed: 3, ThinkMin: 5 * time.Second, ThinkMax: 10 * time.Second,
		RoomConfig: cfg, MaxDuration: time.Hour, Rehearsal: true}

	t.Run("existing room", func(t *testing.T) {
		id := redistest.Room(t)
		if status, body, _, _ := d.Do(ctx, "PUT", "/api/admin/rooms/"+id, d.AdminKey,
			[]byte(`{"originUrl":"https://shop.example/","admitPerMinute":7,"claimTTLSeconds":300}`)); status != 200 {
			t.Fatalf("create: %d %s", status, body)
		}
		c := base
		c.Room = id
		if _, err := Run(ctx, d, d.AdminKey, c); !errors.Is(err, ErrRoomExists) || !strings.Contains(err.Error(), "-force") {
			t.Fatalf("a rehearsal on an existing room: %v", err)
		}
		_, m := get(id)
		got := m["config"].(map[string]any)
		if got["admitPerMinute"] != float64(7) || got["claimTTLSeconds"] != float64(300) || got["originUrl"] != "https://shop.example/" {
			t.Errorf("the existing room's settings changed: %v", got)
		}
	})

	t.Run("finished", func(t *testing.T) {
		c := base
		c.Room = redistest.Room(t)
		res, err := Run(ctx, d, d.AdminKey, c)
		if err != nil || res.Cleanup != "" {
			t.Fatalf("run: %v %q", err, res.Cleanup)
		}
		if status, m := get(c.Room); status != 404 {
			t.Errorf("the rehearsal's room after the run: %d %v", status, m)
		}
		if k := leftKeys(c.Room); len(k) != 0 {
			t.Errorf("keys left: %q", k)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		c := base
		c.Room = redistest.Room(t)
		c.Visitors = 400
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := 0
		c.OnDone = func() {
			if done++; done == 20 {
				cancel()
			}
		}
		res, err := Run(ictx, d, d.AdminKey, c)
		if !errors.Is(err, context.Canceled) || res == nil || !res.Interrupted || res.Cleanup != "" {
			t.Fatalf("interrupted run: %v %+v", err, res)
		}
		s := res.Summarize()
		var table strings.Builder
		s.WriteTable(&table)
		if s.NotDone == 0 || s.NotAdmitted != 0 || !strings.Contains(table.String(), "run interrupted") || s.OK() {
			t.Errorf("the report of an interrupted run (not done %d, not admitted %d):\n%s", s.NotDone, s.NotAdmitted, table.String())
		}
		if status, m := get(c.Room); status != 404 {
			t.Errorf("the interrupted rehearsal's room: %d %v", status, m)
		}
		if k := leftKeys(c.Room); len(k) != 0 {
			t.Errorf("keys left: %q", k)
		}
	})
}
