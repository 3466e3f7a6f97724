package gate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
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
	// Matching is on the path as sent (still percent-encoded) and
	// case-sensitive; a path that is not Canonical never gets this far, so a
	// dot-segment cannot climb out of an open prefix.
	OpenPaths []string
	// Routes put rooms on paths of the site (rooms by path): a request goes to
	// the room of the route with the longest Prefix that matches it, and a
	// request no route matches passes without a session. Room and Routes are
	// one or the other: Room alone guards every path, as the route {"", "/",
	// Room} would.
	Routes []Route
	// Keys verify the cookies. The CloudFront function reads them from its
	// KeyValueStore instead (KeyRing.KVSEntries).
	Keys KeyRing
}

// Route is one rule of rooms by path: the pages under Prefix, on Host, are
// guarded by Room.
type Route struct {
	// Host is the site's host name in lower case, without a port ("" for
	// every host the site answers to).
	Host string `json:"host,omitempty"`
	// Prefix is "/" (every path) or a path without a trailing "/" that
	// matches itself and the paths under it at a segment boundary: "/tickets"
	// matches "/tickets" and "/tickets/42", not "/ticketsale". Matching is on
	// the path as sent (Canonical), in any case of its letters: "/tickets"
	// also guards "/Tickets/42".
	Prefix string `json:"prefix"`
	// Room guards the pages the route matches.
	Room string `json:"room"`
}

// ParseRoutes reads routes written as comma-separated [HOST]/PREFIX=ROOM
// ("/tickets=spring-tour,/merch=merch,shop.example.com/vip=vip"), the form
// `vestibule gate attach --routes` takes; "" is none. It checks the form
// only: Config.Validate checks the routes.
func ParseRoutes(s string) ([]Route, error) {
	var out []Route
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		where, room, ok := strings.Cut(part, "=")
		slash := strings.Index(where, "/")
		if !ok || slash < 0 {
			return nil, fmt.Errorf("%w: route %q is not [HOST]/PREFIX=ROOM", ErrConfig, part)
		}
		out = append(out, Route{Host: where[:slash], Prefix: where[slash:], Room: room})
	}
	return out, nil
}

// MaxRoutes is how many routes a Config may hold (the CloudFront function
// carries them in its code, whose size CloudFront limits).
const MaxRoutes = 32

// hostPattern is a route's host: a DNS name in lower case.
var hostPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)

// routes are the configuration's routes: Routes, or the one route of Room.
func (c Config) routes() []Route {
	if len(c.Routes) > 0 {
		return c.Routes
	}
	return []Route{{Prefix: "/", Room: c.Room}}
}

// RoomFor returns the room that guards path (as sent, without the query) on
// host (the request's Host header; case and a port are ignored), and false
// when no route matches: the path is unprotected. Of the routes that match,
// the one with the longest prefix wins, and of two with the same prefix the
// one that names the host. A prefix matches whatever the case of the path's
// letters ("/tickets" guards "/TICKETS/42" too): an origin on a file system
// or framework that ignores case would serve it as the same page, and one
// that does not answers 404 behind the gate, which costs nothing.
func (c Config) RoomFor(host, path string) (string, bool) {
	host = normalHost(host)
	best, bestLen := "", -1
	for _, r := range c.routes() {
		if r.Host != "" && r.Host != host || !underPrefix(path, r.Prefix) {
			continue
		}
		n := 2 * len(r.Prefix)
		if r.Host != "" {
			n++
		}
		if n > bestLen {
			best, bestLen = r.Room, n
		}
	}
	return best, bestLen >= 0
}

// roomOf is RoomFor for the decision: for a host that no route names (when
// some route names one), the path must belong to the same room, or to none,
// on every host the routes name and on the hosts they do not; otherwise the
// request is misdirected. An origin behind one distribution often answers
// every host the same, so "other.example/vip" would be shop.example.com's
// vip page passed on the catch-all route of another room.
func (c Config) roomOf(host, path string) (room string, ok, misdirected bool) {
	room, ok = c.RoomFor(host, path)
	host = normalHost(host)
	var named []string
	for _, r := range c.Routes {
		if r.Host == host && host != "" {
			return room, ok, false // a host the routes know
		}
		if r.Host != "" {
			named = append(named, r.Host)
		}
	}
	for _, h := range named {
		if other, found := c.RoomFor(h, path); found != ok || other != room {
			return room, ok, true
		}
	}
	return room, ok, false
}

