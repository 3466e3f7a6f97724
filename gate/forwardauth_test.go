package gate

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// decoys are the other proxies' headers, naming an open path and another
// host: a visitor can send any of them, and only the proxy's own are
// overwritten by the proxy, so a check that read another protocol's header
// would pass a page it should not.
var decoys = map[string]string{
	"X-Original-Method":  "GET",
	"X-Original-URI":     "/robots.txt",
	"X-Original-URL":     "https://decoy.example/robots.txt",
	"X-Forwarded-Method": "GET",
	"X-Forwarded-Uri":    "/robots.txt",
	"X-Forwarded-Host":   "decoy.example",
}

// checkRequest is the check proxy p sends for the request r (its visitor
// headers in visitor) on a site guarded by cfg: the settings in the check
// URL's query (Envoy: in the headers its filter adds), the original request
// in p's own headers, over decoys of the other protocols' headers.
func checkRequest(p Proxy, cfg Config, r Request, visitor map[string]string) CheckRequest {
	h := http.Header{}
	for k, v := range decoys {
		h.Set(k, v)
	}
	for k, v := range visitor {
		h.Set(k, v)
	}
	if r.Cookie != "" {
		h.Set("Cookie", r.Cookie)
	}
	var routes []string
	for _, rt := range cfg.Routes {
		routes = append(routes, rt.Host+rt.Prefix+"="+rt.Room)
	}
	settings := url.Values{}
	set := func(k, v string) {
		if v != "" {
			settings.Set(k, v)
		}
	}
	set(CheckParamRoom, cfg.Room)
	set(CheckParamRoutes, strings.Join(routes, ","))
	set(CheckParamOpen, strings.Join(cfg.OpenPaths, ","))
	set(CheckParamWaitingRoom, cfg.WaitingRoomURL)
	c := CheckRequest{Proxy: p, Method: http.MethodGet, RawQuery: settings.Encode(), Header: h}
	switch p {
	case ProxyNginx:
		h.Set("X-Original-Method", r.Method)
		h.Set("X-Original-URI", r.Target)
		h.Set("X-Forwarded-Host", r.Host)
	case ProxyIngressNginx:
		h.Set("X-Original-Method", r.Method)
		h.Set("X-Original-URL", "https://"+r.Host+r.Target)
	case ProxyTraefik:
		h.Set("X-Forwarded-Method", r.Method)
		h.Set("X-Forwarded-Uri", r.Target)
		h.Set("X-Forwarded-Host", r.Host)
	case ProxyEnvoy:
		// The filter adds the settings; the visitor's X-Forwarded-Host is
		// not among the headers it passes (allowed_headers), Host is the
		// original's.
		h.Del("X-Forwarded-Host")
		h.Set("Host", r.Host)
		h.Set(EnvoyHeaderRoom, cfg.Room)
		h.Set(EnvoyHeaderRoutes, strings.Join(routes, ","))
		h.Set(EnvoyHeaderWaitingRoom, cfg.WaitingRoomURL)
		for _, o := range cfg.OpenPaths {
			h.Add(EnvoyHeaderOpen, o)
		}
		c.Method = r.Method
		c.Path, c.RawQuery, _ = strings.Cut(r.Target, "?")
	}
	return c
}

// checkParity runs one row of a parity table through the forward-auth check
// of every proxy and fails the test when a check does not tell d, the
// decision Decide made on the row: a pass is 200, a redirect its Location
// (with 401 for nginx and ingress-nginx, the 302 for the others), a refusal
// 403 (nginx, ingress-nginx) or the 400. Every answer is no-store.
func checkParity(t *testing.T, cfg Config, name string, r Request, visitor map[string]string, d Decision, now time.Time) map[Proxy]CheckAnswer {
	t.Helper()
	f := ForwardAuth{Keys: cfg.Keys}
	out := map[Proxy]CheckAnswer{}
	for _, p := range Proxies {
		if p == ProxyIngressNginx && r.Host == "" {
			continue // its URL always names the host
		}
		a, err := f.Check(checkRequest(p, cfg, r, visitor), now)
		if err != nil {
			t.Errorf("%s: %s's check: %v", name, p, err)
			continue
		}
		out[p] = a
		nginxLike := p == ProxyNginx || p == ProxyIngressNginx
		want := map[bool]int{true: http.StatusOK, false: d.Status}[d.Pass]
		switch {
		case d.Status == http.StatusFound && nginxLike:
			want = http.StatusUnauthorized
		case d.Status == http.StatusBadRequest && nginxLike:
			want = http.StatusForbidden
		}
		wantLoc := d.Location
		if a.Status != want || a.Header.Get("Location") != wantLoc || a.Decision.Pass != d.Pass || a.Decision.Reason != d.Reason {
			t.Errorf("%s: %s's check = %d %q (%s); Decide = pass %v, %d %q (%s)", name, p, a.Status, a.Header.Get("Location"),
				a.Decision.Reason, d.Pass, d.Status, d.Location, d.Reason)
		}
		if a.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %s's check says Cache-Control %q", name, p, a.Header.Get("Cache-Control"))
		}
		if a.Status == http.StatusFound && !strings.Contains(a.Body, `href="`) {
			t.Errorf("%s: %s's check redirects without a link to follow: %q", name, p, a.Body)
		}
	}
	return out
}

