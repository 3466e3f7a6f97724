package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/nginxtest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// The demo site through the other doors, in a browser: nginx with
// auth_request and the forward-auth check (the snippet make dev prints, run
// by Debian's nginx), and the gating proxy of vestibule gate serve
// (cmd/vestibule's TestGateServe runs the command itself).

// doorsStack is the stack with the nginx door on a free port, a real
// Redis, and its key folder (to sign cookies of the test's own).
func doorsStack(t *testing.T) (*localstack.Stack, string) {
	t.Helper()
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL: "redis://" + redistest.Own(t).Options().Addr, StaticDir: repoPath(t, "static"), KeyDir: keys,
		AdminKey: "e2e-admin-key-0123456789", TickInterval: tick, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DoorOptions: localstack.DoorOptions{NginxAddr: "127.0.0.1:" + strconv.Itoa(port)},
	})
	if err != nil {
		t.Fatalf("local stack: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, keys
}

// doorRoom makes a door's room hold one visitor at a time, admitted within a
// tick: a second visitor waits.
func doorRoom(t *testing.T, s *localstack.Stack, room, origin string) {
	t.Helper()
	cfg := baseSettings(s)
	cfg["maxActive"], cfg["gate"], cfg["originUrl"] = 1, true, origin+"/"
	putRoom(t, s, room, cfg)
}

// cookieOf is the browser's cookie name for the site, or nil.
func cookieOf(t *testing.T, ctx context.Context, site, name string) *network.Cookie {
	t.Helper()
	cookies, err := chromedp.Run(ctx, chromedp.Action[[]*network.Cookie](func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		r, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{site + "/"}})
		return r.Cookies, err
	}))
	if err != nil {
		t.Fatalf("read cookies: %v", err)
	}
	for _, c := range cookies {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// setCookie gives the browser a cookie for the site, as if a response had set it.
func setCookie(t *testing.T, ctx context.Context, site, name, value string) {
	t.Helper()
	httpOnly := true
	_, err := chromedp.Run(ctx, chromedp.Action[struct{}](func(ctx context.Context, tg *chromedp.Target) (struct{}, error) {
		_, err := cdp.Call(ctx, tg, network.SetCookie, network.SetCookieParams{Name: name, Value: value, URL: site + "/", HTTPOnly: &httpOnly,
			SameSite: network.CookieSameSiteLax})
		return struct{}{}, err
	}))
	if err != nil {
		t.Fatalf("set cookie: %v", err)
	}
}

// activeIn is the number of running sessions of the room.
func activeIn(t *testing.T, s *localstack.Stack, room string) float64 {
	t.Helper()
	_, _, info := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+room, s.AdminKey(), nil)
	return active(info)
}

// doorJourney is one door's journey in browsers: a visitor joins, waits, is
// admitted and reaches the site on the page asked for; a second visitor
// waits while the first holds the one place; an expired and a forged cookie
// are sent to wait; the site's "Finish booking" (its end header) ends the
// session, and the next visitor is let in.
func doorJourney(t *testing.T, s *localstack.Stack, keys, site, room string) {
	t.Helper()
	waiting := s.URL() + "/?room=" + room
	name := gate.DevCookieName + "-" + room

	v := visitor(t)
	do(t, v, chromedp.Navigate(site+"/tickets?show=42"))
	waitURL(t, v, waiting+"&return=%2Ftickets%3Fshow%3D42")
	waitNav(t, v, `location.href === `+jsString(site+"/tickets?show=42")+` && document.body.id === "site"`)
	if got := text(t, v, "path"); got != "/tickets?show=42" {
		t.Errorf("the site shows %q, want the page asked for", got)
	}
	c := cookieOf(t, v, site, name)
	if c == nil || !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax {
		t.Fatalf("session cookie %+v", c)
	}
	do(t, v, chromedp.Navigate(site+"/"))
	waitNav(t, v, `document.body.id === "site"`)

	// The room holds one: a second visitor waits.
	second := visitor(t)
	do(t, second, chromedp.Navigate(site+"/about"))
	waitURL(t, second, waiting+"&return=%2Fabout")
	waitState(t, second, "waiting", wait)

	// Cookies the gate refuses: past their end, or signed by no key of the
	// ring (the values a visitor could copy or make).
	k, err := token.LoadLocal(keys)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := k.GateKeys()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := gate.DeriveKey([]byte(strings.Repeat("f", 64)))
	for what, value := range map[string]string{
		"expired": gate.Sign(ring.Current, gate.Session{Room: room, Seq: 1, Expires: time.Now().Add(-time.Minute)}),
		"forged":  gate.Sign(other, gate.Session{Room: room, Seq: 1, Expires: time.Now().Add(time.Hour)}),
	} {
		b := visitor(t)
		setCookie(t, b, site, name, value)
		if c := cookieOf(t, b, site, name); c == nil || c.Value != value {
			t.Fatalf("the %s cookie was not set: %+v", what, c)
		}
		do(t, b, chromedp.Navigate(site+"/tickets"))
		waitURL(t, b, waiting+"&return=%2Ftickets")
	}

	// The site ends the session (its answer carries Vestibule-Session: end):
	// the next request completes it and goes to wait.
	if n := activeIn(t, s, room); n != 1 {
		t.Fatalf("%v sessions, want the first visitor's", n)
	}
	do(t, v, chromedp.Click(chromedp.ID("finish")))
	waitNav(t, v, `document.getElementById("done") !== null`)
	if c := cookieOf(t, v, site, name); c == nil || !strings.HasPrefix(c.Value, gate.ReceiptPrefix) {
		t.Fatalf("after the site's end the cookie is %+v, want the receipt", c)
	}
	do(t, v, chromedp.Navigate(site+"/tickets"))
	waitURL(t, v, waiting+"&return=%2F")
	if c := cookieOf(t, v, site, name); c != nil {
		t.Errorf("the receipt outlived leave: %+v", c)
	}
	if n := activeIn(t, s, room); n != 0 {
		t.Errorf("%v sessions after the site ended the one, want none", n)
	}
}

