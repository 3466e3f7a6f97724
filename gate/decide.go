package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// VestibulePrefix is the path under which Vestibule's own routes live on the
// protected site (/.vestibule/enter, /.vestibule/leave, /.vestibule/renew).
const VestibulePrefix = "/.vestibule/"

// The gate's routes, the only paths under VestibulePrefix that the gate lets
// through without a session: they are how a visitor gets the cookie and gives
// it back, and how an active visitor's session is renewed. Any other path there, and /.vestibule itself, is a page like any
// other: on a distribution that sends only /.vestibule/* to Vestibule, it
// would reach the protected site.
const (
	EnterPath = VestibulePrefix + "enter"
	LeavePath = VestibulePrefix + "leave"
	RenewPath = VestibulePrefix + "renew"
)

// MaxReturnLen is the longest return path the gate puts in a redirect; a
// longer one becomes "/".
const MaxReturnLen = 1024

// Limits on the open paths, which also keep the CloudFront function small.
const (
	MaxOpenPaths   = 64
	MaxOpenPathLen = 256
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("gate: invalid config")

// Config is one protected site: which room guards it, where its waiting room
// is, which paths need no session, and the keys of its cookies.
type Config struct {
	// Room is the id of the room that guards the site.
	Room string
	// WaitingRoomURL is the waiting page, absolute: https, or http only for a
	// loopback host; no fragment; it may carry a query of its own. The gate
	// sends visitors to WaitingRoomURL + "?room=<room>&return=<path>" (with
	// "&" instead of "?" when it already has a query).
	WaitingRoomURL string
	// OpenPaths pass without a session: "/robots.txt" matches that path
	// exactly; "/static/*" matches every path that starts with "/static/".
	// Matching is on the path as sent (still percent-encoded), case-sensitive,
	// and never for a path holding "..", "\", "%2e" or "%5c" (any case), so a
	// dot-segment cannot climb out of an open prefix.
	OpenPaths []string
	// Keys verify the cookies. The CloudFront function reads them from its
	// KeyValueStore instead (KeyRing.KVSEntries).
	Keys KeyRing
}

// pathChars are the bytes an open path may hold (a "*" only at its end):
// RFC 3986's pchar and "/", without percent-encodings.
const pathChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/"

// validateEdge checks everything but the keys: what the CloudFront function
// needs.
func (c Config) validateEdge() error {
	if !roomPattern.MatchString(c.Room) {
		return fmt.Errorf("%w: room %q is not 1-64 characters of [A-Za-z0-9_-]", ErrConfig, c.Room)
	}
	u, err := url.Parse(c.WaitingRoomURL)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.Opaque != "":
		return fmt.Errorf("%w: waiting room URL %q is not an absolute URL", ErrConfig, c.WaitingRoomURL)
	case u.Scheme != "https" && (u.Scheme != "http" || !isLoopback(u.Host)):
		return fmt.Errorf("%w: waiting room URL %q is not https (http only for a loopback host)", ErrConfig, c.WaitingRoomURL)
	case strings.Contains(c.WaitingRoomURL, "#"):
		return fmt.Errorf("%w: waiting room URL %q has a fragment", ErrConfig, c.WaitingRoomURL)
	case strings.ContainsFunc(c.WaitingRoomURL, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '"' || r == '\\' }):
		return fmt.Errorf("%w: waiting room URL %q has characters that need escaping", ErrConfig, c.WaitingRoomURL)
	}
	if len(c.OpenPaths) > MaxOpenPaths {
		return fmt.Errorf("%w: %d open paths, at most %d", ErrConfig, len(c.OpenPaths), MaxOpenPaths)
	}
	for _, p := range c.OpenPaths {
		star := strings.Index(p, "*")
		switch {
		case len(p) > MaxOpenPathLen || !strings.HasPrefix(p, "/"):
			return fmt.Errorf("%w: open path %q does not start with / or is longer than %d", ErrConfig, p, MaxOpenPathLen)
		case star >= 0 && star != len(p)-1:
			return fmt.Errorf("%w: open path %q has a * that is not its last character", ErrConfig, p)
		case strings.Trim(p, pathChars) != "" || traversal(p):
			return fmt.Errorf("%w: open path %q holds characters an open path cannot match", ErrConfig, p)
		case p == "/*":
			return fmt.Errorf("%w: open path /* opens the whole site", ErrConfig)
		}
	}
	return nil
}

