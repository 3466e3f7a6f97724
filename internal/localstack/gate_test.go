package localstack_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
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
		req.AddCookie(&http.Cookie{Name: demoCookie, Value: cookie})
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
// demoCookie is the session cookie of make dev's demo room on its loopback
// site: the development name of the room's own cookie.
const demoCookie = gate.DevCookieName + "-demo"

func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == demoCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", demoCookie, resp.Header.Values("Set-Cookie"))
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
			req.AddCookie(&http.Cookie{Name: demoCookie, Value: cookie})
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
	req.AddCookie(&http.Cookie{Name: demoCookie, Value: c.Value})
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

// Renewal through make dev's demo site, end to end: gate.Middleware sends a
// navigation past the cookie's time to renew through /.vestibule/renew (the
// proxy, the API, the engine), which comes back to the page with a cookie
// that ends later; a fetch at the same moment just passes.
func TestGatedDemoSiteRenews(t *testing.T) {
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
	s, err := localstack.Start(context.Background(), localstack.Options{StaticDir: static, KeyDir: t.TempDir(), TickInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, _, e := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/rooms/demo", s.AdminKey(), `{"sessionTTLSeconds":10,"maxSessionSeconds":60}`); code != 200 {
		t.Fatalf("PUT demo: %d %v", code, e)
	}
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
	form := url.Values{"token": {tok}, "return": {"/tickets"}}.Encode()
	req, _ := http.NewRequest("POST", s.OriginURL()+"/.vestibule/enter", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body := do(t, req)
	if resp.StatusCode != 303 {
		t.Fatalf("enter: %d %s", resp.StatusCode, body)
	}
	c := sessionCookie(t, resp)
	// v1.<kid>.<room>.<seq>.<expiry>.<renew>.<start>.<mac>
	f := strings.Split(c.Value, ".")
	if len(f) != 8 {
		t.Fatalf("a cookie of a room with maxSessionSeconds without a time to renew: %s", c.Value)
	}
	n, err := strconv.ParseInt(f[5], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	renewAt := time.Unix(n, 0)
	get := func(mode, cookie string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", s.OriginURL()+"/tickets?show=1", nil)
		req.Header.Set("Sec-Fetch-Mode", mode)
		req.AddCookie(&http.Cookie{Name: demoCookie, Value: cookie})
		return do(t, req)
	}
	if resp, _ := get("navigate", c.Value); resp.StatusCode != 200 {
		t.Fatalf("before the time to renew: %d %v", resp.StatusCode, resp.Header)
	}
	time.Sleep(time.Until(renewAt.Add(time.Second))) // the gate compares whole seconds
	if resp, _ := get("cors", c.Value); resp.StatusCode != 200 {
		t.Fatalf("a fetch past the time to renew: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = get("navigate", c.Value)
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/.vestibule/renew?return=%2Ftickets%3Fshow%3D1" {
		t.Fatalf("a navigation past the time to renew: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ = http.NewRequest("GET", s.OriginURL()+resp.Header.Get("Location"), nil)
	req.AddCookie(&http.Cookie{Name: demoCookie, Value: c.Value})
	resp, body = do(t, req)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/tickets?show=1" {
		t.Fatalf("renew: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	renewed := sessionCookie(t, resp)
	g := strings.Split(renewed.Value, ".")
	if len(g) != 8 || g[4] <= f[4] || g[6] != f[6] || renewed.MaxAge < 9 {
		t.Fatalf("renewed cookie %s (Max-Age %d) after %s", renewed.Value, renewed.MaxAge, c.Value)
	}
	if resp, body := get("navigate", renewed.Value); resp.StatusCode != 200 || !strings.Contains(body, `id="site"`) {
		t.Fatalf("the page with the renewed cookie: %d %s", resp.StatusCode, body)
	}
	_, _, info := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/demo", s.AdminKey(), "")
	if st, _ := info["stats"].(map[string]any); st["active"] != float64(1) {
		t.Fatalf("after the renewal: %v, want one session", info["stats"])
	}
}
