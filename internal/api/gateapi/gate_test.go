package gateapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// wantPage checks an HTML answer of the gate: status, no cookie, never cached,
// a link back.
func wantPage(t *testing.T, r apitest.Response, status int, back string) {
	t.Helper()
	if r.StatusCode != status || !strings.HasPrefix(r.Headers["Content-Type"], "text/html") ||
		r.Headers["Cache-Control"] != "no-store" || len(r.Cookies) != 0 {
		t.Fatalf("got %d %v cookies %v, want a %d page without a cookie: %s", r.StatusCode, r.Headers, r.Cookies, status, r.Body)
	}
	if !strings.Contains(r.Body, `id="back" href="`+back+`"`) {
		t.Fatalf("%d page without the link back to %s: %s", status, back, r.Body)
	}
}

// The contract of /.vestibule/enter: a good token once gives a 303 to the
// return path with the session cookie; everything else a page and no cookie.
func TestGateEnter(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		ring := f.Gate(false, nil)
		settings := `{"mode":"passthrough","gate":true,"sessionTTLSeconds":300,"originUrl":"` + apitest.Site + `shop"}`
		tok, adm := f.Admit(settings)
		if got := adm.Str("enterUrl"); got != "https://site.example/.vestibule/enter" {
			t.Fatalf("enterUrl = %q", got)
		}

		r := f.Enter("site.example", tok, "/tickets?show=42")
		if r.StatusCode != 303 || r.Headers["Location"] != "/tickets?show=42" || r.Headers["Cache-Control"] != "no-store" {
			t.Fatalf("enter: %d %v %s", r.StatusCode, r.Headers, r.Body)
		}
		c := apitest.SetCookie(t, r)
		if c.Name != gate.RoomCookieName(gate.CookieRoom(c.Value)) || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Domain != "" || c.MaxAge != 300 {
			t.Fatalf("cookie attributes: %q", r.Cookies[0])
		}
		claims, err := f.Entries.Verify(tok, f.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		s, err := gate.Verify(ring, c.Value, gate.CookieRoom(c.Value), f.Clock.Now())
		if err != nil || s.Seq != claims.Seq || !s.Expires.Equal(f.Clock.Now().Add(300*time.Second)) {
			t.Fatalf("cookie %q: %+v %v", c.Value, s, err)
		}
		if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 1 {
			t.Fatalf("after enter: %+v, want one session", st)
		}

		// A replay: 409, no cookie. The browser that holds this session's
		// cookie (the form posted twice) is sent on instead.
		wantPage(t, f.Enter("site.example", tok, "/tickets?show=42"), 409, "/tickets?show=42")
		again := f.Enter("site.example", tok, "/tickets", c.Name+"="+c.Value)
		if again.StatusCode != 303 || again.Headers["Location"] != "/tickets" || len(again.Cookies) != 0 {
			t.Fatalf("replay with the session's cookie: %d %v %v", again.StatusCode, again.Headers, again.Cookies)
		}

		// Hostile return paths become "/".
		for _, ret := range []string{"//evil.example/", "https://evil.example/", `/\evil.example`, "javascript:alert(1)", ""} {
			tok, _ := f.Admit(settings)
			r := f.Enter("site.example", tok, ret)
			if r.StatusCode != 303 || r.Headers["Location"] != "/" {
				t.Errorf("return %q: %d Location %q, want 303 to /", ret, r.StatusCode, r.Headers["Location"])
			}
		}

		// Another site's request, a tampered or missing token, a room that is
		// not gated: 401 or 400, and the grant is still there.
		tok2, _ := f.Admit(settings)
		wantPage(t, f.Enter("evil.example", tok2, "/"), 401, "/")
		wantPage(t, f.Enter("site.example:8443", tok2, "/"), 401, "/")
		wantPage(t, f.Enter("site.example", tampered(tok2), "/x"), 401, "/x")
		wantPage(t, f.Enter("site.example", "", "/"), 400, "/")
		if r := f.Enter("SITE.example:443", tok2, "/"); r.StatusCode != 303 {
			t.Errorf("the site's host in another case, with its default port: %d %s", r.StatusCode, r.Body)
		}
		plain, _ := f.Admit(`{"mode":"passthrough","originUrl":"` + apitest.Site + `"}`)
		wantPage(t, f.Enter("site.example", plain, "/"), 401, "/")
		if r := f.Redeem("/api/consume", plain); r.StatusCode != 200 {
			t.Errorf("the plain room's token after the gate refused it: %d %s", r.StatusCode, r.Body)
		}

		// An entry past its claim window: 410.
		late, _ := f.Admit(`{"mode":"passthrough","gate":true,"claimTTLSeconds":5,"originUrl":"` + apitest.Site + `"}`)
		f.Clock.Advance(10 * time.Second)
		wantPage(t, f.Enter("site.example", late, "/"), 410, "/")
	})
}

