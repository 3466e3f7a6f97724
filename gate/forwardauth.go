package gate

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Proxy names the reverse proxy a forward-auth check answers (docs/GATE.md,
// "Forward-auth"): it says which headers hold the request the proxy is
// deciding, where the gate's settings come from, and which statuses the
// proxy understands. The check reads only the headers its proxy sets itself,
// overwriting whatever the visitor sent under those names: a header of
// another proxy's protocol is the visitor's and would let it name any path.
type Proxy string

// The proxies a check answers.
const (
	// ProxyNginx is nginx's auth_request with the snippet docs/GATE.md
	// gives: X-Original-Method, X-Original-URI ($request_uri) and
	// X-Forwarded-Host, set by proxy_set_header. auth_request knows 2xx, 401
	// and 403 only (anything else is a 500), so a redirect is a 401 with
	// Location, which the snippet's error_page turns into the 302, and a
	// refused path is a 403.
	ProxyNginx Proxy = "nginx"
	// ProxyIngressNginx is the Kubernetes ingress-nginx controller's
	// auth-url: X-Original-Method and X-Original-URL (scheme://host/uri);
	// statuses as nginx's.
	ProxyIngressNginx Proxy = "ingress-nginx"
	// ProxyTraefik is Traefik's forwardAuth: X-Forwarded-Method,
	// X-Forwarded-Uri and X-Forwarded-Host (trustForwardHeader false, its
	// default, so Traefik writes them itself). Traefik returns a denied answer
	// to the browser as it is, so the statuses are the edge's: 302, 400.
	ProxyTraefik Proxy = "traefik"
	// ProxyEnvoy is Envoy's ext_authz filter with an HTTP service: the check
	// request has the original method, and its path is the check's path
	// prefix followed by the original path and query; the settings come in
	// headers the filter adds (headers_to_add), since the query is the
	// original's. Statuses as Traefik's.
	ProxyEnvoy Proxy = "envoy"
)

// Proxies are the proxies a check answers, in the order the docs list them.
var Proxies = []Proxy{ProxyNginx, ProxyIngressNginx, ProxyTraefik, ProxyEnvoy}

// The query parameters of a check URL that carry the gate's settings (all
// proxies but Envoy), and the headers that carry them for Envoy.
const (
	CheckParamRoom        = "room"        // Config.Room
	CheckParamRoutes      = "routes"      // Config.Routes, in ParseRoutes' form
	CheckParamOpen        = "open"        // Config.OpenPaths, comma-separated (repeatable)
	CheckParamWaitingRoom = "waitingRoom" // Config.WaitingRoomURL

	EnvoyHeaderRoom        = "Vestibule-Room"
	EnvoyHeaderRoutes      = "Vestibule-Routes"
	EnvoyHeaderOpen        = "Vestibule-Open"
	EnvoyHeaderWaitingRoom = "Vestibule-Waiting-Room"
)

// ReceiptHeader is a header of a check's 2xx answer when the request carries
// a valid session of its path's room: the Set-Cookie value that turns that
// session's cookie into its receipt (EndCookie). A proxy that can act on the
// site's response sends it to the browser when the site answers with
// EndHeader: nginx's snippet does (docs/GATE.md, "Ending a session behind a
// proxy").
const ReceiptHeader = "Vestibule-Receipt"

// ErrCheck wraps the errors of a check request that cannot be answered: a
// proxy's header missing, settings that are not a gate's (Config.Validate).
var ErrCheck = errors.New("gate: bad check request")

// CheckRequest is one forward-auth check as the proxy sent it.
type CheckRequest struct {
	// Proxy is the proxy the check URL names.
	Proxy Proxy
	// Method is the check request's method (Envoy's is the original's).
	Method string
	// Path is, for Envoy, the original path: what follows the proxy's name in
	// the check URL's path, as sent (percent-encoded); "" for the others.
	Path string
	// RawQuery is the check URL's query as sent: the gate's settings, or for
	// Envoy the original query.
	RawQuery string
	// Header is the check request's header: the proxy's own headers and the
	// visitor's (Cookie, Accept, Sec-Fetch-Mode) that it passes on.
	Header http.Header
}

// ForwardAuth answers forward-auth checks: the API's check route
// (docs/API.md, "/api/gate/check") runs Check for each.
type ForwardAuth struct {
	// Keys verify the session cookies: the ring the gate's routes sign with.
	Keys KeyRing
}

// CheckAnswer is the answer to a check: the status and headers the proxy
// acts on, and a body for the proxies that show it to the browser.
type CheckAnswer struct {
	Status int
	// Header holds Cache-Control (no-store, always), Location when the
	// visitor is sent elsewhere, ReceiptHeader as it applies, Content-Type
	// with a body.
	Header http.Header
	Body   string
	// Decision is the gate's decision the answer tells.
	Decision Decision
}

// Check answers c at now. The decision is DecideRequest's on the original
// request, with the settings the check carries; only the way it is told
// differs by proxy:
//
//   - a request that passes gets 200, with ReceiptHeader when it carries a
//     valid session of its path's room (the room of RoomFor);
//   - a request the gate redirects (to the waiting room, to RenewPath, to
//     LeavePath) gets Location: for nginx and ingress-nginx with 401, for
//     Traefik and Envoy with the gate's 302 and a small page linking there;
//   - a request the gate refuses (a path that is not Canonical, a host the
//     routes do not know) gets 403 for nginx and ingress-nginx, the gate's
//     400 for the others.
//
// Every answer says Cache-Control: no-store. An error (ErrCheck) is a check
// request that cannot be answered: a proxy header missing or settings that do
// not validate; an unknown proxy is one too.
func (f ForwardAuth) Check(c CheckRequest, now time.Time) (CheckAnswer, error) {
	cfg, err := checkConfig(c)
	if err != nil {
		return CheckAnswer{}, err
	}
	cfg.Keys = f.Keys
	if err := cfg.Validate(); err != nil {
		return CheckAnswer{}, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	r, err := OriginalRequest(c)
	if err != nil {
		return CheckAnswer{}, err
	}
	// The development cookie names as Middleware reads them: a plain-http
	// waiting room (loopback only) and a loopback site.
	opts := CookieOptions{InsecureLoopback: strings.HasPrefix(cfg.WaitingRoomURL, "http:"), Host: r.Host}
	dev := !opts.secure()
	d := decide(cfg, dev, r, now)
	a := CheckAnswer{Status: http.StatusOK, Header: http.Header{"Cache-Control": {"no-store"}}, Decision: d}
	nginxLike := c.Proxy == ProxyNginx || c.Proxy == ProxyIngressNginx
	switch {
	case d.Pass:
		path, _, _ := strings.Cut(r.Target, "?")
		if room, ok := cfg.RoomFor(r.Host, path); ok {
			if s := findSession(cfg.Keys, room, dev, r.Cookie, now); s.value != "" {
				opts.name = s.name
				a.Header.Set(ReceiptHeader, EndCookie(s.value, s.session, now, opts))
			}
		}
	case d.Status == http.StatusBadRequest && nginxLike:
		a.Status = http.StatusForbidden
	case d.Status == http.StatusBadRequest:
		a.Status = http.StatusBadRequest
	case nginxLike:
		a.Status = http.StatusUnauthorized
		a.Header.Set("Location", d.Location)
	default:
		a.Status = d.Status
		a.Header.Set("Location", d.Location)
		a.Header.Set("Content-Type", "text/html; charset=utf-8")
		a.Body = `<!doctype html><meta charset="utf-8"><title>Waiting room</title><p><a href="` +
			html.EscapeString(d.Location) + `">Continue</a></p>` + "\n"
	}
	return a, nil
}

// checkConfig reads the gate's settings of c: from the check URL's query, or
// for Envoy from its headers. Keys are left to the caller.
func checkConfig(c CheckRequest) (Config, error) {
	var room, routes, waiting string
	var open []string
	switch c.Proxy {
	case ProxyNginx, ProxyIngressNginx, ProxyTraefik:
		q, err := url.ParseQuery(c.RawQuery)
		if err != nil {
			return Config{}, fmt.Errorf("%w: the check URL's query: %w", ErrCheck, err)
		}
		for k, v := range q {
			switch k {
			case CheckParamOpen:
				open = append(open, v...)
				continue
			case CheckParamRoom, CheckParamRoutes, CheckParamWaitingRoom:
			default:
				return Config{}, fmt.Errorf("%w: the check URL has the parameter %q: it takes %s, %s, %s and %s", ErrCheck, k,
					CheckParamRoom, CheckParamRoutes, CheckParamOpen, CheckParamWaitingRoom)
			}
			if len(v) > 1 {
				return Config{}, fmt.Errorf("%w: the check URL gives %s twice", ErrCheck, k)
			}
		}
		room, routes, waiting = q.Get(CheckParamRoom), q.Get(CheckParamRoutes), q.Get(CheckParamWaitingRoom)
	case ProxyEnvoy:
		h := c.Header
		room, routes, waiting, open = h.Get(EnvoyHeaderRoom), h.Get(EnvoyHeaderRoutes), h.Get(EnvoyHeaderWaitingRoom), h.Values(EnvoyHeaderOpen)
	default:
		return Config{}, fmt.Errorf("%w: no check for the proxy %q (one of nginx, ingress-nginx, traefik, envoy)", ErrCheck, c.Proxy)
	}
	cfg := Config{Room: room, WaitingRoomURL: waiting}
	var err error
	if cfg.Routes, err = ParseRoutes(routes); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	for _, v := range open {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				cfg.OpenPaths = append(cfg.OpenPaths, p)
			}
		}
	}
	return cfg, nil
}

