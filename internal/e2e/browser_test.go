package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// quiet drops go-redis's own log lines: the outage test makes it print one
// per failed dial, and the API's answers are what the tests look at.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	code := redistest.Main(m)
	browsertest.Close()
	os.Exit(code)
}

// browser returns the context of the one headless Chromium the tests share
// (browsertest); each test opens its own browser context inside it.
func browser(t *testing.T) context.Context { return browsertest.Browser(t) }

// visitor opens a fresh browser context: a visitor with empty storage. Tabs
// made from it with tab() share its storage, like tabs of one browser.
func visitor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1000, 900)); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	return ctx
}

// tab opens another tab in the visitor's browser context. It returns its
// own cancel so a test can close the tab.
func tab(t *testing.T, v context.Context) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(v)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1000, 900)); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	return ctx, cancel
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// waitJS waits until the expression is true in the page, and fails the test
// with what the page shows when it does not become true within limit.
func waitJS(t *testing.T, ctx context.Context, js string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		// A navigation (the page moving to the origin) destroys the context a
		// poll was evaluating in; that is the page moving on, so poll again.
		if strings.Contains(err.Error(), "Cannot find context") && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		t.Fatalf("waiting for %s: %v; page shows %s", js, err, pageSummary(ctx))
	}
}

func waitState(t *testing.T, ctx context.Context, state string, limit time.Duration) {
	t.Helper()
	waitJS(t, ctx, fmt.Sprintf("document.body.dataset.state === %q", state), limit)
}

func pageSummary(ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`location.href + " state=" + document.body.dataset.state + " reconnecting=" + document.body.dataset.reconnecting + " text=" + document.body.innerText.replace(/\s+/g, " ").slice(0, 300)`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// apiRequests counts the API requests a tab sends, as the browser's network
// layer sees them (not as the page says it sent them).
type apiRequests struct {
	mu sync.Mutex
	n  map[string]int // by path suffix: enqueue, poll, leave, status
}

func countRequests(ctx context.Context) *apiRequests {
	c := &apiRequests{n: map[string]int{}}
	events := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			u := ev.Request.URL
			if !strings.Contains(u, "/api/rooms/") {
				continue
			}
			c.mu.Lock()
			c.n[u[strings.LastIndex(u, "/")+1:]]++
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *apiRequests) get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[kind]
}

// screenshot saves the viewport as name into E2E_OUT (or the test's temporary
// folder) and, with UPDATE_SCREENSHOTS=1, into docs/.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dirs := []string{os.Getenv("E2E_OUT")}
	if dirs[0] == "" {
		dirs[0] = t.TempDir()
	}
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		dirs = append(dirs, repoPath(t, "docs"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}