// enterFrom posts the enter form as a browser would from where headers say,
// with the cookies the browser sends along.
func enterFrom(f *apitest.Fixture, headers map[string]string, tok, ret string, cookies ...string) apitest.Response {
	f.T.Helper()
	h := map[string]string{"content-type": "application/x-www-form-urlencoded", "host": "site.example"}
	for k, v := range headers {
		h[k] = v
	}
	ev := apitest.Event("POST", "/.vestibule/enter", "", h)
	ev.Body, ev.Cookies = url.Values{"token": {tok}, "return": {ret}}.Encode(), cookies
	return f.Send(ev)
}

// Another site's form post of the attacker's own entry token to
// /.vestibule/enter must not replace a visitor's valid session: the session
// is kept and the visitor goes on to the return path, the attacker's token
// unspent. The browser keeps the SameSite=Lax cookie off a cross-site post,
// so such a post gets a page of the site's own that posts the form again,
// from the site: that post carries the cookie.
func TestGateEnterKeepsAValidSession(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		ring := f.Gate(false, nil)
		settings := `{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`
		tok, _ := f.Admit(settings)
		vc := apitest.SetCookie(t, f.Enter("site.example", tok, "/"))
		victim := vc.Name + "=" + vc.Value
		// The attacker's own token: of another gated room on the same site,
		// and of the victim's room.
		other, _ := f.Admit(settings)
		same := func() string {
			claims, _ := f.Entries.Verify(tok, f.Clock.Now())
			r := f.Do("POST", "/api/rooms/"+claims.Room+"/enqueue", "", nil)
			return r.Str("entryToken")
		}()
		spent := func(tk string) bool {
			claims, err := f.Entries.Verify(tk, f.Clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Q.Consume(t.Context(), claims.Room, claims.Seq, claims.Audience)
			return err != nil // a token already redeemed cannot be again
		}
		crossSite := map[string]string{"sec-fetch-site": "cross-site", "origin": "https://evil.example"}
		sameOrigin := map[string]string{"sec-fetch-site": "same-origin", "origin": "https://site.example"}
		// Another room's session is under another name: entering it leaves
		// the victim's session alone (rooms by path).
		if r := enterFrom(f, map[string]string{"sec-fetch-site": "same-site", "origin": "https://evil.site.example"}, other, "/tickets", victim); r.StatusCode != 303 || len(r.Cookies) != 1 ||
			!strings.HasPrefix(r.Cookies[0], gate.RoomCookieName(gate.CookieRoom(other2cookie(t, f, ring, r)))+"=") || strings.HasPrefix(r.Cookies[0], vc.Name+"=") {
			t.Errorf("another room's token, with the victim's cookie: %d %v", r.StatusCode, r.Cookies)
		}
		for name, attack := range map[string]string{"a token of the same room": same} {
			// A browser that sends the cookie along (no SameSite, or a post
			// from a sibling site): the session is kept at once.
			r := enterFrom(f, map[string]string{"sec-fetch-site": "same-site", "origin": "https://evil.site.example"}, attack, "/tickets", victim)
			if r.StatusCode != 303 || r.Headers["Location"] != "/tickets" || len(r.Cookies) != 0 {
				t.Errorf("%s, with the victim's cookie: %d %v cookies %v, want 303 to /tickets and no cookie", name, r.StatusCode, r.Headers, r.Cookies)
			}
			// A cross-site post, the cookie kept off: the site's page posts
			// the form again, from the site, and changes nothing yet.
			r = enterFrom(f, crossSite, attack, "/tickets", nil...)
			if r.StatusCode != 200 || len(r.Cookies) != 0 || !strings.Contains(r.Body, `<form method="post" action="/.vestibule/enter"`) ||
				!strings.Contains(r.Body, `name="token" value="`+attack+`"`) || !strings.Contains(r.Body, `name="return" value="/tickets"`) {
				t.Fatalf("%s, cross-site: %d cookies %v: %s", name, r.StatusCode, r.Cookies, r.Body)
			}
			// The policy allows exactly the page's script, by its hash.
			_, script, _ := strings.Cut(r.Body, "<script>")
			script, _, _ = strings.Cut(script, "</script>")
			sum := sha256.Sum256([]byte(script))
			if csp := r.Headers["Content-Security-Policy"]; script == "" || !strings.Contains(csp, "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"';") {
				t.Errorf("%s, cross-site: the page's policy %q for its script %q", name, csp, script)
			}
			// That post carries the victim's cookie: kept, on to the return path.
			r = enterFrom(f, sameOrigin, attack, "/tickets", victim)
			if r.StatusCode != 303 || r.Headers["Location"] != "/tickets" || len(r.Cookies) != 0 {
				t.Errorf("%s, posted again by the site's page: %d %v cookies %v", name, r.StatusCode, r.Headers, r.Cookies)
			}
			if spent(attack) {
				t.Errorf("%s: the attacker's token was redeemed against the victim's session", name)
			}
		}
		// The victim's session is the one that still holds the cookie's room.
		if s, err := gate.Verify(ring, vc.Value, gate.CookieRoom(vc.Value), f.Clock.Now()); err != nil || s.Seq == 0 {
			t.Fatalf("victim's cookie: %+v %v", s, err)
		}
		// A visitor without a session, entering from the waiting room on
		// another site: the page posts again, and that post enters.
		fresh, _ := f.Admit(settings)
		if r := enterFrom(f, crossSite, fresh, "/"); r.StatusCode != 200 || len(r.Cookies) != 0 {
			t.Fatalf("cross-site entry without a session: %d %v", r.StatusCode, r.Cookies)
		}
		if c := apitest.SetCookie(t, enterFrom(f, sameOrigin, fresh, "/")); c.Name != gate.RoomCookieName(gate.CookieRoom(c.Value)) || c.Value == "" {
			t.Fatalf("the page's post: cookie %+v", c)
		}
		// From a sibling site the browser sends the cookie it has: no page.
		sibling, _ := f.Admit(settings)
		if c := apitest.SetCookie(t, enterFrom(f, map[string]string{"sec-fetch-site": "same-site", "origin": "https://queue.site.example"}, sibling, "/")); c.Value == "" {
			t.Fatalf("same-site entry without a session: %+v", c)
		}
	})
}

