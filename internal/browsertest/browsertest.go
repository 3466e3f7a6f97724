// Package browsertest starts the one headless Chromium a test binary shares
// (the waiting page's tests in internal/e2e, the console's in cmd/vestibule),
// with the flags this closed network needs: as root without a sandbox, and
// everything that would phone home off.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// chromiumNames are the executables chromedp looks for on Linux.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

var (
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
)

// Browser returns the context of the shared Chromium, starting it on first
// use; each test opens its own browser context inside it. Without Chromium the
// test is skipped, or fails under CI. Close stops it (from TestMain). The
// fast tier (go test -short, make test-short) skips every browser test.
func Browser(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("a Chromium test: make test runs it, make test-short does not")
	}
	found := false
	for _, n := range chromiumNames {
		if _, err := exec.LookPath(n); err == nil {
			found = true
			break
		}
	}
	if !found {
		testkit.Missing(t, "chromium", "make deps-chromium installs it")
	}
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "vestibule-chromium-"); err != nil {
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("no-first-run", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("lang", "en-US"),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1100, 900),
		)
		allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
		c, cc := chromedp.NewContext(allocCtx)
		ctx, cancel = c, func() { cc(); allocCancel() }
		err = chromedp.Do(ctx) // starts the browser, with no deadline
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// Close stops the shared Chromium and removes its profile.
func Close() {
	if cancel != nil {
		cancel()
	}
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// Eval evaluates the expression js in the page of ctx and fails the test when
// it throws or its value does not decode as a T.
func Eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}
