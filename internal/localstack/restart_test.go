package localstack_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// Restarting make dev's stack on the same .vestibule folder: the admin key
// is the same (an open console keeps working), the demo rooms are back at
// their README settings whatever the last run changed, and nothing is logged
// as a warning, since nothing was lost.
func TestRestartKeepsKeyResetsDemo(t *testing.T) {
	dir := t.TempDir()
	start := func(logs *testkit.Buffer) *localstack.Stack {
		t.Helper()
		s, err := localstack.Start(context.Background(), localstack.Options{
			StaticDir: t.TempDir(), KeyDir: filepath.Join(dir, "keys"), TickInterval: 50 * time.Millisecond,
			Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var logs1, logs2 testkit.Buffer
	s := start(&logs1)
	key := s.AdminKey()
	if code, _, m := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/rooms/demo", key, map[string]any{"admitPerMinute": 1, "maxActive": 2}); code != 200 {
		t.Fatalf("change demo: %d %v", code, m)
	}
	if code, _, m := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/rooms/mine", key, map[string]any{"originUrl": "https://example.com/", "admitPerMinute": 7}); code != 200 {
		t.Fatalf("create mine: %d %v", code, m)
	}
	s.Close()

	s = start(&logs2)
	defer s.Close()
	if s.AdminKey() != key {
		t.Errorf("the admin key changed across a restart: %q then %q", key, s.AdminKey())
	}
	code, _, m := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/demo", key, nil)
	c, _ := m["config"].(map[string]any)
	if code != 200 || c["admitPerMinute"] != float64(60) || c["maxActive"] != float64(5) {
		t.Errorf("demo after a restart: %d %v (want admitPerMinute 60, maxActive 5 as the README says)", code, m)
	}
	code, _, m = testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/mine", key, nil)
	c, _ = m["config"].(map[string]any)
	if code != 200 || c["admitPerMinute"] != float64(7) {
		t.Errorf("an operator's room after a restart: %d %v", code, m)
	}
	// The admission loop's first tick may restore "mine" before the GET
	// does: its settings are then in Redis a moment before its log line is
	// written, so the line is waited for.
	if !testkit.WaitFor(5*time.Second, func() bool { return strings.Contains(logs2.String(), "room restored from the durable store") }) {
		t.Errorf("the restore is not logged at all: %s", logs2.String())
	}
	for line := range strings.Lines(logs2.String()) {
		var rec struct{ Level, Msg string }
		json.Unmarshal([]byte(line), &rec)
		if rec.Level == "WARN" || rec.Level == "ERROR" {
			t.Errorf("a normal restart logs %s", strings.TrimSpace(line))
		}
	}
}
