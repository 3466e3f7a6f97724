package gateapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Cookies are how the gate's session cookies are signed and written.
type Cookies struct {
	// Keys sign (Current) and verify (Current and Previous) session cookies;
	// the CloudFront function's KeyValueStore holds the same keys.
	Keys gate.KeyRing
	// InsecureLoopback leaves Secure off the cookie when the site is a
	// loopback host (make dev, plain HTTP); see gate.CookieOptions.
	InsecureLoopback bool
}

// siteHeader is the header that names the protected site's host when the
// request comes through CloudFront, which does not forward the viewer's Host
// to the API (the API needs its own): the distribution's /.vestibule/*
// behaviour copies it here (infra/stack/gate.go). Anyone can send the header,
// so it is believed only on a request that carries CloudFront's origin
// secret (httpapi.Request.ViaEdge); otherwise, and always without an EdgeGuard (make
// dev, whose proxy keeps the site's Host), Host is the site.
const siteHeader = "x-forwarded-host"

// Errors of the gate's routes that the rest of the API does not have.
var (
	errNoGate      = &httpapi.Error{Status: http.StatusNotFound, Code: "unknown_route", Message: "this deployment has no edge gate"}
	errBadForm     = &httpapi.Error{Status: http.StatusBadRequest, Code: "bad_body", Message: "the form could not be read"}
	errNotGated    = &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_token", Message: "this entry is for a site that redeems it itself, not for the edge gate"}
	errOtherSite   = &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_token", Message: "this entry is for another site"}
	errMissingForm = &httpapi.Error{Status: http.StatusBadRequest, Code: "missing_token", Message: "the form carries no entry token"}
	errCrossSite   = &httpapi.Error{Status: http.StatusForbidden, Code: "cross_site", Message: "this form was sent by another site"}
)

// site returns the host the visitor's browser asked for: X-Forwarded-Host
// on a request that provably came through CloudFront, else Host.
func site(r *httpapi.Request) string {
	if h := r.Header(siteHeader); h != "" && r.ViaEdge {
		first, _, _ := strings.Cut(h, ",")
		return strings.TrimSpace(first)
	}
	return r.Header("host")
}

// sameHost reports whether the host (with or without a port) is originURL's,
// ignoring case and the scheme's default port.
func sameHost(host, originURL string) bool {
	u, err := url.Parse(originURL)
	if err != nil || u.Host == "" || host == "" {
		return false
	}
	norm := func(h string) string {
		h = strings.ToLower(h)
		if name, port, err := net.SplitHostPort(h); err == nil &&
			(u.Scheme == "https" && port == "443" || u.Scheme == "http" && port == "80") {
			h = name
			if strings.Contains(h, ":") {
				h = "[" + h + "]"
			}
		}
		return h
	}
	return norm(host) == norm(u.Host)
}

// cookieOptions are the cookie's attributes for this request's site, under
// the shared name.
func (h *API) cookieOptions(r *httpapi.Request) gate.CookieOptions {
	return gate.CookieOptions{InsecureLoopback: h.o.Cookies.InsecureLoopback, Host: site(r)}
}

// cookieOptionsFor are cookieOptions under room's own name (the shared one
// for "").
func (h *API) cookieOptionsFor(r *httpapi.Request, room string) gate.CookieOptions {
	o := h.cookieOptions(r)
	o.Room = room
	return o
}

// sessionCookies returns the request's session cookies of every room
// (gate.SessionCookies: __Host-vestibule-<room> and __Host-vestibule, or
// their development names on make dev's loopback site), at most
// gate.MaxCookieValues of them: from the event's cookies (payload 2.0) or, in
// a hand-made event, a Cookie header.
func (h *API) sessionCookies(r *httpapi.Request) []gate.SessionCookie {
	header := strings.Join(r.Event.Cookies, "; ")
	if len(r.Event.Cookies) == 0 {
		header = r.Header("cookie")
	}
	return gate.SessionCookies(header, h.cookieOptions(r).Name() != gate.CookieName)
}

