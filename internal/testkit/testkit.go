// Package testkit holds what the tests, the simulator and the bench would
// otherwise each write again: one settable clock, a free loopback port, a
// wait for a condition, a buffer safe for concurrent writes, and a JSON call.
package testkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use. Fixed clocks stand
// still until moved; skewed clocks follow real time plus an offset.
type Clock struct {
	mu     sync.Mutex
	real   bool
	at     time.Time
	offset time.Duration
}

// FixedClock returns a clock standing at t.
func FixedClock(t time.Time) *Clock { return &Clock{at: t} }

// EngineClock returns a fixed clock at the current time rounded down to a
// whole second: an engine's clock in tests, whose times survive the trip
// through Redis as milliseconds and compare equal to times a test computes.
func EngineClock() *Clock { return FixedClock(time.Now().UTC().Truncate(time.Second)) }

// SkewedClock returns a clock that follows real time; Advance moves it ahead.
func SkewedClock() *Clock { return &Clock{real: true} }

// Now is the clock's time (it fits room.Clock and every Clock option).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real {
		return time.Now().Add(c.offset)
	}
	return c.at.Add(c.offset)
}

// Advance moves the clock by d (back when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Set stops the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.real, c.at, c.offset = false, t, 0
	c.mu.Unlock()
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitFor calls ok every 20 ms until it holds or limit passes, and reports
// whether it held.
func WaitFor(limit time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ok()
}

// Buffer is a bytes.Buffer safe for concurrent use: a log sink or a running
// command's output that a test reads while it is written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}

// T is the part of testing.TB that CallJSON uses (testkit is linked into
// programs too, so it does not import testing).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CallJSON makes an HTTP request with an optional bearer token and body (a
// string is sent as it is, anything else as JSON) and returns the status, the
// headers and the answer decoded as a JSON object (empty when it is not one).
// A request that cannot be made fails the test.
func CallJSON(t T, method, url, bearer string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		if b != "" {
			rd = strings.NewReader(b)
		}
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]any{}
	_ = json.NewDecoder(resp.Body).Decode(&out) // a body that is not JSON leaves out empty: the status speaks
	return resp.StatusCode, resp.Header, out
}

// TB is what Missing needs of a test: *testing.T and *testing.B have it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Missing reports a tool a test needs and does not find: the test fails
// when the CI variable is set (`.ci/run` sets it; `make test` installs every
// tool first, so a missing one there is a broken install, not a choice), and
// is skipped otherwise, naming how to install it.
func Missing(t TB, what, install string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing in CI (CI=%s): %s", what, os.Getenv("CI"), install)
		return
	}
	t.Skipf("%s is missing; %s", what, install)
}

// AxeCoreVersion is the axe-core whose axe.min.js the accessibility checks
// inject; `make deps-axe` installs it under .tools/axe (the Makefile pins the
// same version: TestAxeCorePinnedOnce).
const AxeCoreVersion = "4.14.1"

// AxeCore returns axe-core's axe.min.js: the file AXE_CORE_JS names, or the
// one `make deps-axe` installed under the module's .tools/axe. A test never
// installs it itself; without it the check is Missing.
func AxeCore(t TB) string {
	t.Helper()
	p := os.Getenv("AXE_CORE_JS")
	if p == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatalf("axe-core: %v", err)
			return ""
		}
		p = filepath.Join(root, ".tools", "axe", "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		Missing(t, "axe-core "+AxeCoreVersion+" ("+p+")", "install it with `make deps-axe`, or set AXE_CORE_JS=path/to/axe.min.js")
		return ""
	}
	if err != nil {
		t.Fatalf("axe-core: %v", err)
		return ""
	}
	return string(b)
}

// moduleRoot is the nearest directory at or above the working directory
// that holds go.mod (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}