// OriginalRequest reads the request the proxy is deciding from c, from the
// headers its proxy sets (Proxy): its host, method, target (path and query,
// as sent), cookies and whether it is a navigation.
func OriginalRequest(c CheckRequest) (Request, error) {
	h := c.Header
	r := Request{Cookie: strings.Join(h.Values("Cookie"), "; "),
		Navigate: Navigation(h.Get("Sec-Fetch-Mode"), h.Get("Accept"))}
	var need string
	switch c.Proxy {
	case ProxyNginx:
		r.Method, r.Target, r.Host = h.Get("X-Original-Method"), h.Get("X-Original-URI"), firstHost(h.Get("X-Forwarded-Host"))
		need = "X-Original-Method and X-Original-URI"
	case ProxyIngressNginx:
		r.Method = h.Get("X-Original-Method")
		// scheme://host/uri, cut by hand: url.Parse would read the target
		// into a cleaner form than the one the origin gets.
		if _, rest, ok := strings.Cut(h.Get("X-Original-URL"), "://"); ok {
			if i := strings.IndexAny(rest, "/?"); i >= 0 {
				r.Host, r.Target = rest[:i], rest[i:]
			} else {
				r.Host, r.Target = rest, "/"
			}
		}
		need = "X-Original-Method and X-Original-URL (scheme://host/path)"
	case ProxyTraefik:
		r.Method, r.Target, r.Host = h.Get("X-Forwarded-Method"), h.Get("X-Forwarded-Uri"), firstHost(h.Get("X-Forwarded-Host"))
		need = "X-Forwarded-Method and X-Forwarded-Uri"
	case ProxyEnvoy:
		r.Method, r.Target = c.Method, c.Path
		if c.RawQuery != "" {
			r.Target += "?" + c.RawQuery
		}
		r.Host = firstHost(h.Get("X-Forwarded-Host"))
		if r.Host == "" {
			r.Host = h.Get("Host")
		}
		need = "a method and the original path after /envoy"
	default:
		return Request{}, fmt.Errorf("%w: no check for the proxy %q", ErrCheck, c.Proxy)
	}
	if r.Method == "" || r.Target == "" {
		return Request{}, fmt.Errorf("%w: %s's check needs %s", ErrCheck, c.Proxy, need)
	}
	return r, nil
}

// firstHost is the first host of a header that may list several ("a, b").
func firstHost(h string) string {
	first, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(first)
}