// held is a valid session a request holds, with the room its cookie's name
// gives ("" for the shared name), and whether it came as a receipt.
type held struct {
	s       gate.Session
	name    string
	receipt bool
}

// sessions returns the request's valid sessions, of every room, and with
// receipts also its valid receipts (an ended session's cookie,
// gate.ReceiptPrefix). A cookie under a room's own name must be of that room.
// At most gate.MaxCookieCandidates MACs are checked.
func (h *API) sessions(r *httpapi.Request, receipts bool) []held {
	var out []held
	checked := 0
	for _, c := range h.sessionCookies(r) {
		v := c.Value
		room := gate.CookieRoom(v)
		isReceipt := strings.HasPrefix(v, gate.ReceiptPrefix)
		if room == "" || c.Room != "" && c.Room != room || isReceipt && !receipts || checked == gate.MaxCookieCandidates {
			continue
		}
		checked++
		verify := gate.Verify
		if isReceipt {
			verify = gate.VerifyReceipt
		}
		if s, err := verify(h.o.Cookies.Keys, v, room, r.Now); err == nil {
			out = append(out, held{s: s, name: c.Room, receipt: isReceipt})
		}
	}
	return out
}

// clearAll returns the Set-Cookie values that clear every session cookie
// name the request carried (each once).
func (h *API) clearAll(r *httpapi.Request) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range h.sessionCookies(r) {
		if !seen[c.Room] {
			seen[c.Room] = true
			out = append(out, gate.ClearCookie(h.cookieOptionsFor(r, c.Room)))
		}
	}
	return out
}