// The check's own errors: a request it cannot answer is an ErrCheck, never a
// pass.
func TestCheckRefusesWhatItCannotRead(t *testing.T) {
	cfg, _, _, k2 := parityConfig(t)
	f := ForwardAuth{Keys: cfg.Keys}
	now := time.Now()
	valid := CookieName + "=" + Sign(k2, Session{Room: "demo", Seq: 1, Expires: now.Add(time.Hour)})
	good := func(p Proxy) CheckRequest {
		return checkRequest(p, cfg, Request{Host: "booking.example.com", Method: "GET", Target: "/book", Cookie: valid}, nil)
	}
	for _, p := range Proxies {
		if a, err := f.Check(good(p), now); err != nil || a.Status != http.StatusOK {
			t.Fatalf("%s: the good check: %d %v", p, a.Status, err)
		}
	}
	for _, c := range []struct {
		name string
		p    Proxy
		edit func(*CheckRequest)
		says string
	}{
		{"unknown proxy", "haproxy", func(c *CheckRequest) {}, "no check for the proxy"},
		{"nginx without X-Original-URI", ProxyNginx, func(c *CheckRequest) { c.Header.Del("X-Original-URI") }, "X-Original-URI"},
		{"nginx without X-Original-Method", ProxyNginx, func(c *CheckRequest) { c.Header.Del("X-Original-Method") }, "X-Original-Method"},
		{"ingress-nginx without a scheme", ProxyIngressNginx, func(c *CheckRequest) { c.Header.Set("X-Original-URL", "booking.example.com/book") }, "X-Original-URL"},
		{"traefik without X-Forwarded-Uri", ProxyTraefik, func(c *CheckRequest) { c.Header.Del("X-Forwarded-Uri") }, "X-Forwarded-Uri"},
		{"envoy without a path", ProxyEnvoy, func(c *CheckRequest) { c.Path = "" }, "original path"},
		{"no room", ProxyNginx, func(c *CheckRequest) { c.RawQuery = "waitingRoom=https://queue.example.com/" }, "room"},
		{"a room and routes", ProxyTraefik, func(c *CheckRequest) { c.RawQuery += "&routes=/tickets=tix" }, "one or the other"},
		{"a bad route", ProxyNginx, func(c *CheckRequest) { c.RawQuery = "routes=tickets&waitingRoom=https://queue.example.com/" }, "[HOST]/PREFIX=ROOM"},
		{"no waiting room", ProxyNginx, func(c *CheckRequest) { c.RawQuery = "room=demo" }, "waiting room URL"},
		{"a waiting room over http", ProxyTraefik, func(c *CheckRequest) { c.RawQuery = "room=demo&waitingRoom=http://queue.example.com/" }, "not https"},
		{"an unknown parameter", ProxyNginx, func(c *CheckRequest) { c.RawQuery += "&rooms=x" }, `"rooms"`},
		{"the room twice", ProxyNginx, func(c *CheckRequest) { c.RawQuery += "&room=other" }, "twice"},
		{"an open path that opens everything", ProxyNginx, func(c *CheckRequest) { c.RawQuery += "&open=/*" }, "opens the whole site"},
		{"envoy's settings in the query are not read", ProxyEnvoy, func(c *CheckRequest) {
			c.Header.Del(EnvoyHeaderRoom)
			c.RawQuery = "room=demo"
		}, "room"},
	} {
		req := good(c.p)
		req.Proxy = c.p
		c.edit(&req)
		a, err := f.Check(req, now)
		if !errors.Is(err, ErrCheck) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %d %v, want an ErrCheck saying %q", c.name, a.Status, err, c.says)
		}
	}
}

// The settings of nginx's check are the query's: repeated open parameters
// add up, spaces around commas go.
func TestCheckSettings(t *testing.T) {
	cfg, err := checkConfig(CheckRequest{Proxy: ProxyNginx,
		RawQuery: "routes=%2Ftickets%3Dtix%2C+shop.example.com%2Fvip%3Dvip&open=/robots.txt,+/static/*&open=/healthz&waitingRoom=https://q.example/"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{{Prefix: "/tickets", Room: "tix"}, {Host: "shop.example.com", Prefix: "/vip", Room: "vip"}}
	if len(cfg.Routes) != 2 || cfg.Routes[0] != want[0] || cfg.Routes[1] != want[1] {
		t.Errorf("routes %+v", cfg.Routes)
	}
	if strings.Join(cfg.OpenPaths, " ") != "/robots.txt /static/* /healthz" || cfg.WaitingRoomURL != "https://q.example/" {
		t.Errorf("open %q, waiting room %q", cfg.OpenPaths, cfg.WaitingRoomURL)
	}
}

// ingress-nginx's X-Original-URL is cut by hand, so the target is the one
// the origin gets: a double slash or an escape is not cleaned away.
func TestCheckIngressNginxURL(t *testing.T) {
	for url, want := range map[string][2]string{
		"https://shop.example.com/tickets/42?a=1": {"shop.example.com", "/tickets/42?a=1"},
		"https://shop.example.com//tickets":       {"shop.example.com", "//tickets"},
		"http://shop.example.com:8080/%74ickets":  {"shop.example.com:8080", "/%74ickets"},
		"https://shop.example.com?x=1":            {"shop.example.com", "?x=1"},
		"https://shop.example.com":                {"shop.example.com", "/"},
	} {
		r, err := OriginalRequest(CheckRequest{Proxy: ProxyIngressNginx, Header: http.Header{"X-Original-Method": {"GET"}, "X-Original-Url": {url}}})
		if err != nil || r.Host != want[0] || r.Target != want[1] {
			t.Errorf("%s: host %q target %q (%v), want %q %q", url, r.Host, r.Target, err, want[0], want[1])
		}
	}
}
