package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// tick is the admission tick of the stacks under test: fast, so a test waits
// a fraction of a second for an admission.
const tick = 200 * time.Millisecond

// stack starts the local stack on the given Redis (a server of the test's
// own when redisURL is empty: the stack's admission loop ticks every room the
// server holds, and it puts back the demo rooms) and stops it when the test
// ends.
func stack(t *testing.T, redisURL string) *localstack.Stack {
	t.Helper()
	if redisURL == "" {
		redisURL = "redis://" + redistest.Own(t).Options().Addr
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() && os.Getenv("E2E_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL:     redisURL,
		Addr:         "127.0.0.1:0",
		OriginAddr:   "127.0.0.1:0",
		StaticDir:    repoPath(t, "static"),
		KeyDir:       t.TempDir(),
		AdminKey:     "e2e-admin-key-0123456789",
		TickInterval: tick,
		Logger:       logger,
	})
	if err != nil {
		t.Fatalf("local stack: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// repoPath is a path from the module root, found by walking up to go.mod, so
// the package can move within the repository without its paths breaking.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// settings is a room's configuration as the admin API takes it.
type settings map[string]any

// baseSettings: small TTLs so the stack reacts quickly, and a long claim TTL
// so a grant held by a test's "blocker" visitor keeps the room full. The
// origin is the hand-integration example (the token in the fragment); the
// gated demo site's journey is gate_test.go's.
func baseSettings(s *localstack.Stack) settings {
	return settings{
		"maxActive": 1, "admitPerMinute": 600, "sessionTTLSeconds": 120, "claimTTLSeconds": 120,
		"heartbeatTTLSeconds": 30, "mode": "queue", "originUrl": s.ManualOriginURL() + "/",
	}
}

func putRoom(t *testing.T, s *localstack.Stack, room string, cfg settings) {
	t.Helper()
	code, _, body := testkit.CallJSON(t, http.MethodPut, s.URL()+"/api/admin/rooms/"+room, s.AdminKey(), cfg)
	if code != http.StatusOK {
		t.Fatalf("PUT room %s: %d %v", room, code, body)
	}
}

// enqueueAPI joins the room as a visitor without a browser and returns the ticket.
func enqueueAPI(t *testing.T, s *localstack.Stack, room string) (string, map[string]any) {
	t.Helper()
	code, _, body := testkit.CallJSON(t, http.MethodPost, s.URL()+"/api/rooms/"+room+"/enqueue", "", nil)
	if code != http.StatusOK {
		t.Fatalf("enqueue: %d %v", code, body)
	}
	ticket, _ := body["ticket"].(string)
	return ticket, body
}

// fillRoom makes the room full: one visitor through the API, polled until
// admitted. Its grant holds the only slot for claimTTL, so the next arrivals wait.
func fillRoom(t *testing.T, s *localstack.Stack, room string) {
	t.Helper()
	ticket, body := enqueueAPI(t, s, room)
	deadline := time.Now().Add(10 * time.Second)
	for body["state"] != "admitted" {
		if time.Now().After(deadline) {
			t.Fatalf("blocker visitor not admitted: %v", body)
		}
		time.Sleep(tick)
		_, _, body = testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/rooms/"+room+"/poll", ticket, nil)
	}
}