// underPrefix reports whether path is prefix or under it at a segment
// boundary, whatever the case of its ASCII letters; the prefix "/" matches
// everything.
func underPrefix(path, prefix string) bool {
	if prefix == "/" {
		return true // every path, even a target that is not one ("https://…")
	}
	return len(path) >= len(prefix) && lowerASCII(path[:len(prefix)]) == lowerASCII(prefix) &&
		(len(path) == len(prefix) || path[len(prefix)] == '/')
}

// lowerASCII is s with its ASCII letters in lower case (and nothing else
// changed: a canonical path is ASCII, and the function's toLowerCase agrees
// with this on ASCII).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// normalHost is a Host header in lower case, without a port or a final dot.
func normalHost(h string) string {
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// validateRoutes checks Room and Routes.
func (c Config) validateRoutes() error {
	if len(c.Routes) == 0 {
		if !roomPattern.MatchString(c.Room) {
			return fmt.Errorf("%w: room %q is not 1-64 characters of [A-Za-z0-9_-]", ErrConfig, c.Room)
		}
		return nil
	}
	if c.Room != "" {
		return fmt.Errorf("%w: a room (%q) and routes: give one or the other (the route \"/\" guards the rest of the site)", ErrConfig, c.Room)
	}
	if len(c.Routes) > MaxRoutes {
		return fmt.Errorf("%w: %d routes, at most %d", ErrConfig, len(c.Routes), MaxRoutes)
	}
	seen := map[Route]bool{}
	rooms := map[string]string{} // lower case → as given
	for _, r := range c.Routes {
		where := r.Host + r.Prefix
		switch {
		case !roomPattern.MatchString(r.Room):
			return fmt.Errorf("%w: route %s: room %q is not 1-64 characters of [A-Za-z0-9_-]", ErrConfig, where, r.Room)
		case r.Host != "" && !hostPattern.MatchString(r.Host):
			return fmt.Errorf("%w: route %s: host %q is not a host name in lower case, without a port", ErrConfig, where, r.Host)
		case len(r.Prefix) > MaxOpenPathLen || !strings.HasPrefix(r.Prefix, "/"):
			return fmt.Errorf("%w: route %s: prefix %q does not start with / or is longer than %d", ErrConfig, where, r.Prefix, MaxOpenPathLen)
		case r.Prefix != "/" && strings.HasSuffix(r.Prefix, "/"):
			return fmt.Errorf("%w: route %s: prefix %q ends with /: write %q, which matches it and the paths under it", ErrConfig, where, r.Prefix, strings.TrimRight(r.Prefix, "/"))
		case strings.Contains(r.Prefix, "*") || strings.Trim(r.Prefix, pathChars) != "" || !Canonical(r.Prefix):
			return fmt.Errorf("%w: route %s: prefix %q holds characters a prefix cannot match (no *, %%, ;, space, // or dot-segment)", ErrConfig, where, r.Prefix)
		}
		key := Route{Host: r.Host, Prefix: lowerASCII(r.Prefix)}
		if seen[key] {
			return fmt.Errorf("%w: route %s is given twice (prefixes match in any case)", ErrConfig, where)
		}
		seen[key] = true
		if other, ok := rooms[strings.ToLower(r.Room)]; ok && other != r.Room {
			return fmt.Errorf("%w: rooms %q and %q differ only in case: their cookies could be taken for each other", ErrConfig, other, r.Room)
		}
		rooms[strings.ToLower(r.Room)] = r.Room
	}
	return nil
}

// pathChars are the bytes an open path may hold (a "*" only at its end):
// RFC 3986's pchar and "/", without percent-encodings.
const pathChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/"

// validateEdge checks everything but the keys: what the CloudFront function
// needs.
func (c Config) validateEdge() error {
	if err := c.validateRoutes(); err != nil {
		return err
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
		case strings.Trim(p, pathChars) != "" || !Canonical(strings.TrimSuffix(p, "*")):
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

// redirectPrefix is the redirect Location to room's waiting room up to the
// escaped return path.
func (c Config) redirectPrefix(room string) string {
	sep := "?"
	if strings.Contains(c.WaitingRoomURL, "?") {
		sep = "&"
		if strings.HasSuffix(c.WaitingRoomURL, "?") || strings.HasSuffix(c.WaitingRoomURL, "&") {
			sep = ""
		}
	}
	return c.WaitingRoomURL + sep + "room=" + escapeComponent(room) + "&return="
}

// Reason says why Decide decided as it did (for logs and metrics; the
// CloudFront function makes the same decisions without naming them).
type Reason string

// The reasons.
const (
	ReasonVestibule    Reason = "vestibule"    // a /.vestibule/ route: passes
	ReasonOpen         Reason = "open"         // an open path: passes
	ReasonNoRoute      Reason = "noroute"      // no route's prefix matches (rooms by path): passes
	ReasonNonCanonical Reason = "noncanonical" // the path is not Canonical: 400, before any route is matched
	ReasonHost         Reason = "host"         // a host no route names, and a path another host's routes give another room: 400
	ReasonSession      Reason = "session"      // a valid session cookie: passes
	ReasonMissing      Reason = "missing"      // no session cookie: redirected
	ReasonInvalid      Reason = "invalid"      // session cookies, none valid: redirected
	ReasonEnded        Reason = "ended"        // no session, a receipt of one the site ended: redirected to LeavePath
	ReasonRenew        Reason = "renew"        // a valid session past its time to renew, on a GET navigation: redirected to RenewPath
)

// Decision is what the gate does with one request.
type Decision struct {
	// Pass: let the request through to the site.
	Pass bool
	// Reason is why.
	Reason Reason
	// Room is the room whose route matched the request ("" for the gate's
	// routes, open paths and paths no route matches).
	Room string
	// Status is http.StatusFound when the request is redirected,
	// http.StatusBadRequest for ReasonNonCanonical and ReasonHost, else 0.
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

// Request is what the gate reads of a request: the Host header, the method,
// the target as sent (the path, percent-encoded, with its query if any), the
// Cookie header (all of it) and whether it is a navigation (Navigation of its
// headers).
type Request struct {
	Host, Method, Target, Cookie string
	Navigate                     bool
}

// Decide is DecideRequest for a request without a Host: routes that name a
// host never match it.
func Decide(cfg Config, method, target, cookieHeader string, navigate bool, now time.Time) Decision {
	return DecideRequest(cfg, Request{Method: method, Target: target, Cookie: cookieHeader, Navigate: navigate}, now)
}

// DecideRequest is the gate: the one decision the Go middleware, the
// CloudFront function and the forward-auth check all make. In order:
//
//  0. a path that is not Canonical gets a 400, whatever route it would match:
//     an origin would read it as another path;
//  1. the gate's routes, EnterPath, LeavePath and RenewPath, pass;
//  2. a path matching an open path passes;
//  3. a path no route matches (Config.RoomFor) passes; the others belong to
//     the room of the route that matched; but on a host no route names, when
//     the routes of a host they name would give the path another room (or
//     one where this gives none), the request gets a 400;
//  4. a request carrying a valid session cookie of the room passes: of the
//     first MaxCookieValues cookies named RoomCookieName(room), then
//     CookieName, those of the grammar, the room and an unexpired session
//     are candidates, and the first MaxCookieCandidates of them have their
//     MAC checked; except that a GET navigation with a session past its
//     RenewAt gets a 302 to RenewPath, with the path to return to, which
//     renews the session and comes back;
//  5. a request carrying a receipt (ReceiptPrefix) of an unexpired session of
//     the room gets a 302 to LeavePath, which completes that session;
//  6. anything else gets a 302 to the room's waiting room with the path to
//     return to (see returnPath).
func DecideRequest(cfg Config, r Request, now time.Time) Decision {
	return decide(cfg, false, r, now)
}

// decide is DecideRequest, reading the development cookie names when dev is
// set (Middleware on a loopback host).
func decide(cfg Config, dev bool, r Request, now time.Time) Decision {
	path, query, _ := strings.Cut(r.Target, "?")
	if !Canonical(path) {
		// "/%74ickets", "//tickets", "/./tickets", "/merch/../tickets":
		// origins read them as "/tickets", which no route matched.
		return Decision{Reason: ReasonNonCanonical, Status: http.StatusBadRequest}
	}
	if path == EnterPath || path == LeavePath || path == RenewPath {
		return Decision{Pass: true, Reason: ReasonVestibule}
	}
	if isOpen(cfg.OpenPaths, path) {
		return Decision{Pass: true, Reason: ReasonOpen}
	}
	room, ok, misdirected := cfg.roomOf(r.Host, path)
	switch {
	case misdirected:
		return Decision{Reason: ReasonHost, Status: http.StatusBadRequest}
	case !ok:
		return Decision{Pass: true, Reason: ReasonNoRoute}
	}
	f := findSession(cfg.Keys, room, dev, r.Cookie, now)
	if f.value != "" {
		if f.session.Renews() && f.session.RenewAt.Unix() <= now.Unix() && r.Method == http.MethodGet && r.Navigate {
			return Decision{Reason: ReasonRenew, Room: room, Status: http.StatusFound, Session: f.session, Cookie: f.value,
				Location: RenewPath + "?return=" + escapeComponent(returnPath(r.Method, path, query))}
		}
		return Decision{Pass: true, Reason: ReasonSession, Room: room, Session: f.session, Cookie: f.value}
	}
	if f.receipt {
		return Decision{Reason: ReasonEnded, Room: room, Status: http.StatusFound, Location: LeavePath}
	}
	d := Decision{Reason: ReasonMissing, Room: room, Status: http.StatusFound,
		Location: cfg.redirectPrefix(room) + escapeComponent(returnPath(r.Method, path, query))}
	if f.values > 0 {
		d.Reason, d.Err = ReasonInvalid, f.first
		if f.first == nil { // only receipts that are not of this room, or expired
			d.Err = ErrMalformed
		}
	}
	return d
}

// found is what findSession found in a request's cookies.
type found struct {
	session Session
	value   string // the cookie of the valid session, "" if none
	name    string // the name of that cookie
	receipt bool   // a receipt of an unexpired session of the room came
	values  int    // how many cookies of the names came (up to MaxCookieValues)
	first   error  // why the first refused cookie was refused
}

// sessionNames are the names a session of room may come under: the room's
// own (RoomCookieName), then the one every room shared (CookieName), whose
// cookies still pass until they expire; their development names when dev.
func sessionNames(room string, dev bool) [2]string {
	if dev {
		return [2]string{DevCookieName + "-" + room, DevCookieName}
	}
	return [2]string{RoomCookieName(room), CookieName}
}

// findSession is step 4 and the look for step 5 of Decide, and what the
// response side reads: the first valid session of room among the request's
// cookies of its names (sessionNames), at most MaxCookieValues of them.
func findSession(keys KeyRing, room string, dev bool, cookieHeader string, now time.Time) found {
	var f found
	checked := 0
	for _, name := range sessionNames(room, dev) {
		values := CookieValues(cookieHeader, name)
		values = values[:min(len(values), MaxCookieValues-f.values)]
		f.values += len(values)
		for _, v := range values {
			if inner, ok := strings.CutPrefix(v, ReceiptPrefix); ok {
				if _, err := parse(inner, room, now); err == nil {
					f.receipt = true
				}
				continue
			}
			p, err := parse(v, room, now)
			if err == nil {
				if checked == MaxCookieCandidates {
					continue
				}
				checked++
				var s Session
				if s, err = p.verify(keys); err == nil {
					f.session, f.value, f.name = s, v, name
					return f
				}
			}
			if f.first == nil {
				f.first = err
			}
		}
	}
	return f
}

// Canonical reports whether path (as sent, percent-encoded, without the
// query) is in the one form the gate decides on, the form no origin would
// rewrite into another path: it starts with "/"; it has no empty segment
// ("//") and no dot-segment ("." or ".."); every byte is RFC 3986's pchar or
// "/" but ";" (no path parameters, which Java servers and others cut off
// before they route); and every percent-escape is well formed and stands for
// a byte that cannot appear as itself (not an unreserved character, "/",
// "\", ";", "%" or another of pchar's), so "/%74ickets" and "/tickets%2F42"
// are not spellings of "/tickets/42". Hex digits may be in either case. Case
// of the letters is not part of it: routes match in any case (RoomFor).
func Canonical(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '%':
			if i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2]) {
				return false
			}
			b := unhex(path[i+1])<<4 | unhex(path[i+2])
			if b < 0x80 && strings.IndexByte(pathChars+`\%`, b) >= 0 {
				return false
			}
			i += 2
		case c == ';' || strings.IndexByte(pathChars, c) < 0:
			return false
		case c == '/':
			seg := path[i+1:]
			if j := strings.IndexByte(seg, '/'); j >= 0 {
				seg = seg[:j]
			}
			if seg == "." || seg == ".." || seg == "" && i+1 < len(path) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
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

// Gate guards a Go origin that is not behind CloudFront (or wants the check
// twice) with Decide. New validates its configuration once; Middleware wraps
// any number of handlers, the way net/http middleware chains.
type Gate struct {
	cfg   Config
	dev   bool
	clock func() time.Time // tests fix the time, so a cookie's Max-Age does not depend on the machine's speed
}

// New returns the gate of cfg, or cfg's Validate error: a gate with a bad
// configuration must not start.
//
// When cfg.WaitingRoomURL is plain http (allowed only for a loopback host:
// local development) and a request's Host is a loopback host, the cookie
// read and written is DevCookieName, the one the API writes without Secure
// there (CookieOptions).
func New(cfg Config) (*Gate, error) {
	return newGate(cfg, time.Now)
}

func newGate(cfg Config, clock func() time.Time) (*Gate, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.OpenPaths = slices.Clone(cfg.OpenPaths)
	return &Gate{cfg: cfg, dev: strings.HasPrefix(cfg.WaitingRoomURL, "http:"), clock: clock}, nil
}

// Middleware guards next: passed requests reach next, with the session in
// their context (SessionFromContext); the others get the 302 with
// Cache-Control: no-store and no body. A response of next that carries
// EndHeader loses it, and when the request passed on a session, the session
// cookie is replaced by its receipt (EndCookie), as the CloudFront function
// does at viewer response. The writer next gets unwraps (Unwrap) to the one
// Middleware got, so next reaches Flush, Hijack and deadlines through
// http.ResponseController, not by asserting interfaces on it.
func (g *Gate) Middleware(next http.Handler) http.Handler {
	cfg := &g.cfg
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.RequestURI
		if !strings.HasPrefix(target, "/") {
			target = r.URL.RequestURI()
		}
		opts := CookieOptions{InsecureLoopback: g.dev, Host: r.Host}
		now := g.clock()
		cookies := strings.Join(r.Header.Values("Cookie"), "; ")
		navigate := Navigation(r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Accept"))
		d := decide(*cfg, !opts.secure(), Request{Host: r.Host, Method: r.Method, Target: target, Cookie: cookies, Navigate: navigate}, now)
		if d.Pass {
			if d.Reason == ReasonSession {
				r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, d.Session))
			}
			room, _ := cfg.RoomFor(r.Host, strings.SplitN(target, "?", 2)[0])
			next.ServeHTTP(&endWriter{ResponseWriter: w, cfg: cfg, room: room, opts: opts, now: now, cookies: cookies}, r)
			return
		}
		if d.Location != "" {
			w.Header().Set("Location", d.Location)
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(d.Status)
	})
}

// Middleware is New(cfg) wrapping next.
//
// Deprecated: use New once and (*Gate).Middleware for each handler, which
// chains as net/http middleware does.
func Middleware(cfg Config, next http.Handler) (http.Handler, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return g.Middleware(next), nil
}

// endWriter is the response side of Middleware: before the header goes out,
// it removes EndHeader and, when the site sent "end" to a request that
// carried a valid session (on any path that passed), replaces the session
// cookie with its receipt.
type endWriter struct {
	http.ResponseWriter
	cfg     *Config
	room    string // the room whose route the request matched; "" for none
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
	if w.room == "" {
		return
	}
	if f := findSession(w.cfg.Keys, w.room, !w.opts.secure(), w.cookies, w.now); f.value != "" {
		opts := w.opts
		opts.name = f.name
		h.Add("Set-Cookie", EndCookie(f.value, f.session, w.now, opts))
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