// Validate reports every problem that would make the gate misbehave.
func (c Config) Validate() error {
	if err := c.validateEdge(); err != nil {
		return err
	}
	if err := c.Keys.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// redirectPrefix is the redirect Location up to the escaped return path.
func (c Config) redirectPrefix() string {
	sep := "?"
	if strings.Contains(c.WaitingRoomURL, "?") {
		sep = "&"
		if strings.HasSuffix(c.WaitingRoomURL, "?") || strings.HasSuffix(c.WaitingRoomURL, "&") {
			sep = ""
		}
	}
	return c.WaitingRoomURL + sep + "room=" + escapeComponent(c.Room) + "&return="
}

// Reason says why Decide decided as it did (for logs and metrics; the
// CloudFront function makes the same decisions without naming them).
type Reason string

// The reasons.
const (
	ReasonVestibule Reason = "vestibule" // a /.vestibule/ route: passes
	ReasonOpen      Reason = "open"      // an open path: passes
	ReasonSession   Reason = "session"   // a valid session cookie: passes
	ReasonMissing   Reason = "missing"   // no session cookie: redirected
	ReasonInvalid   Reason = "invalid"   // session cookies, none valid: redirected
	ReasonEnded     Reason = "ended"     // no session, a receipt of one the site ended: redirected to LeavePath
	ReasonRenew     Reason = "renew"     // a valid session past its time to renew, on a GET navigation: redirected to RenewPath
)

// Decision is what the gate does with one request.
type Decision struct {
	// Pass: let the request through to the site.
	Pass bool
	// Reason is why.
	Reason Reason
	// Status is http.StatusFound when the request is redirected, else 0.
	Status int
	// Location is the waiting room URL the visitor is redirected to, with the
	// room and the path to come back to; LeavePath for ReasonEnded; RenewPath
	// with ?return= and the path to come back to for ReasonRenew.
	Location string
	// Session is the visitor's session when Reason is ReasonSession or
	// ReasonRenew, and Cookie the value of the cookie that holds it.
	Session Session
	Cookie  string
	// Err is why the first session cookie was refused, when Reason is
	// ReasonInvalid.
	Err error
}

// Navigation reports whether a request is a browser's top-level navigation,
// the only kind the gate sends through RenewPath (a fetch or an XHR would not
// follow the redirect to a page): Sec-Fetch-Mode "navigate", or, from a
// client that does not send Sec-Fetch-Mode, an Accept naming text/html.
func Navigation(secFetchMode, accept string) bool {
	if secFetchMode != "" {
		return secFetchMode == "navigate"
	}
	return strings.Contains(accept, "text/html")
}

// Decide is the gate: the one decision the Go middleware and the CloudFront
// function both make. target is the request target as sent, the path
// (percent-encoded) with its query if any; cookieHeader is the Cookie
// header, all of it; navigate is Navigation of the request's headers. In
// order:
//
//  1. the gate's routes, EnterPath, LeavePath and RenewPath, pass;
//  2. a path matching an open path passes;
//  3. a request carrying a valid session cookie of the room passes: of the
//     first MaxCookieValues cookies named CookieName, those of the grammar,
//     the room and an unexpired session are candidates, and the first
//     MaxCookieCandidates of them have their MAC checked; except that a GET
//     navigation with a session past its RenewAt gets a 302 to RenewPath,
//     with the path to return to, which renews the session and comes back;
//  4. a request carrying a receipt (ReceiptPrefix) of an unexpired session of
//     the room gets a 302 to LeavePath, which completes that session;
//  5. anything else gets a 302 to the waiting room with the path to return
//     to (see returnPath).
//
// Steps 1 and 2 never match a path holding "..", "\", "%2e" or "%5c".
func Decide(cfg Config, method, target, cookieHeader string, navigate bool, now time.Time) Decision {
	return decide(cfg, CookieName, method, target, cookieHeader, navigate, now)
}

// decide is Decide with the cookie's name.
func decide(cfg Config, name, method, target, cookieHeader string, navigate bool, now time.Time) Decision {
	path, query, _ := strings.Cut(target, "?")
	if !traversal(path) {
		if path == EnterPath || path == LeavePath || path == RenewPath {
			return Decision{Pass: true, Reason: ReasonVestibule}
		}
		if isOpen(cfg.OpenPaths, path) {
			return Decision{Pass: true, Reason: ReasonOpen}
		}
	}
	f := findSession(cfg, name, cookieHeader, now)
	if f.value != "" {
		if f.session.Renews() && f.session.RenewAt.Unix() <= now.Unix() && method == http.MethodGet && navigate {
			return Decision{Reason: ReasonRenew, Status: http.StatusFound, Session: f.session, Cookie: f.value,
				Location: RenewPath + "?return=" + escapeComponent(returnPath(method, path, query))}
		}
		return Decision{Pass: true, Reason: ReasonSession, Session: f.session, Cookie: f.value}
	}
	receipt, values, first := f.receipt, f.values, f.first
	if receipt {
		return Decision{Reason: ReasonEnded, Status: http.StatusFound, Location: LeavePath}
	}
	d := Decision{Reason: ReasonMissing, Status: http.StatusFound,
		Location: cfg.redirectPrefix() + escapeComponent(returnPath(method, path, query))}
	if values > 0 {
		d.Reason, d.Err = ReasonInvalid, first
		if first == nil { // only receipts that are not of this room, or expired
			d.Err = ErrMalformed
		}
	}
	return d
}

// found is what findSession found in a request's cookies.
type found struct {
	session Session
	value   string // the cookie of the valid session, "" if none
	receipt bool   // a receipt of an unexpired session of the room came
	values  int    // how many cookies of the name came (up to MaxCookieValues)
	first   error  // why the first refused cookie was refused
}

// findSession is step 3 and the look for step 4 of Decide, and what the
// response side reads: the first valid session among the request's cookies
// named name.
func findSession(cfg Config, name, cookieHeader string, now time.Time) found {
	var f found
	values := CookieValues(cookieHeader, name)
	f.values = len(values)
	checked := 0
	for _, v := range values {
		if inner, ok := strings.CutPrefix(v, ReceiptPrefix); ok {
			if _, err := parse(inner, cfg.Room, now); err == nil {
				f.receipt = true
			}
			continue
		}
		p, err := parse(v, cfg.Room, now)
		if err == nil {
			if checked == MaxCookieCandidates {
				continue
			}
			checked++
			var s Session
			if s, err = p.verify(cfg.Keys); err == nil {
				f.session, f.value = s, v
				return f
			}
		}
		if f.first == nil {
			f.first = err
		}
	}
	return f
}

// traversal reports whether path could climb out of a prefix once an origin
// normalizes it: a "..", a backslash, or their percent-encodings.
func traversal(path string) bool {
	if strings.Contains(path, "..") || strings.Contains(path, `\`) {
		return true
	}
	lower := strings.ToLower(path)
	return strings.Contains(lower, "%2e") || strings.Contains(lower, "%5c")
}

// isOpen reports whether path matches one of the open paths.
func isOpen(open []string, path string) bool {
	for _, p := range open {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(path, prefix) {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

// returnChars are the bytes a return path may hold: RFC 3986's pchar, "/",
// "?" and "%" (of percent-encodings).
const returnChars = pathChars + "?%"

// returnPath is where the visitor comes back to after the waiting room, always
// a path on this site: "/" for anything but GET and HEAD (a POST target is no
// page), else the path and the query. The query is rewritten as the function
// can rebuild it from CloudFront's parsed query string: its "&"-separated
// parts, empty ones dropped, each as name=value ("=" added when missing),
// sorted. The result must start with exactly one "/", hold only returnChars
// and be at most MaxReturnLen long; otherwise it is "/". So it can never be
// "//host", "/\host" or "scheme:…", and the waiting room cannot be turned
// into an open redirect.
func returnPath(method, path, rawQuery string) string {
	if method != http.MethodGet && method != http.MethodHead {
		return "/"
	}
	t := path
	var pairs []string
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		name, value, _ := strings.Cut(part, "=")
		pairs = append(pairs, name+"="+value)
	}
	if len(pairs) > 0 {
		slices.Sort(pairs)
		t += "?" + strings.Join(pairs, "&")
	}
	return SafeReturn(t)
}

// SafeReturn returns p if it is a path on this site that the gate could have
// put in a redirect: it starts with exactly one "/", holds only RFC 3986 path
// and query characters (returnChars: no "\", space, "#", quote, control or
// non-ASCII byte) and is at most MaxReturnLen long. Otherwise it returns "/".
// The return path comes back from the browser (the waiting page posts it to
// /.vestibule/enter), so that route must pass it through SafeReturn before it
// redirects: then no value can send a visitor off the site.
func SafeReturn(p string) string {
	if len(p) > MaxReturnLen || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.Trim(p, returnChars) != "" {
		return "/"
	}
	return p
}

// escapeComponent is JavaScript's encodeURIComponent: every byte of s but
// A–Z a–z 0–9 - _ . ! ~ * ' ( ) as %XX (upper-case hex).
func escapeComponent(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// sessionKey is the context key of the session Middleware found.
type sessionKey struct{}

// SessionFromContext returns the session of a request Middleware passed on a
// valid cookie; ok is false for /.vestibule/ routes and open paths.
func SessionFromContext(ctx context.Context) (s Session, ok bool) {
	s, ok = ctx.Value(sessionKey{}).(Session)
	return s, ok
}

// Middleware guards next with Decide, for a Go origin that is not behind
// CloudFront (or wants the check twice). Passed requests reach next, with the
// session in their context (SessionFromContext); the others get the 302 with
// Cache-Control: no-store and no body. A response of next that carries
// EndHeader loses it, and when the request passed on a session, the session
// cookie is replaced by its receipt (EndCookie), as the CloudFront function
// does at viewer response. The writer next gets unwraps (Unwrap) to the one
// Middleware got, so next reaches Flush, Hijack and deadlines through
// http.ResponseController, not by asserting interfaces on it. It returns
// cfg's Validate error, and no handler, when cfg does not validate: a gate
// with a bad configuration must not start.
//
// When cfg.WaitingRoomURL is plain http (allowed only for a loopback host:
// local development) and the request's Host is a loopback host, the cookie
// read and written is DevCookieName, the one the API writes without Secure
// there (CookieOptions).
func Middleware(cfg Config, next http.Handler) (http.Handler, error) {
	return middleware(cfg, next, time.Now)
}

// middleware is Middleware with its clock: tests fix the time, so what a
// cookie's Max-Age should be does not depend on how fast the machine is.
func middleware(cfg Config, next http.Handler, clock func() time.Time) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.OpenPaths = slices.Clone(cfg.OpenPaths)
	dev := strings.HasPrefix(cfg.WaitingRoomURL, "http:")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.RequestURI
		if !strings.HasPrefix(target, "/") {
			target = r.URL.RequestURI()
		}
		opts := CookieOptions{InsecureLoopback: dev, Host: r.Host}
		now := clock()
		cookies := strings.Join(r.Header.Values("Cookie"), "; ")
		navigate := Navigation(r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Accept"))
		d := decide(cfg, opts.Name(), r.Method, target, cookies, navigate, now)
		if d.Pass {
			if d.Reason == ReasonSession {
				r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, d.Session))
			}
			next.ServeHTTP(&endWriter{ResponseWriter: w, cfg: &cfg, opts: opts, now: now, cookies: cookies}, r)
			return
		}
		w.Header().Set("Location", d.Location)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(d.Status)
	}), nil
}

// endWriter is the response side of Middleware: before the header goes out,
// it removes EndHeader and, when the site sent "end" to a request that
// carried a valid session (on any path that passed), replaces the session
// cookie with its receipt.
type endWriter struct {
	http.ResponseWriter
	cfg     *Config
	opts    CookieOptions
	now     time.Time
	cookies string // the request's Cookie header
	done    bool
}

func (w *endWriter) end() {
	if w.done {
		return
	}
	w.done = true
	h := w.Header()
	values := h.Values(EndHeader)
	if len(values) == 0 {
		return
	}
	h.Del(EndHeader)
	if !Ends(values...) {
		return
	}
	if f := findSession(*w.cfg, w.opts.Name(), w.cookies, w.now); f.value != "" {
		h.Add("Set-Cookie", EndCookie(f.value, f.session, w.now, w.opts))
	}
}

func (w *endWriter) WriteHeader(code int) {
	if code >= 200 {
		w.end()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *endWriter) Write(b []byte) (int, error) {
	w.end()
	return w.ResponseWriter.Write(b)
}

// Flush lets a handler stream through the gate.
func (w *endWriter) Flush() {
	w.end()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer beneath.
func (w *endWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Ends reports whether the values of a response's EndHeader end the session:
// one of them is EndValue, in any case, spaces around it ignored.
func Ends(values ...string) bool {
	for _, v := range values {
		if strings.EqualFold(strings.Trim(v, " \t"), EndValue) {
			return true
		}
	}
	return false
}