// /.vestibule/leave ends the session the cookie names and clears the cookie;
// without a cookie it only clears; GET shows the button and changes nothing.
func TestGateLeave(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		f.Gate(false, nil)
		tok, _ := f.Admit(`{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`)
		c := apitest.SetCookie(t, f.Enter("site.example", tok, "/"))
		claims, _ := f.Entries.Verify(tok, f.Clock.Now())

		page := f.Do("GET", "/.vestibule/leave", "", map[string]string{"host": "site.example"})
		if page.StatusCode != 200 || !strings.Contains(page.Body, `<form method="post" action="/.vestibule/leave">`) {
			t.Fatalf("leave page: %d %s", page.StatusCode, page.Body)
		}
		if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 1 {
			t.Fatalf("GET leave changed the room: %+v", st)
		}

		leave := func(cookies ...string) apitest.Response {
			ev := apitest.Event("POST", "/.vestibule/leave", "", map[string]string{"host": "site.example"})
			ev.Cookies = cookies
			return f.Send(ev)
		}
		// The cookie under the room's name, the shared name (of sessions
		// entered before rooms by path), a junk one: each name that came is
		// cleared.
		for i, cookies := range [][]string{{"other=1", c.Name + "=" + c.Value}, {gate.CookieName + "=" + c.Value}, {gate.CookieName + "=v1.junk"}} {
			r := leave(cookies...)
			cleared := apitest.SetCookie(t, r)
			name, _, _ := strings.Cut(cookies[len(cookies)-1], "=")
			if r.StatusCode != 303 || r.Headers["Location"] != "/" || cleared.Name != name || cleared.Value != "" || cleared.MaxAge >= 0 || !cleared.Secure {
				t.Fatalf("leave %d: %d %v %v", i, r.StatusCode, r.Headers, r.Cookies)
			}
			if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 0 {
				t.Fatalf("leave %d: the session still runs: %+v", i, st)
			}
		}
		// Without a cookie there is nothing to clear: no Set-Cookie at all, so
		// a post that the browser sent without it (SameSite) cannot delete it.
		for _, cookies := range [][]string{nil, {"other=1"}, {"vestibule=" + c.Value}} {
			if r := leave(cookies...); r.StatusCode != 303 || r.Headers["Location"] != "/" || len(r.Cookies) != 0 {
				t.Fatalf("leave with cookies %v: %d %v %v", cookies, r.StatusCode, r.Headers, r.Cookies)
			}
		}
	})
}