// lenientOrigin is an origin that forgives every spelling of a path, as
// many do: any case, "//" and dot-segments cleaned, "%2F" decoded, ";"
// parameters cut. Its /tickets/42 is the spring page; behind a gate that
// matched the path as sent, each spelling would reach it.
func lenientOrigin(t *testing.T) string {
	t.Helper()
	params := regexp.MustCompile(`;[^/]*`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _, _ := strings.Cut(r.RequestURI, "?")
		p, err := url.PathUnescape(params.ReplaceAllString(raw, ""))
		if err != nil {
			p = raw
		}
		page := "other page"
		if path.Clean(strings.ToLower(p)) == "/tickets/42" {
			page = "spring page"
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>origin</title><body id="origin"><p id="page">`+page+`</p>`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNginxForwardAuth: make dev's demo site behind Debian's nginx with
// auth_request, the snippet as make dev prints it, in Chromium; and a
// second nginx with rooms by path (/tickets to the room, the rest open) in
// front of an origin that forgives every spelling of a path: no spelling
// of /tickets/42 reaches it without the room's session.
func TestNginxForwardAuth(t *testing.T) {
	s, keys := doorsStack(t)
	nginxAddr := strings.TrimPrefix(s.NginxURL(), "http://")
	nginx := nginxtest.Start(t, s.NginxSnippet(), nginxAddr)
	doorRoom(t, s, localstack.NginxRoomID, s.NginxURL())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx's error log:\n%s\naccess log:\n%s", nginx.ErrorLog(), nginx.AccessLog())
		}
	})
	doorJourney(t, s, keys, s.NginxURL(), localstack.NginxRoomID)

	// Rooms by path in front of the forgiving origin.
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	byPath := "127.0.0.1:" + strconv.Itoa(port)
	nginxtest.Start(t, localstack.NginxDoor{Listen: byPath, Site: lenientOrigin(t), API: s.URL(),
		Routes: "/tickets=" + localstack.NginxRoomID, WaitingRoom: s.URL() + "/"}.Config(), byPath)
	site := "http://" + byPath
	v := visitor(t)
	do(t, v, chromedp.Navigate(site+"/about"))
	waitNav(t, v, `document.body.id === "origin"`)
	if got := text(t, v, "page"); got != "other page" {
		t.Fatalf("an open page shows %q", got)
	}
	waiting := s.URL() + "/?room=" + localstack.NginxRoomID
	for _, trick := range []string{"/tickets/42", "/TICKETS/42", "/Tickets/42", "/./tickets/42"} {
		// Chromium sends "/./tickets" as "/tickets": the room's either way.
		do(t, v, chromedp.Navigate(site+trick))
		waitURL(t, v, waiting)
	}
	for _, trick := range []string{"//tickets/42", "/tickets%2F42", "/tickets%2f42", "/tickets;x/42", "/%74ickets/42"} {
		do(t, v, chromedp.Navigate(site+trick))
		status := browsertest.Eval[float64](t, v, `performance.getEntriesByType("navigation")[0].responseStatus`)
		if shown := browsertest.Eval[string](t, v, `document.body ? document.body.innerText : ""`); status != 400 || strings.Contains(shown, "spring page") {
			t.Errorf("%s: %v %q, want the gate's 400", trick, status, shown)
		}
	}
	// What Chromium cleans (dot-segments, escaped or not), sent as written.
	for _, trick := range []string{"/./tickets/42", "/about/../tickets/42", "/about/%2E%2E/tickets/42", "/TICKETS/./42"} {
		// no-store: the snippet's answer to the check's refusal, not nginx's own 400.
		if code, cc := rawRequest(t, byPath, trick); code != 400 || cc != "no-store" {
			t.Errorf("%s sent as written: %d %q, want the gate's 400", trick, code, cc)
		}
	}
}

// rawRequest sends GET target as written and returns the status and
// Cache-Control.
func rawRequest(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.URL.Opaque = target
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Cache-Control")
}

// TestGatingProxyDoor: make dev's demo site through the gating proxy
// (vestibule gate serve's), in Chromium.
func TestGatingProxyDoor(t *testing.T) {
	s, keys := doorsStack(t)
	doorRoom(t, s, localstack.ProxyRoomID, s.ProxyURL())
	doorJourney(t, s, keys, s.ProxyURL(), localstack.ProxyRoomID)
}
