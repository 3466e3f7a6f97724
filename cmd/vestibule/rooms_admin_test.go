package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// rooms log after three changes shows each with its author (the admin key
// on a local stack) and old → new values; rooms delete refuses while
// visitors wait, and with --force closes, drains and deletes the room, its
// grants and sessions, leaving no key of it in Redis but its audit log.
func TestRoomsLogAndDelete(t *testing.T) {
	s, rdb := stackRedis(t)
	id := newRoom(t, s, map[string]any{"maxActive": 2, "claimTTLSeconds": 600})
	if _, errs, code := vestibule(t, s, "rooms", "set", id, "admitPerMinute=90"); code != 0 {
		t.Fatal(errs)
	}
	enqueue(t, s, id, 4)
	// Two admitted (maxActive 2) by the stack's ticks, two waiting.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, m := admin(t, s, "GET", id, nil); m["stats"].(map[string]any)["admitted"] == float64(2) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, errs, code := vestibule(t, s, "rooms", "pause", id); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := vestibule(t, s, "rooms", "log", id)
	if code != 0 {
		t.Fatalf("log: %d %q", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "WHEN") {
		t.Fatalf("log:\n%s", out)
	}
	for i, want := range []string{"created: ", "admitPerMinute 60 → 90", "mode queue → paused"} {
		if !strings.Contains(lines[i+1], "admin key") || !strings.Contains(lines[i+1], want) {
			t.Errorf("log line %d %q, want the admin key and %q", i+1, lines[i+1], want)
		}
	}

	_, errs, code = vestibule(t, s, "rooms", "delete", id)
	if code != 1 || !strings.Contains(errs, "2 visitors waiting") || !strings.Contains(errs, "--force") {
		t.Fatalf("delete with visitors waiting: %d %q", code, errs)
	}
	out, errs, code = vestibule(t, s, "rooms", "delete", id, "--force")
	if code != 0 || !strings.Contains(out, "deleted (2 waiting drained, 2 grants and 0 sessions removed)") {
		t.Fatalf("delete --force: %d %q %q", code, out, errs)
	}
	if code, m := admin(t, s, "GET", id, nil); code != 404 {
		t.Errorf("the room after delete: %d %v", code, m)
	}
	keys, err := rdb.Keys(context.Background(), "*"+id+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// The audit log stays, and the state holds only the tombstone (docs/ENGINE.md, "Deleting a room").
	slices.Sort(keys)
	if len(keys) != 2 || !strings.HasSuffix(keys[0], ":audit") || !strings.HasSuffix(keys[1], ":st") {
		t.Errorf("keys left of the room: %q", keys)
	} else if f, err := rdb.HKeys(context.Background(), keys[1]).Result(); err != nil || len(f) != 2 || !slices.Contains(f, "dead") || !slices.Contains(f, "seq") {
		t.Errorf("state left of the room: %q %v, want the tombstone alone (dead, seq)", f, err)
	}
	if ok, _ := rdb.SIsMember(context.Background(), "vst:rooms", id).Result(); ok {
		t.Error("the room is still in the registry")
	}
	out, _, _ = vestibule(t, s, "rooms", "log", id)
	if !strings.Contains(out, "drained (2 removed)") || !strings.Contains(out, "deleted") {
		t.Errorf("log after delete:\n%s", out)
	}
}

// A change the room made itself (its safety net, its pace) says why in
// rooms log, as the audit entry does.
func TestAuditTextSaysWhyTheRoomChangedItself(t *testing.T) {
	for _, c := range []struct {
		e    room.AuditEntry
		want string
	}{
		{room.AuditEntry{Action: "net on", Why: "arrivals"}, "net on (why: arrivals)"},
		{room.AuditEntry{Action: "pace", Why: "backoff", Changes: []room.AuditChange{{Setting: "pace", Old: []byte("600"), New: []byte("450")}}},
			"pace 600 → 450 (why: backoff)"},
		{room.AuditEntry{Action: "delete"}, "deleted"},
	} {
		if got := auditText(c.e); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
