package localstack_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// noFollow is a plain client that shows redirects instead of following them
// and keeps no cookies: the test carries them by hand.
var noFollow = &http.Client{
	Timeout:       5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// siteGet asks the demo site for path with the given session cookie value
// ("" for none).
func siteGet(t *testing.T, s *localstack.Stack, path, cookie string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.OriginURL()+path, nil)
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: gate.DevCookieName, Value: cookie})
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// sessionCookie is the response's vestibule cookie.
func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == gate.DevCookieName {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", gate.DevCookieName, resp.Header.Values("Set-Cookie"))
	return nil
}

// The edge gate's contract from a plain HTTP client against make dev's demo
// site: no cookie, a 302 to the waiting room; enter with a good token, a 303
// with the cookie; the same token again, 409; a tampered cookie, 302; leave,
// the session ends and the cookie goes.
func TestGatedDemoSite(t *testing.T) {
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
	s, err := localstack.Start(context.Background(), localstack.Options{StaticDir: static, KeyDir: t.TempDir(), TickInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	resp, _ := siteGet(t, s, "/tickets?show=42", "")
	want := s.URL() + "/?room=demo&return=%2Ftickets%3Fshow%3D42"
	if resp.StatusCode != 302 || resp.Header.Get("Location") != want || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET without a cookie: %d %v, want 302 to %s", resp.StatusCode, resp.Header, want)
	}
	if resp, _ := siteGet(t, s, "/robots.txt", ""); resp.StatusCode != 200 {
		t.Fatalf("an open path: %d", resp.StatusCode)
	}

	// Wait in the demo room until admitted, as the page does.
	code, _, e := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/demo/enqueue", "", "")
	ticket, _ := e["ticket"].(string)
	if code != 200 || ticket == "" {
		t.Fatalf("enqueue: %d %v", code, e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e["entryToken"] == nil && time.Now().Before(deadline) {
		time.Sleep(pollpolicy.MinInterval)
		_, _, e = testkit.CallJSON(t, "GET", s.URL()+"/api/rooms/demo/poll", ticket, "")
	}
	tok, _ := e["entryToken"].(string)
	enter, _ := e["enterUrl"].(string)
	if tok == "" || enter != s.OriginURL()+"/.vestibule/enter" {
		t.Fatalf("admitted: %v, want an entry token and enterUrl on the demo site", e)
	}

	// The waiting page's form post.
	post := func(cookie string) (*http.Response, string) {
		form := url.Values{"token": {tok}, "return": {"/tickets?show=42"}}.Encode()
		req, _ := http.NewRequest("POST", enter, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: gate.DevCookieName, Value: cookie})
		}
		return do(t, req)
	}
	resp, body := post("")
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/tickets?show=42" {
		t.Fatalf("enter: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	c := sessionCookie(t, resp)
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 {
		t.Fatalf("cookie on the loopback demo site: %v (want HttpOnly, Lax, Path=/, not Secure on plain HTTP)", resp.Header.Values("Set-Cookie"))
	}
	resp, body = siteGet(t, s, "/tickets?show=42", c.Value)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="site"`) || !strings.Contains(body, "/tickets?show=42") {
		t.Fatalf("the site with the cookie: %d %s", resp.StatusCode, body)
	}

	// The same token again: 409, a page, no cookie.
	resp, body = post("")
	if resp.StatusCode != 409 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || len(resp.Cookies()) != 0 || !strings.Contains(body, "already used") {
		t.Fatalf("replay: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	// A tampered cookie is no cookie.
	tampered := c.Value[:len(c.Value)-1] + map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(c.Value, "A")]
	if resp, _ := siteGet(t, s, "/", tampered); resp.StatusCode != 302 {
		t.Fatalf("a tampered cookie: %d, want 302", resp.StatusCode)
	}

	// Leave: the session ends at once, the cookie is cleared, and the site
	// sends the visitor (now without it) to the waiting room again.
	req, _ := http.NewRequest("POST", s.OriginURL()+"/.vestibule/leave", nil)
	req.AddCookie(&http.Cookie{Name: gate.DevCookieName, Value: c.Value})
	resp, _ = do(t, req)
	if cleared := sessionCookie(t, resp); resp.StatusCode != 303 || resp.Header.Get("Location") != "/" || cleared.Value != "" || cleared.MaxAge >= 0 {
		t.Fatalf("leave: %d %v", resp.StatusCode, resp.Header)
	}
	_, _, info := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/demo", s.AdminKey(), "")
	if st, _ := info["stats"].(map[string]any); st["active"] != float64(0) {
		t.Fatalf("after leave: %v, want no session", info["stats"])
	}
	if resp, _ := siteGet(t, s, "/", ""); resp.StatusCode != 302 {
		t.Fatalf("after leave: %d, want 302", resp.StatusCode)
	}
}
