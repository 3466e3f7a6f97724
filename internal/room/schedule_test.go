package room_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A scheduled change's audit entry lists every setting the change names,
// even one it sets to the value the room has (a null opensAt set to null
// too), with the others that differ; SettingChanges lists only those that
// differ.
func TestPlannedChanges(t *testing.T) {
	before := room.DefaultConfig()
	before.Mode, before.MaxActive = room.ModeQueue, 5
	shown := func(cs []room.AuditChange) string {
		out := ""
		for _, c := range cs {
			out += fmt.Sprintf("%s %s→%s; ", c.Setting, c.Old, c.New)
		}
		return out
	}
	for _, c := range []struct {
		settings string
		want     string
	}{
		{`{"mode":"queue"}`, `mode "queue"→"queue"; `},
		{`{"mode":"queue","maxActive":7}`, `maxActive 5→7; mode "queue"→"queue"; `},
		{`{"opensAt":null}`, `opensAt null→null; `},
		{`[]`, ``},
	} {
		after, err := room.ApplySettings(before, json.RawMessage(c.settings))
		if err != nil && c.settings != `[]` {
			t.Fatalf("%s: %v", c.settings, err)
		}
		if err != nil {
			after = before
		}
		if got := shown(room.PlannedChanges(&before, &after, json.RawMessage(c.settings))); got != c.want {
			t.Errorf("PlannedChanges(%s) = %q, want %q", c.settings, got, c.want)
		}
	}
	same := before
	if got := room.SettingChanges(&before, &same); len(got) != 0 {
		t.Errorf("SettingChanges of equal configs: %v", got)
	}
}
