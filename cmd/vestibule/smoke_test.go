package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/operator"
)

func TestSmokeAgainstTheLocalStack(t *testing.T) {
	// GIVEN a running local stack (make dev's)
	s := stack(t)
	// WHEN vestibule smoke runs against it
	out, errs, code := vestibule(t, s, "smoke")
	// THEN one visitor goes through join, admission, consume and complete, and the room is closed
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, step := range []string{"created (admin PUT)", "joined: ", "admitted, with an entry token", "consumed: session until",
		"completed: the slot is free again", "closed, drained and deleted"} {
		if !strings.Contains(out, step) {
			t.Errorf("no step %q in:\n%s", step, out)
		}
	}
	id := regexp.MustCompile(`room (smoke-[0-9a-f]{8}) created`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no room id in %s", out)
	}
	// and the room is gone: a smoke test leaves no room behind
	c := &operator.Client{Endpoint: s.URL(), Auth: operator.BearerKey(adminKey)}
	if info, err := c.GetRoom(context.Background(), id[1]); !errors.Is(err, operator.ErrUnknownRoom) {
		t.Errorf("after the smoke test the room reads %+v, %v; want it deleted", info, err)
	}
}

// brokenPublic is a deployment whose admin API works (a loopback stand-in) and whose public API
// answers every join 503, as one with Redis down would.
type brokenPublic struct {
	mu    sync.Mutex
	modes []string
}

func (b *brokenPublic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/api/admin/rooms/"):
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		b.mu.Lock()
		b.modes = append(b.modes, body["mode"].(string))
		b.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"room": "x", "config": body})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/admin/rooms/"):
		json.NewEncoder(w).Encode(map[string]any{"room": "x", "originCredential": "cred"})
	case strings.HasSuffix(r.URL.Path, "/drain"):
		json.NewEncoder(w).Encode(map[string]any{"drained": 0})
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"code":"unavailable","message":"redis down"}}`))
	}
}

func TestSmokeSaysWhichStepFailedAndClosesTheRoom(t *testing.T) {
	// GIVEN a deployment whose public API is down
	b := &brokenPublic{}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	admin := &operator.Client{Endpoint: srv.URL, Auth: operator.BearerKey(adminKey)}
	var out strings.Builder
	// WHEN the smoke test runs
	err := runSmoke(context.Background(), admin, srv.URL, 10*time.Second, &out)
	// THEN it fails at the join, with the answer, and still closes the room
	if err == nil || !strings.Contains(err.Error(), "smoke: join:") || !strings.Contains(err.Error(), "503") {
		t.Errorf("err %v, want the join's 503", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.modes) != 2 || b.modes[0] != "queue" || b.modes[1] != "closed" {
		t.Errorf("modes set %v, want queue then closed", b.modes)
	}
}
