package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// gatedDemo makes the stack's demo room (the one the demo site's gate
// guards) quick: room for several visitors, admitted within a tick.
func gatedDemo(t *testing.T, s *localstack.Stack) {
	t.Helper()
	cfg := baseSettings(s)
	cfg["maxActive"], cfg["gate"], cfg["originUrl"] = 10, true, s.OriginURL()+"/"
	putRoom(t, s, localstack.DemoRoomID, cfg)
}

// sessionCookie is the browser's vestibule cookie for the demo site, or nil.
func sessionCookie(t *testing.T, ctx context.Context, site string) *network.Cookie {
	t.Helper()
	cookies, err := chromedp.Run(ctx, chromedp.Action[[]*network.Cookie](func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		r, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{site + "/"}})
		return r.Cookies, err
	}))
	if err != nil {
		t.Fatalf("read cookies: %v", err)
	}
	for _, c := range cookies {
		if c.Name == gate.DevCookieName+"-"+localstack.DemoRoomID {
			return c
		}
	}
	return nil
}

// waitURL waits until the tab's address starts with prefix.
func waitURL(t *testing.T, ctx context.Context, prefix string) {
	t.Helper()
	waitNav(t, ctx, "location.href.startsWith("+jsString(prefix)+")")
}

// waitNav is waitJS across navigations: the gate's journey moves the tab
// through redirects and form posts, so an evaluation may meet a page that is
// going away; it is simply tried again until the deadline.
func waitNav(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: %v; page shows %s", js, last, pageSummary(ctx))
}

// postToken posts an entry token to the demo site's /.vestibule/enter from a
// page of the site, as the waiting page's form does.
func postToken(t *testing.T, ctx context.Context, enter, tok, ret string) {
	t.Helper()
	args, _ := json.Marshal([]string{enter, tok, ret})
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`(([action, token, ret]) => {
		const f = document.createElement('form');
		f.method = 'post'; f.action = action;
		for (const [n, v] of [['token', token], ['return', ret]]) {
			const i = document.createElement('input'); i.type = 'hidden'; i.name = n; i.value = v; f.append(i);
		}
		document.body.append(f); f.submit();
	})(`+string(args)+`)`))
}

// TestGate: the demo site behind the edge gate, in a browser. Without a
// cookie it sends the visitor to the waiting room; once admitted, the page
// posts the token to the site's /.vestibule/enter and the visitor is back on
// the page asked for, with the cookie; another browser without it is sent to
// wait; leaving ends the session and sends the visitor to wait again; a
// copied token used a second time gets the "already used" page.
func TestGate(t *testing.T) {
	s := stack(t, "")
	gatedDemo(t, s)
	site, waiting := s.OriginURL(), s.URL()+"/?room="+localstack.DemoRoomID

	v := visitor(t)
	do(t, v, chromedp.Navigate(site+"/tickets?show=42"))
	waitURL(t, v, waiting+"&return=%2Ftickets%3Fshow%3D42")
	if c := sessionCookie(t, v, site); c != nil {
		t.Fatalf("a cookie before the waiting room: %+v", c)
	}
	// Admitted within a tick; the page posts the form and the site answers.
	waitNav(t, v, `location.href === `+jsString(site+"/tickets?show=42")+` && document.body.id === "site"`)
	if got := text(t, v, "path"); got != "/tickets?show=42" {
		t.Errorf("the site shows %q, want the page asked for", got)
	}
	c := sessionCookie(t, v, site)
	if c == nil || !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax || c.Path != "/" {
		t.Fatalf("session cookie %+v, want HttpOnly, SameSite=Lax, Path=/", c)
	}
	if browsertest.Eval[bool](t, v, `document.cookie.includes("vestibule")`) {
		t.Error("the page's script can read the session cookie")
	}
	screenshot(t, v, "screenshot-gate-site.png")
	// Other pages of the site pass with the cookie.
	do(t, v, chromedp.Navigate(site+"/"))
	waitNav(t, v, `document.body.id === "site"`)

	// Another browser, without the cookie, is sent to wait.
	other := visitor(t)
	do(t, other, chromedp.Navigate(site+"/"))
	if got := browsertest.Eval[string](t, other, "location.href"); !strings.HasPrefix(got, waiting+"&return=%2F") {
		t.Errorf("a browser without the cookie is at %s, want the waiting room", got)
	}

	// Leave: the session ends, the cookie goes, and the site sends the
	// visitor to wait again.
	_, _, before := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+localstack.DemoRoomID, s.AdminKey(), nil)
	do(t, v, chromedp.Click(chromedp.ID("leave")))
	waitURL(t, v, waiting+"&return=%2F")
	if c := sessionCookie(t, v, site); c != nil {
		t.Errorf("the cookie outlived leave: %+v", c)
	}
	// The waiting page says the visit has ended and offers to join again; it
	// does not say the turn is used in another tab (there is none).
	waitState(t, v, "ended", wait)
	if got := text(t, v, "title"); got != "Your visit has ended" {
		t.Errorf("after leave the waiting page's title is %q", got)
	}
	if browsertest.Eval[bool](t, v, `document.getElementById("rejoin").hidden || document.body.innerText.includes("another tab")`) {
		t.Errorf("after leave the waiting page shows %s; want the rejoin button and no \"another tab\"", pageSummary(v))
	}
	_, _, after := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+localstack.DemoRoomID, s.AdminKey(), nil)
	if a, b := active(before), active(after); b >= a && a > 0 {
		t.Errorf("active sessions %v before leave and %v after, want one fewer", a, b)
	}

	// A copied token: the first browser gets in with it, a second one gets
	// the "already used" page.
	ticket, body := enqueueAPI(t, s, localstack.DemoRoomID)
	deadline := time.Now().Add(wait)
	for body["entryToken"] == nil && time.Now().Before(deadline) {
		time.Sleep(tick)
		_, _, body = testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/rooms/"+localstack.DemoRoomID+"/poll", ticket, nil)
	}
	tok, _ := body["entryToken"].(string)
	enter, _ := body["enterUrl"].(string)
	if tok == "" || enter != site+"/.vestibule/enter" {
		t.Fatalf("admitted through the API: %v", body)
	}
	first := visitor(t)
	do(t, first, chromedp.Navigate(site+"/robots.txt")) // an open path: a page of the site to post from
	postToken(t, first, enter, tok, "/tickets")
	waitNav(t, first, `location.href === `+jsString(site+"/tickets")+` && document.body.id === "site"`)
	second := visitor(t)
	do(t, second, chromedp.Navigate(site+"/robots.txt"))
	postToken(t, second, enter, tok, "/tickets")
	waitNav(t, second, `document.title === "This entry was already used"`)
	if c := sessionCookie(t, second, site); c != nil {
		t.Errorf("a replay got a cookie: %+v", c)
	}
	screenshot(t, second, "screenshot-gate-replay.png")

	// The gate's own leave page (a link a site can give) posts the same form.
	do(t, first, chromedp.Navigate(site+"/.vestibule/leave"))
	waitNav(t, first, `document.title === "Leave this site?"`)
	do(t, first, chromedp.Click(chromedp.ID("leave")))
	waitURL(t, first, waiting+"&return=%2F")
	if c := sessionCookie(t, first, site); c != nil {
		t.Errorf("the cookie outlived the leave page's form: %+v", c)
	}
}

// active is the admin answer's number of running sessions.
func active(info map[string]any) float64 {
	st, _ := info["stats"].(map[string]any)
	n, _ := st["active"].(float64)
	return n
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
