package e2e

import (
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// attackPage is another site's page: a form that posts itself to the
// protected site's /.vestibule/leave as soon as it loads, and a link to the
// leave page.
var attackPage = template.Must(template.New("attack").Parse(`<!doctype html>
<html><head><title>Another site</title></head><body id="attacker">
<form id="f" method="post" action="{{.}}/.vestibule/leave"><input type="hidden" name="x" value="1"></form>
<a id="link" href="{{.}}/.vestibule/leave">leave</a>
<script>if (location.hash === '#post') document.getElementById('f').submit();</script>
</body></html>`))

// otherSite returns the URL of a server for the attack page on another
// site than site: the same machine under the other loopback name (localhost
// for 127.0.0.1), so the browser sees another host, cross-site.
func otherSite(t *testing.T, site string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		attackPage.Execute(w, site)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	s, _ := url.Parse(site)
	name := "localhost"
	if s.Hostname() == "localhost" {
		name = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(name, u.Port())
}

// TestCrossSiteLeave (N1): a page on another site that posts a form to the
// protected site's /.vestibule/leave, or links to it, ends nothing and takes
// nothing from the visitor: the session runs on, the cookie stays, the site
// still lets the visitor in.
func TestCrossSiteLeave(t *testing.T) {
	s := stack(t, "")
	gatedDemo(t, s)
	site := s.OriginURL()
	other := otherSite(t, site)

	v := visitor(t)
	do(t, v, chromedp.Navigate(site+"/tickets"))
	waitNav(t, v, `location.href === `+jsString(site+"/tickets")+` && document.body.id === "site"`)
	before := sessionCookie(t, v, site)
	if before == nil {
		t.Fatal("no session cookie after entering")
	}
	activeNow := func() float64 {
		_, _, info := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+localstack.DemoRoomID, s.AdminKey(), nil)
		return active(info)
	}
	if n := activeNow(); n != 1 {
		t.Fatalf("%v sessions after entering, want 1", n)
	}

	// The other site's page posts the form as it loads: the gate's route
	// answers with its page, and nothing changes.
	do(t, v, chromedp.Navigate(other+"/#post"))
	waitNav(t, v, `location.href === `+jsString(site+"/.vestibule/leave")+` && document.title === "This request came from another site"`)
	if got := text(t, v, "code"); got != "cross_site" {
		t.Errorf("the page's code is %q, want cross_site", got)
	}
	if c := sessionCookie(t, v, site); c == nil || c.Value != before.Value {
		t.Fatalf("after the other site's post the cookie is %+v, want it unchanged", c)
	}
	if n := activeNow(); n != 1 {
		t.Fatalf("the other site's post ended the session: %v running", n)
	}
	screenshot(t, v, "screenshot-gate-crosssite.png")

	// Its link to the leave page shows the button, and ends nothing either.
	do(t, v, chromedp.Navigate(other+"/"))
	do(t, v, chromedp.Click(chromedp.ID("link")))
	waitNav(t, v, `document.title === "Leave this site?"`)
	if c := sessionCookie(t, v, site); c == nil || c.Value != before.Value {
		t.Fatalf("after the other site's link the cookie is %+v", c)
	}
	if n := activeNow(); n != 1 {
		t.Fatalf("the other site's link ended the session: %v running", n)
	}

	// The visitor is still in.
	do(t, v, chromedp.Navigate(site+"/checkout"))
	waitNav(t, v, `location.href === `+jsString(site+"/checkout")+` && document.body.id === "site"`)
	if got := browsertest.Eval[string](t, v, `document.getElementById("path").textContent`); got != "/checkout" {
		t.Errorf("the site shows %q", got)
	}

	// And the site's own button still ends the session.
	do(t, v, chromedp.Click(chromedp.ID("leave")))
	waitURL(t, v, s.URL()+"/?room="+localstack.DemoRoomID)
	if c := sessionCookie(t, v, site); c != nil {
		t.Errorf("the cookie outlived the site's own leave: %+v", c)
	}
	if n := activeNow(); n != 0 {
		t.Errorf("%v sessions after the site's own leave, want 0", n)
	}
}

// TestSiteEndsSession: the site ends a session with a response header and
// calls nothing. The demo site's "finish booking" answer carries
// Vestibule-Session: end; the gate replaces the cookie with a receipt, so the
// visitor's next request goes to /.vestibule/leave, which completes the
// session (the slot frees) and sends the visitor to the waiting room.
func TestSiteEndsSession(t *testing.T) {
	s := stack(t, "")
	gatedDemo(t, s)
	site := s.OriginURL()
	activeNow := func() float64 {
		_, _, info := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+localstack.DemoRoomID, s.AdminKey(), nil)
		return active(info)
	}

	v := visitor(t)
	do(t, v, chromedp.Navigate(site+"/checkout"))
	waitNav(t, v, `location.href === `+jsString(site+"/checkout")+` && document.body.id === "site"`)
	session := sessionCookie(t, v, site)
	if session == nil || activeNow() != 1 {
		t.Fatalf("after entering: cookie %+v, %v sessions", session, activeNow())
	}

	do(t, v, chromedp.Click(chromedp.ID("finish")))
	waitNav(t, v, `document.getElementById("done") !== null`)
	c := sessionCookie(t, v, site)
	if c == nil || c.Value != "end."+session.Value || !c.HTTPOnly {
		t.Fatalf("after the site's end: cookie %+v, want the receipt of %s", c, session.Value)
	}

	// The next request completes the session and ends at the waiting room.
	do(t, v, chromedp.Navigate(site+"/checkout"))
	waitURL(t, v, s.URL()+"/?room="+localstack.DemoRoomID+"&return=%2F")
	if c := sessionCookie(t, v, site); c != nil {
		t.Errorf("the receipt outlived leave: %+v", c)
	}
	if n := activeNow(); n != 0 {
		t.Errorf("%v sessions after the site ended the only one, want 0", n)
	}
}