// N1: another site's form post to /.vestibule/leave ends nothing and clears
// nothing: browsers say where a request comes from (Sec-Fetch-Site, Origin),
// and the route refuses every origin but the site's own with a page.
func TestGateLeaveCrossSite(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		f.Gate(false, nil)
		tok, _ := f.Admit(`{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`)
		c := apitest.SetCookie(t, f.Enter("site.example", tok, "/"))
		claims, _ := f.Entries.Verify(tok, f.Clock.Now())
		leave := func(headers map[string]string, cookies ...string) apitest.Response {
			h := map[string]string{"host": "site.example", "content-type": "application/x-www-form-urlencoded"}
			for k, v := range headers {
				h[k] = v
			}
			ev := apitest.Event("POST", "/.vestibule/leave", "", h)
			ev.Cookies = cookies
			return f.Send(ev)
		}
		session := c.Name + "=" + c.Value
		for _, tc := range []struct {
			name    string
			headers map[string]string
			cookies []string
		}{
			{"cross-site, no cookie (SameSite kept it off)", map[string]string{"sec-fetch-site": "cross-site", "origin": "https://evil.example"}, nil},
			{"cross-site with the cookie (a browser without SameSite)", map[string]string{"sec-fetch-site": "cross-site", "origin": "https://evil.example"}, []string{session}},
			{"a sibling subdomain", map[string]string{"sec-fetch-site": "same-site", "origin": "https://evil.site.example"}, []string{session}},
			{"Origin only, another site", map[string]string{"origin": "https://evil.example"}, []string{session}},
			{"Origin only, another port", map[string]string{"origin": "https://site.example:8443"}, []string{session}},
			{"Origin null (a sandboxed frame)", map[string]string{"origin": "null"}, []string{session}},
			{"Origin not a URL", map[string]string{"origin": "%zz"}, []string{session}},
		} {
			r := leave(tc.headers, tc.cookies...)
			wantPage(t, r, http.StatusForbidden, "/")
			if !strings.Contains(r.Body, "cross_site") {
				t.Errorf("%s: %s", tc.name, r.Body)
			}
			if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 1 {
				t.Fatalf("%s: the session ended: %+v", tc.name, st)
			}
		}
		// The site's own form, as browsers send it, ends the session.
		for _, h := range []map[string]string{
			{"sec-fetch-site": "same-origin", "origin": "https://site.example"},
			{"origin": "https://SITE.example"},
		} {
			r := leave(h, session)
			if r.StatusCode != 303 || len(r.Cookies) != 1 {
				t.Fatalf("same origin %v: %d %v %s", h, r.StatusCode, r.Cookies, r.Body)
			}
		}
		if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 0 {
			t.Fatalf("the site's own leave: %+v", st)
		}
	})
}

// The site ends a session with the response header; the gate turns the cookie
// into a receipt and sends the visitor's next request to GET
// /.vestibule/leave, which completes the session and clears the cookie. A
// receipt is proof that the site ended the session, so this GET, which any
// page can link to, ends nothing the site had not ended.
func TestGateLeaveReceipt(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		ring := f.Gate(false, nil)
		tok, _ := f.Admit(`{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`)
		c := apitest.SetCookie(t, f.Enter("site.example", tok, "/"))
		claims, _ := f.Entries.Verify(tok, f.Clock.Now())
		get := func(cookies ...string) apitest.Response {
			ev := apitest.Event("GET", "/.vestibule/leave", "", map[string]string{"host": "site.example", "sec-fetch-site": "cross-site"})
			ev.Cookies = cookies
			return f.Send(ev)
		}
		// A forged receipt (another session's MAC) or a session cookie: the
		// page, nothing ended.
		forged := gate.ReceiptPrefix + gate.Sign(gate.Key{ID: ring.Current.ID, Secret: make([]byte, 32)}, gate.Session{Room: claims.Room, Seq: claims.Seq, Expires: f.Clock.Now().Add(time.Minute)})
		for _, cookie := range []string{forged, c.Value, "end.junk"} {
			r := get(gate.CookieName + "=" + cookie)
			if r.StatusCode != 200 || len(r.Cookies) != 0 || !strings.Contains(r.Body, `action="/.vestibule/leave"`) {
				t.Fatalf("GET leave with %q: %d %v", cookie, r.StatusCode, r.Cookies)
			}
			if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 1 {
				t.Fatalf("GET leave with %q ended the session: %+v", cookie, st)
			}
		}
		r := get(gate.CookieName + "=" + gate.ReceiptPrefix + c.Value)
		cleared := apitest.SetCookie(t, r)
		if r.StatusCode != 303 || r.Headers["Location"] != "/" || cleared.Name != gate.CookieName || cleared.Value != "" || cleared.MaxAge >= 0 {
			t.Fatalf("GET leave with the receipt: %d %v %v", r.StatusCode, r.Headers, r.Cookies)
		}
		if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 0 {
			t.Fatalf("the receipt did not complete the session: %+v", st)
		}
		// Again (a second tab): the session is over; the cookie still goes.
		if r := get(gate.CookieName + "=" + gate.ReceiptPrefix + c.Value); r.StatusCode != 303 || len(r.Cookies) != 1 {
			t.Fatalf("the receipt again: %d %v", r.StatusCode, r.Cookies)
		}
	})
}

