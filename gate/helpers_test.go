package gate

import (
	"crypto/sha256"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testKey is a fixed key, so failures reproduce.
func testKey(t testing.TB, label string) Key {
	t.Helper()
	sum := sha256.Sum256([]byte("gate test key " + label))
	k, err := NewKey(sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writeFile writes content to path, making its folder.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// parityConfig is the gate under test: the current key k2, the previous k1;
// k0 was rotated out.
func parityConfig(t testing.TB) (cfg Config, k0, k1, k2 Key) {
	k0, k1, k2 = testKey(t, "0"), testKey(t, "1"), testKey(t, "2")
	cfg = Config{
		Room:           "demo",
		WaitingRoomURL: "https://queue.example.com/wait",
		OpenPaths:      []string{"/static/*", "/robots.txt", "/healthz"},
		Keys:           KeyRing{Current: k2, Previous: k1},
	}
	return cfg, k0, k1, k2
}

// mustMiddleware is New(cfg).Middleware(next) for a config the test knows
// to be valid.
func mustMiddleware(t *testing.T, cfg Config, next http.Handler) http.Handler {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g.Middleware(next)
}

// mustMiddlewareAt is mustMiddleware with its clock fixed at now.
func mustMiddlewareAt(t *testing.T, cfg Config, now time.Time, next http.Handler) http.Handler {
	t.Helper()
	g, err := newGate(cfg, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	return g.Middleware(next)
}