// crossSite reports whether the browser says that another site sent this
// request: Sec-Fetch-Site other than same-origin (or none: typed by the
// user), or, from a browser that does not send it, an Origin that is not the
// site's. A request with neither header is no browser's form post (browsers
// send Origin with every POST) and passes.
func crossSite(r *httpapi.Request) bool {
	switch r.Header("sec-fetch-site") {
	case "same-origin", "none":
		return false
	case "":
	default:
		return true
	}
	o := r.Header("origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err != nil || u.Host == "" || !strings.EqualFold(u.Host, site(r))
}

// seeOther is a 303 to path on the site, with a Set-Cookie for each cookie
// that is set.
func seeOther(path string, cookies ...string) events.APIGatewayV2HTTPResponse {
	resp := pageHeaders(http.StatusSeeOther)
	resp.Headers["Location"] = path
	for _, c := range cookies {
		if c != "" {
			resp.Cookies = append(resp.Cookies, c)
		}
	}
	return resp
}

// cookiesHidden reports whether the browser kept the session cookie
// (SameSite=Lax) off this post, so that the route cannot tell whether the
// visitor holds a session: a post from another site (Sec-Fetch-Site
// cross-site; from a browser that does not send it, an Origin that is not the
// site's, which may be a sibling: the cookie may or may not have come). A
// post from the site itself or a sibling site carries the cookie the browser has.
func cookiesHidden(r *httpapi.Request) bool {
	switch r.Header("sec-fetch-site") {
	case "cross-site":
		return true
	case "":
		return crossSite(r)
	}
	return false
}

// gateEnter is POST /.vestibule/enter, the form the waiting page posts when a
// visitor of a gated room is admitted: token (the entry token) and return (the
// path to come back to). It checks the token as consume does (signature,
// issuer, key, times) and that the token's audience (which the engine checks
// is the room's originUrl) is the site the request came to. Then:
//
//   - a request that carries a valid session cookie of the token's room
//     keeps it: 303 to gate.SafeReturn(return), the token not redeemed. So no
//     other site's form, posting its own token, can replace a visitor's
//     session (the visitor's session would linger, holding its slot); this
//     covers a form posted twice too. A session of another room (rooms by
//     path) is under another name, which the new cookie leaves alone;
//   - a post whose cookies the browser kept off (cookiesHidden: another site's,
//     as the waiting room's usually is) gets a page of the site's own holding
//     the same form, which its script (or, without scripts, a button) posts
//     again to this route from the site, with the cookie (enterPage);
//   - otherwise it checks that the room is gated, redeems the token once (the
//     engine's consume script) and answers 303 to gate.SafeReturn(return)
//     with the session cookie, signed by the current key, expiring with the
//     session.
//
// Errors are pages: 400 without a token, 401 for an invalid token, another
// site's or a room without gate, 409 for a replay, 410 for an expired entry,
// 503 when Redis is down.
func (h *API) gateEnter(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.Cookies == nil {
		return none, pageError(errNoGate, "/")
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return none, pageError(errBadForm, "/")
	}
	back := gate.SafeReturn(form.Get("return"))
	tok := form.Get("token")
	if tok == "" {
		return none, pageError(errMissingForm, back)
	}
	c, err := roomhttp.VerifyEntry(h.o.Entries, r, tok, false)
	if err != nil {
		return none, pageError(err, back)
	}
	if !sameHost(site(r), c.Audience) {
		return none, pageError(errOtherSite, back)
	}
	for _, held := range h.sessions(r, false) {
		if held.s.Room == c.Room {
			return seeOther(back), nil
		}
	}
	if cookiesHidden(r) {
		return enterPage(tok, back), nil
	}
	cfg, err := h.o.Queue.GetConfig(ctx, c.Room)
	if err != nil {
		return none, pageError(roomhttp.RedeemError(err), back)
	}
	if !cfg.Gate {
		return none, pageError(errNotGated, back)
	}
	sess, err := h.o.Queue.Consume(ctx, c.Room, c.Seq, c.Audience)
	if err != nil {
		return none, pageError(roomhttp.RedeemError(err), back)
	}
	s := cookieSession(cfg, c.Room, c.Seq, r.Now, sess.ExpiresAt, r.Now)
	if err := s.Validate(); err != nil {
		return none, pageError(httpapi.InternalError(err), back)
	}
	value := gate.Sign(h.o.Cookies.Keys.Current, s)
	return seeOther(back, gate.SetCookie(value, s, r.Now, h.cookieOptionsFor(r, c.Room))), nil
}

// cookieSession is what the cookie of a session that started at start and
// ends at end (the engine's) says at now: it expires with the session (whole
// seconds, never after it), and while the room renews sessions
// (room.Config.SessionLimits: an idle window shorter than the longest life)
// and this one can still grow, it says when to renew: half way to its end.
// The gate then sends a navigation through /.vestibule/renew.
func cookieSession(cfg room.Config, id string, seq int64, start, end, now time.Time) gate.Session {
	s := gate.Session{Room: id, Seq: seq, Expires: end.Truncate(time.Second).UTC()}
	start = start.Truncate(time.Second).UTC()
	half := s.Expires.Sub(now) / 2
	idle, longest := cfg.SessionLimits()
	if idle >= longest || !s.Expires.Before(start.Add(time.Duration(longest)*time.Second)) || half < time.Second {
		return s // no renewal, at the maximum already, or too close to its end
	}
	s.RenewAt, s.Start = now.Add(half).Truncate(time.Second).UTC(), start
	return s
}

// gateRenew is GET /.vestibule/renew?return=<path>, where the gate sends an
// active visitor's navigation once the session cookie's time to renew has
// come. It extends the session in the engine (Renew: to min(now + the idle
// window, start + the longest life), room.Config.SessionLimits, never
// shorter), signs a new
// cookie that expires with the session's new end, and answers 303 to
// gate.SafeReturn(return). A session that is over (completed, expired, the
// room gone) loses its cookie, and the gate then sends the visitor to wait;
// without a cookie that renews, nothing changes. Redis down is a 503 page,
// not a redirect, so the gate cannot send the visitor round in a loop.
func (h *API) gateRenew(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.Cookies == nil {
		return none, pageError(errNoGate, "/")
	}
	back := "/"
	if q, err := url.ParseQuery(r.Event.RawQueryString); err == nil {
		back = gate.SafeReturn(q.Get("return"))
	}
	var renew []held
	for _, x := range h.sessions(r, false) {
		switch {
		case !x.s.Renews():
		case x.s.RenewAt.Unix() <= r.Now.Unix():
			renew = append(renew, x) // due: every room's whose time has come
		case len(renew) == 0:
			renew = []held{x} // none due (yet): the first that renews
		}
	}
	var cookies []string
	for _, x := range renew {
		c, err := h.renewOne(ctx, r, x)
		if err != nil {
			return none, pageError(err, back)
		}
		cookies = append(cookies, c...)
	}
	return seeOther(back, cookies...), nil
}

// renewOne renews the session x in the engine and returns the Set-Cookie
// values that follow: the new cookie under its room's own name (and the
// shared name cleared when it came under that), or its name cleared when the
// session is over.
func (h *API) renewOne(ctx context.Context, r *httpapi.Request, x held) ([]string, error) {
	s := x.s
	cfg, err := h.o.Queue.GetConfig(ctx, s.Room)
	var sess room.Session
	if err == nil {
		sess, err = h.o.Queue.Renew(ctx, s.Room, s.Seq, cfg.OriginURL, s.Start)
	}
	switch {
	case errors.Is(err, room.ErrUnknownRoom), errors.Is(err, room.ErrUnknownGrant), errors.Is(err, room.ErrWrongAudience):
		return []string{gate.ClearCookie(h.cookieOptionsFor(r, x.name))}, nil
	case err != nil:
		return nil, err
	}
	ns := cookieSession(cfg, s.Room, s.Seq, s.Start, sess.ExpiresAt, r.Now)
	if err := ns.Validate(); err != nil {
		return nil, httpapi.InternalError(err)
	}
	out := []string{gate.SetCookie(gate.Sign(h.o.Cookies.Keys.Current, ns), ns, r.Now, h.cookieOptionsFor(r, s.Room))}
	if x.name == "" {
		out = append(out, gate.ClearCookie(h.cookieOptions(r)))
	}
	return out, nil
}

// gateLeave is POST /.vestibule/leave: it ends the session the cookie names
// (the engine's complete: the slot goes to the next visitor at once), clears
// the cookie and answers 303 to "/", which the gate sends to the waiting
// room. A post that the browser says another site sent is refused with a 403
// page and changes nothing, cookie or not (SameSite=Lax keeps the cookie off
// such posts in today's browsers; this does not rely on it). Without a valid
// cookie, or when the session already ended, it only clears the cookie, and
// only when one came: a post without it has nothing to clear. Leaving by
// choice is never a GET, so no link or image can make a visitor leave (GET
// ends only a session the site already ended: gateLeavePage).
func (h *API) gateLeave(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.Cookies == nil {
		return none, pageError(errNoGate, "/")
	}
	if crossSite(r) {
		return none, pageError(errCrossSite, "/")
	}
	for _, x := range h.sessions(r, true) {
		if err := h.endSession(ctx, x.s); err != nil {
			return none, pageError(err, "/")
		}
	}
	return seeOther("/", h.clearAll(r)...), nil
}

// endSession completes s; a session already over is no error.
func (h *API) endSession(ctx context.Context, s gate.Session) error {
	cfg, err := h.o.Queue.GetConfig(ctx, s.Room)
	if err == nil {
		err = h.o.Queue.Complete(ctx, s.Room, s.Seq, cfg.OriginURL)
		h.endHolds(ctx, s.Room, s.Seq, err) // the session's holds go with it (Options.EndHolds)
	}
	switch {
	case err == nil, errors.Is(err, room.ErrUnknownRoom), errors.Is(err, room.ErrUnknownGrant), errors.Is(err, room.ErrWrongAudience):
		return nil // ended now, or already over: either way the cookie goes
	}
	return err
}

// gateLeavePage is GET /.vestibule/leave. With a receipt (the cookie the gate
// wrote when the site's response ended the session: gate.EndHeader), it
// completes that session, clears the cookie and answers 303 to "/": the gate
// sends a visitor's next request there. A receipt is the site's word that the
// session is over, so a link from anywhere can only finish what the site
// ended. Otherwise it shows a page with the button that posts the leave form
// and changes nothing.
func (h *API) gateLeavePage(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.Cookies == nil {
		return none, pageError(errNoGate, "/")
	}
	var cleared []string
	for _, x := range h.sessions(r, true) {
		if !x.receipt {
			continue
		}
		if err := h.endSession(ctx, x.s); err != nil {
			return none, pageError(err, "/")
		}
		cleared = append(cleared, gate.ClearCookie(h.cookieOptionsFor(r, x.name)))
	}
	if len(cleared) > 0 {
		return seeOther("/", cleared...), nil
	}
	return renderPage(http.StatusOK, pageData{
		Title: "Leave this site?",
		Text:  "Leaving ends your session at once and lets the next visitor in. To come back you will have to wait in line again.",
		Leave: true, Back: "/",
	}), nil
}

// Path reports whether path is under the gate's prefix: its answers,
// errors of the router included, are pages.
func Path(path string) bool {
	return path == "/.vestibule" || strings.HasPrefix(path, gate.VestibulePrefix)
}

// ErrorPage is httpapi.ErrorResponse for a request to one of the gate's
// Paths: every error, the router's too (a body too large, a method not
// allowed), is a page; one that does not render itself links to "/".
func ErrorPage(e *httpapi.Error) events.APIGatewayV2HTTPResponse {
	if e.Render == nil {
		c := *e // a copy: the packages' errors are shared values
		c.Render = pageRenderer("/")
		e = &c
	}
	return httpapi.ErrorResponse(e)
}

// pageError is httpapi.ToError's answer for err (roomhttp.Answers), shown as a page whose link
// goes to back (a path on the site: without a session the gate sends it on to
// the waiting room).
func pageError(err error, back string) error {
	e := *httpapi.ToError(err, roomhttp.Answers) // a copy: the packages' errors are shared values
	e.Render = pageRenderer(back)
	return &e
}

// pageTexts are the titles and sentences of the error pages, by status.
var pageTexts = map[int][2]string{
	http.StatusBadRequest:         {"Something went wrong", "Your browser did not send your entry. Go back to the waiting room and try again."},
	http.StatusUnauthorized:       {"This entry is not valid here", "The link you followed does not let you into this site. Go back to the waiting room to get a place."},
	http.StatusForbidden:          {"This request was refused", "Nothing was changed. Go back and try again from the site itself."},
	http.StatusNotFound:           {"Not found", "There is nothing here."},
	http.StatusConflict:           {"This entry was already used", "Each entry lets one visitor in, once. If that was you in another tab or window, carry on there; otherwise go back to the waiting room."},
	http.StatusGone:               {"Your entry expired", "It was not used in time. Go back to the waiting room to get a new place."},
	http.StatusServiceUnavailable: {"Please try again in a moment", "We are briefly unable to let you in. Go back and try again in a few seconds."},
}

// pageRenderer renders an error as a page whose link goes to back.
func pageRenderer(back string) func(*httpapi.Error) events.APIGatewayV2HTTPResponse {
	return func(e *httpapi.Error) events.APIGatewayV2HTTPResponse {
		txt, ok := pageTexts[e.Status]
		if e.Code == errCrossSite.Code {
			txt = [2]string{"This request came from another site", "Nothing was changed. To leave, use the button on this site itself."}
		} else if !ok {
			txt = [2]string{"Something went wrong", "Go back and try again."}
		}
		return renderPage(e.Status, pageData{Title: txt[0], Text: txt[1], Code: e.Code, Back: back})
	}
}

// enterScript posts the page's one form at once; the page's policy allows
// this script alone, by its hash (enterPage).
const enterScript = "document.forms[0].submit()"

// enterScriptHash is enterScript's CSP source.
var enterScriptHash = func() string {
	sum := sha256.Sum256([]byte(enterScript))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// enterPage is the answer to an enter post whose cookies the browser kept
// off (cookiesHidden): a page of the site holding the same form, which its
// script posts again at once, now from the site, so the browser sends the
// session cookie it has (gateEnter keeps a valid one). It changes nothing:
// the token is not redeemed. Its policy allows the script by its hash; like
// the other pages it sets no form-action, which browsers check along the
// form's redirects (the gate may send the return path on to the waiting
// room). Without scripts the visitor presses the button.
func enterPage(tok, back string) events.APIGatewayV2HTTPResponse {
	resp := renderPage(http.StatusOK, pageData{
		Title: "Entering the site",
		Text:  "You are being let in. If nothing happens, press Continue.",
		Enter: &enterForm{Token: tok, Return: back},
	})
	resp.Headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; script-src " + enterScriptHash +
		"; frame-ancestors 'none'; base-uri 'none'"
	return resp
}

// enterForm is the form enterPage posts again.
type enterForm struct{ Token, Return string }

// pageData fills pageTemplate.
type pageData struct {
	Title, Text, Code, Back string
	Leave                   bool       // show the leave form's button
	Enter                   *enterForm // the enter form to post again (enterPage)
}

// pageHeaders are the headers of every answer of the gate's routes: never
// cached (they carry or clear a session), no referrer, no framing, and a
// policy that lets the page do nothing but show itself. It sets no
// form-action: the leave form's answer goes on, through the gate, to the
// waiting room on another origin, and browsers check form-action along a
// form's redirects (the pages hold no script and only escaped text).
func pageHeaders(status int) events.APIGatewayV2HTTPResponse {
	resp := httpapi.NewResponse(status, "text/html; charset=utf-8")
	resp.Headers["Referrer-Policy"] = "no-referrer"
	resp.Headers["X-Frame-Options"] = "DENY"
	resp.Headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
	return resp
}

// renderPage writes the page by hand with every value escaped, not with
// html/template: a template's method calls make the linker keep every exported
// method of every type, which doubled each function's binary (the AWS SDKs).
func renderPage(status int, d pageData) events.APIGatewayV2HTTPResponse {
	resp := pageHeaders(status)
	back := d.Back
	if !strings.HasPrefix(back, "https://") && !strings.HasPrefix(back, "http://") && !strings.HasPrefix(back, "/") {
		back = "/" // only a page of ours, never a script URL
	}
	e := html.EscapeString
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>` + e(d.Title) + `</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
a,button{font:inherit}button{padding:.5rem 1rem}.code{color:#555;font-size:.875rem}</style>
</head>
<body>
<main>
<h1>` + e(d.Title) + `</h1>
<p>` + e(d.Text) + `</p>
`)
	if d.Enter != nil {
		b.WriteString(`<form method="post" action="/.vestibule/enter"><input type="hidden" name="token" value="` + e(d.Enter.Token) +
			`"><input type="hidden" name="return" value="` + e(d.Enter.Return) + `"><button type="submit" id="enter">Continue</button></form>
<script>` + enterScript + `</script>
`)
	} else if d.Leave {
		b.WriteString(`<form method="post" action="/.vestibule/leave"><button type="submit" id="leave">Leave now</button></form>
<p><a id="back" href="` + e(back) + `">Stay on the site</a></p>
`)
	} else {
		b.WriteString(`<p><a id="back" href="` + e(back) + `">Back to the waiting room</a></p>
`)
	}
	if d.Code != "" {
		b.WriteString(`<p class="code" id="code">` + e(d.Code) + `</p>
`)
	}
	b.WriteString("</main>\n</body>\n</html>\n")
	resp.Body = b.String()
	return resp
}