// N10: the gate's routes answer a person, so even the errors the router
// makes before them (a body too large, a method not allowed) are pages.
func TestGateRouterErrorsArePages(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		f.Gate(false, nil)
		h := map[string]string{"host": "site.example", "content-type": "application/x-www-form-urlencoded"}
		big := "token=" + strings.Repeat("a", 64<<10)
		for _, tc := range []struct {
			method, path, body string
			status             int
		}{
			{"POST", "/.vestibule/enter", big, http.StatusRequestEntityTooLarge},
			{"POST", "/.vestibule/leave", big, http.StatusRequestEntityTooLarge},
			{"PUT", "/.vestibule/leave", "", http.StatusMethodNotAllowed},
			{"GET", "/.vestibule/enter", "", http.StatusMethodNotAllowed},
		} {
			ev := apitest.Event(tc.method, tc.path, "", h)
			ev.Body = tc.body
			r := f.Send(ev)
			if r.StatusCode != tc.status || !strings.HasPrefix(r.Headers["Content-Type"], "text/html") || r.Headers["Cache-Control"] != "no-store" {
				t.Errorf("%s %s: %d %v %.80s", tc.method, tc.path, r.StatusCode, r.Headers, r.Body)
			}
		}
		// The API's own routes keep their JSON.
		if r := f.Do("PUT", "/api/consume", "", nil); r.StatusCode != http.StatusMethodNotAllowed || !strings.HasPrefix(r.Headers["Content-Type"], "application/json") {
			t.Errorf("PUT /api/consume: %d %v", r.StatusCode, r.Headers)
		}
	})
}

// On a loopback site (make dev) the cookie may go without Secure; on any
// other host it is Secure whatever the option says.
func TestGateLoopbackCookie(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		f.Gate(true, nil)
		tok, _ := f.Admit(`{"mode":"passthrough","gate":true,"originUrl":"http://127.0.0.1:8081/"}`)
		c := apitest.SetCookie(t, f.Enter("127.0.0.1:8081", tok, "/"))
		if c.Secure || c.Name != gate.DevCookieName+"-"+gate.CookieRoom(c.Value) {
			t.Errorf("loopback: %v", c)
		}
		// make dev's leave reads and clears the development cookie.
		claims, _ := f.Entries.Verify(tok, f.Clock.Now())
		ev := apitest.Event("POST", "/.vestibule/leave", "", map[string]string{"host": "127.0.0.1:8081", "sec-fetch-site": "same-origin"})
		ev.Cookies = []string{c.Name + "=" + c.Value}
		r := f.Send(ev)
		if cleared := apitest.SetCookie(t, r); r.StatusCode != 303 || cleared.Name != c.Name || cleared.Secure {
			t.Errorf("loopback leave: %d %v", r.StatusCode, r.Cookies)
		}
		if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 0 {
			t.Errorf("loopback leave: %+v", st)
		}
		tok, _ = f.Admit(`{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`)
		if c := apitest.SetCookie(t, f.Enter("site.example", tok, "/")); !c.Secure || c.Name != gate.RoomCookieName(gate.CookieRoom(c.Value)) {
			t.Errorf("a real host with InsecureLoopback: cookie without Secure %v", c)
		}
	})
}

