package localstack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// An admin change goes out as an admission.room.changed event too: who,
// what, old and new.
func TestStackRoomChangedEvent(t *testing.T) {
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
	out := &testkit.Buffer{}
	s, err := localstack.Start(context.Background(), localstack.Options{
		StaticDir: static, KeyDir: t.TempDir(), TickInterval: 50 * time.Millisecond, Events: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, _, m := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/rooms/demo", s.AdminKey(), map[string]any{"mode": "paused"}); code != 200 {
		t.Fatalf("pause: %d %v", code, m)
	}
	var got *roomevents.RoomChangedEvent
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		en, err := eventbus.ParseLine(line)
		if err != nil || en.DetailType != roomevents.TypeRoomChanged {
			continue
		}
		var ev roomevents.RoomChangedEvent
		if err := json.Unmarshal(en.Detail, &ev); err != nil {
			t.Fatal(err)
		}
		if en.Source != eventbus.SourceAdmission {
			t.Errorf("source %q", en.Source)
		}
		got = &ev
	}
	if got == nil {
		t.Fatalf("no %s event in %s", roomevents.TypeRoomChanged, out.String())
	}
	if got.Room != "demo" || got.Who != "admin key" || got.Action != "change" || len(got.Changes) != 1 ||
		got.Changes[0].Setting != "mode" || string(got.Changes[0].New) != `"paused"` || got.At.IsZero() {
		t.Errorf("event %+v", got)
	}
}