// N11: X-Forwarded-Host names the site only on a request that carries
// CloudFront's origin secret. Without an EdgeGuard a direct request could
// forge it and get a cookie for a host it did not come to, so there the
// request's Host is the site.
func TestGateSiteHost(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	f.Gate(false, nil)
	settings := `{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`
	tok, _ := f.Admit(settings)
	forged := func(h *api.Handler, secret string) apitest.Response {
		ev := apitest.Event("POST", "/.vestibule/enter", "", map[string]string{
			"content-type": "application/x-www-form-urlencoded", "x-forwarded-host": "site.example"})
		ev.Body = url.Values{"token": {tok}, "return": {"/"}}.Encode()
		return apitest.Send(t, h, apitest.ViaCloudFront(ev, secret, ""))
	}
	// No origin secret configured: the header is not believed, Host
	// (api.example) is not the site, nothing is consumed (the token still
	// enters below).
	wantPage(t, forged(f.H, ""), 401, "/")
	// Behind CloudFront (a guard, the secret sent) the header is the site.
	k := apitest.Keys(t)
	ring, err := k.GateKeys()
	if err != nil {
		t.Fatal(err)
	}
	def := room.DefaultConfig()
	def.OriginURL = apitest.Site
	edge := api.New(api.Options{
		Queue: f.Q, Tickets: f.Tickets, Entries: f.Entries, Origins: f.Origins,
		AdminAuth: api.AdminKey, AdminKey: apitest.AdminKey, DefaultRoom: def, Edge: api.NewEdgeGuard([]string{apitest.EdgeCurrent}, nil, nil),
		Clock: f.Clock.Now, Jitter: func() float64 { return 1 },
		Logger: slog.New(slog.NewJSONHandler(f.Logs, nil)),
		Gate:   &api.GateOptions{Keys: ring},
	})
	if r := forged(edge, ""); r.StatusCode != 403 || len(r.Cookies) != 0 {
		t.Fatalf("without the secret behind a guard: %d %v", r.StatusCode, r.Cookies)
	}
	if r := forged(edge, apitest.EdgeCurrent); r.StatusCode != 303 || len(r.Cookies) != 1 {
		t.Fatalf("through CloudFront: %d %v %s", r.StatusCode, r.Cookies, r.Body)
	}
}

// tampered changes one character in the middle of a token's signature, so the
// bytes it decodes to always change (the last characters of base64 may carry
// padding bits a decoder ignores: replacing them may change nothing).
func tampered(tok string) string {
	i := len(tok) - 20
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// renew asks GET /.vestibule/renew?return=ret on the site with cookies.
func renew(f *apitest.Fixture, ret string, cookies ...string) apitest.Response {
	f.T.Helper()
	ev := apitest.Event("GET", "/.vestibule/renew?return="+url.QueryEscape(ret), "", map[string]string{"host": "site.example", "sec-fetch-mode": "navigate"})
	ev.Cookies = cookies
	return f.Send(ev)
}

// /.vestibule/renew extends an active session up to the room's maximum and
// signs a cookie that expires with the session's new end; a session that is
// over loses its cookie; nothing else changes anything.
func TestGateRenew(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		ring := f.Gate(false, nil)
		settings := `{"mode":"passthrough","gate":true,"sessionTTLSeconds":60,"maxSessionSeconds":150,"originUrl":"` + apitest.Site + `"}`
		tok, _ := f.Admit(settings)
		claims, err := f.Entries.Verify(tok, f.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		t0 := f.Clock.Now()
		cookieOf := func(r apitest.Response, status int, location string) (*http.Cookie, gate.Session) {
			t.Helper()
			if r.StatusCode != status || r.Headers["Location"] != location || r.Headers["Cache-Control"] != "no-store" {
				t.Fatalf("got %d %v, want %d to %s: %s", r.StatusCode, r.Headers, status, location, r.Body)
			}
			c := apitest.SetCookie(t, r)
			s, err := gate.Verify(ring, c.Value, gate.CookieRoom(c.Value), f.Clock.Now())
			if err != nil {
				t.Fatalf("cookie %q: %v", c.Value, err)
			}
			if c.MaxAge != int(s.Expires.Sub(f.Clock.Now())/time.Second) {
				t.Fatalf("cookie Max-Age %d, session ends %v", c.MaxAge, s.Expires)
			}
			return c, s
		}
		want := func(s gate.Session, expires, renewAt time.Time) {
			t.Helper()
			w := gate.Session{Room: claims.Room, Seq: claims.Seq, Expires: expires.UTC()}
			if !renewAt.IsZero() {
				w.RenewAt, w.Start = renewAt.UTC(), t0.UTC()
			}
			if s != w {
				t.Fatalf("session %+v, want %+v", s, w)
			}
		}
		c, s := cookieOf(f.Enter("site.example", tok, "/book"), 303, "/book")
		want(s, t0.Add(60*time.Second), t0.Add(30*time.Second))
		first := c.Value

		// Past its time to renew: extended to now + 60, back to the page.
		f.Clock.Advance(40 * time.Second)
		c, s = cookieOf(renew(f, "/book?a=1", c.Name+"="+c.Value), 303, "/book?a=1")
		want(s, t0.Add(100*time.Second), t0.Add(70*time.Second))
		// A hostile return path goes to "/".
		for _, ret := range []string{"//evil.example/", "https://evil.example/", ""} {
			_, s = cookieOf(renew(f, ret, c.Name+"="+c.Value), 303, "/")
			want(s, t0.Add(100*time.Second), t0.Add(70*time.Second))
		}
		// Capped at start + 150: the last cookie says no more renewal.
		f.Clock.Advance(50 * time.Second)
		c, s = cookieOf(renew(f, "/book", c.Name+"="+c.Value), 303, "/book")
		want(s, t0.Add(150*time.Second), time.Time{})
		if st, _ := f.Q.Stats(t.Context(), claims.Room); st.Active != 1 {
			t.Fatalf("after renewals: %+v, want one session", st)
		}
		// A cookie that does not renew, none, a forged one, another site's
		// cookie name: the 303 and nothing changed.
		for _, cookies := range [][]string{{c.Name + "=" + c.Value}, nil, {gate.CookieName + "=" + tampered(first)}, {"vestibule=" + first}} {
			if r := renew(f, "/x", cookies...); r.StatusCode != 303 || r.Headers["Location"] != "/x" || len(r.Cookies) != 0 {
				t.Errorf("renew with %v: %d %v %v", cookies, r.StatusCode, r.Headers, r.Cookies)
			}
		}

		// A session that is over: the renewing cookie is cleared, and the
		// engine holds nothing past the end it had.
		tok2, _ := f.Admit(settings)
		c2, _ := cookieOf(f.Enter("site.example", tok2, "/"), 303, "/")
		ev := apitest.Event("POST", "/.vestibule/leave", "", map[string]string{"host": "site.example", "sec-fetch-site": "same-origin"})
		ev.Cookies = []string{c2.Name + "=" + c2.Value}
		if r := f.Send(ev); r.StatusCode != 303 {
			t.Fatalf("leave: %d %s", r.StatusCode, r.Body)
		}
		f.Clock.Advance(40 * time.Second)
		r := renew(f, "/book", gate.CookieName+"="+c2.Value)
		if cl := apitest.SetCookie(t, r); r.StatusCode != 303 || r.Headers["Location"] != "/book" || cl.MaxAge >= 0 || cl.Value != "" {
			t.Fatalf("renew of a completed session: %d %v %v", r.StatusCode, r.Headers, r.Cookies)
		}
		// A cookie under the shared name (entered before rooms by path):
		// renewed under the room's own name, the shared one cleared.
		tok3, _ := f.Admit(settings)
		c3, _ := cookieOf(f.Enter("site.example", tok3, "/"), 303, "/")
		f.Clock.Advance(40 * time.Second)
		r = renew(f, "/book", gate.CookieName+"="+c3.Value)
		if len(r.Cookies) != 2 || !strings.HasPrefix(r.Cookies[0], c3.Name+"=v1.") || !strings.HasPrefix(r.Cookies[1], gate.CookieName+"=;") {
			t.Fatalf("renew under the shared name: %d %v", r.StatusCode, r.Cookies)
		}
		// A room without a maximum: its cookies never renew.
		plain, _ := f.Admit(`{"mode":"passthrough","gate":true,"originUrl":"` + apitest.Site + `"}`)
		if _, s := cookieOf(f.Enter("site.example", plain, "/"), 303, "/"); s.Renews() {
			t.Fatalf("a room without maxSessionSeconds: %+v", s)
		}
	})
}

// An idle session ending: in a gated room with sessionIdleSeconds, a visitor
// who stops navigating (a closed tab) frees the slot the idle window after
// entry, at the first tick past it, long before sessionTTLSeconds, and the
// edge refuses the cookie from that second; a visitor who keeps navigating
// renews the session (/.vestibule/renew) up to its longest life
// (sessionTTLSeconds here, as maxSessionSeconds is 0), then it ends too.
func TestGateIdleSessionEnds(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		ring := f.Gate(false, nil)
		id := f.Room(`{"mode":"passthrough","gate":true,"sessionTTLSeconds":300,"sessionIdleSeconds":30,"originUrl":"` + apitest.Site + `"}`)
		edge := gate.Config{Room: id, WaitingRoomURL: "https://queue.example/", Keys: ring}
		t0 := f.Clock.Now()
		enter := func() gate.Session {
			t.Helper()
			r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			c := apitest.SetCookie(t, f.Enter("site.example", r.Str("entryToken"), "/"))
			s, err := gate.Verify(ring, c.Value, id, f.Clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		closed, active := enter(), enter()
		if closed.Expires != t0.Add(30*time.Second).Truncate(time.Second).UTC() || !closed.Renews() {
			t.Fatalf("a session of a room with a 30 s idle window: %+v", closed)
		}
		closedCookie := gate.RoomCookieName(id) + "=" + gate.Sign(ring.Current, closed)
		sessions := func() int64 {
			t.Helper()
			if _, err := f.Q.Tick(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			st, err := f.Q.Stats(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			return st.Active
		}
		renew := func(s gate.Session) gate.Session {
			t.Helper()
			r := renew(f, "/book", gate.RoomCookieName(id)+"="+gate.Sign(ring.Current, s))
			c := apitest.SetCookie(t, r)
			ns, err := gate.Verify(ring, c.Value, id, f.Clock.Now())
			if r.StatusCode != 303 || err != nil {
				t.Fatalf("renew at %v: %d %v %v", f.Clock.Now().Sub(t0), r.StatusCode, r.Headers, err)
			}
			return ns
		}
		f.Clock.Advance(20 * time.Second)
		active = renew(active)
		f.Clock.Advance(9 * time.Second) // t0 + 29 s: both still hold their slot
		if n := sessions(); n != 2 {
			t.Fatalf("at t0+29s: %d sessions, want 2", n)
		}
		if d := gate.Decide(edge, "GET", "/book", closedCookie, false, f.Clock.Now()); d.Reason != gate.ReasonSession {
			t.Fatalf("at t0+29s the edge: %+v", d)
		}
		f.Clock.Advance(time.Second) // t0 + 30 s: the idle window is over
		if d := gate.Decide(edge, "GET", "/book", closedCookie, false, f.Clock.Now()); d.Pass || d.Reason != gate.ReasonInvalid {
			t.Fatalf("at t0+30s the edge lets the idle cookie through: %+v", d)
		}
		f.Clock.Advance(time.Second) // the first tick after it frees the slot
		if n := sessions(); n != 1 {
			t.Fatalf("at t0+31s: %d sessions, want the active one alone", n)
		}
		// The active visitor navigates every 15 s (t0 + 46 s, 61 s, …): renewed each time, up to
		// t0 + 300 s, then the session ends with nothing left to renew.
		for active.Renews() {
			f.Clock.Advance(15 * time.Second)
			if n := sessions(); n != 1 {
				t.Fatalf("at t0+%v an active visitor: %d sessions", f.Clock.Now().Sub(t0), n)
			}
			active = renew(active)
		}
		if end := t0.Add(300 * time.Second).Truncate(time.Second).UTC(); active.Expires != end {
			t.Fatalf("the last renewal ends at %v, want the longest life %v", active.Expires, end)
		}
		f.Clock.Set(active.Expires.Add(time.Second))
		if n := sessions(); n != 0 {
			t.Fatalf("past the longest life: %d sessions", n)
		}
	})
}

// other2cookie is the room of the cookie a response sets.
func other2cookie(t *testing.T, f *apitest.Fixture, ring gate.KeyRing, r apitest.Response) string {
	t.Helper()
	_, v, _ := strings.Cut(strings.SplitN(r.Cookies[0], ";", 2)[0], "=")
	return v
}

// An idle-window session across the loss of Redis's sessions (what a total
// loss leaves once the room's settings come back from the settings bucket):
// the cookie passes the edge until its own end, at most the idle window, and
// the first renewal finds no session, clears the cookie and sends the
// visitor back; nothing holds a slot.
func TestGateIdleSessionAfterSessionsLost(t *testing.T) {
	for name, c := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			f := apitest.NewFixture(t, c)
			ring := f.Gate(false, nil)
			id := f.Room(`{"mode":"passthrough","gate":true,"sessionTTLSeconds":300,"sessionIdleSeconds":30,"originUrl":"` + apitest.Site + `"}`)
			r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			ck := apitest.SetCookie(t, f.Enter("site.example", r.Str("entryToken"), "/"))
			if err := c.Del(t.Context(), roomdb.KeysFor(id).Active).Err(); err != nil {
				t.Fatal(err)
			}
			edge := gate.Config{Room: id, WaitingRoomURL: "https://queue.example/", Keys: ring}
			f.Clock.Advance(20 * time.Second)
			if d := gate.Decide(edge, "GET", "/book", ck.Name+"="+ck.Value, false, f.Clock.Now()); !d.Pass {
				t.Fatalf("the cookie within its idle window: %+v", d)
			}
			rr := renew(f, "/book", ck.Name+"="+ck.Value)
			if cl := apitest.SetCookie(t, rr); rr.StatusCode != 303 || cl.Name != ck.Name || cl.Value != "" || cl.MaxAge >= 0 {
				t.Fatalf("renew of a lost session: %d %v", rr.StatusCode, rr.Cookies)
			}
			if st, err := f.Q.Stats(t.Context(), id); err != nil || st.Active != 0 {
				t.Fatalf("after the loss: %+v %v", st, err)
			}
			f.Clock.Advance(10 * time.Second)
			if d := gate.Decide(edge, "GET", "/book", ck.Name+"="+ck.Value, false, f.Clock.Now()); d.Pass {
				t.Fatalf("the cookie past its idle window: %+v", d)
			}
		})
	}
}
