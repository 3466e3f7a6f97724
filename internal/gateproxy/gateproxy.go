// Package gateproxy is the gating reverse proxy of `vestibule gate serve`
// (docs/GATE.md, "The gating proxy"): for a site with no proxy or CDN in
// front, gate.Middleware in front of an httputil.ReverseProxy to the site,
// with /.vestibule/* passed to Vestibule's API as CloudFront's /.vestibule/*
// behaviour passes them. The same package serves make dev's proxy door.
package gateproxy

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// Options are a gating proxy's settings.
type Options struct {
	// Gate is the gate: its room or routes, open paths, waiting room and
	// keys, as the stack's gate has them.
	Gate gate.Config
	// Upstream is the site: http or https, with an optional base path.
	Upstream *url.URL
	// API is Vestibule's API, where /.vestibule/* go.
	API *url.URL
	// OriginSecret, when set, goes to the API in config.OriginHeader, as
	// CloudFront sends it: a deployed stack's API answers only requests
	// that carry it, and believes X-Forwarded-Host, the site's host, only
	// on them. Without it (make dev) the API gets the site's Host instead.
	OriginSecret string
	// ErrorLog logs what the proxies cannot reach; nil: the log package's.
	ErrorLog *log.Logger
}

// Proxy is a running gating proxy. SetKeys changes its keys while it serves.
type Proxy struct {
	o  Options
	mu sync.RWMutex
	h  http.Handler
}

// New returns the proxy of o, or the error that keeps it from starting: a
// gate that does not validate (gate.Config.Validate), an upstream or API
// that is not an absolute http(s) URL.
func New(o Options) (*Proxy, error) {
	for name, u := range map[string]*url.URL{"upstream": o.Upstream, "API": o.API} {
		if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("gateproxy: the %s is not an http(s) URL without a query", name)
		}
	}
	p := &Proxy{o: o}
	if err := p.SetKeys(o.Gate.Keys); err != nil {
		return nil, err
	}
	return p, nil
}

// SetKeys rebuilds the gate with ring, after a rotation of the keys; the
// requests in flight finish with the old gate. A ring that does not validate
// changes nothing.
func (p *Proxy) SetKeys(ring gate.KeyRing) error {
	cfg := p.o.Gate
	cfg.Keys = ring
	g, err := gate.New(cfg)
	if err != nil {
		return err
	}
	h := g.Middleware(p.mux())
	p.mu.Lock()
	p.h = h
	p.mu.Unlock()
	return nil
}

// ServeHTTP gates one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.RLock()
	h := p.h
	p.mu.RUnlock()
	h.ServeHTTP(w, r)
}

// mux sends /.vestibule/* to the API and everything else to the site; the
// gate in front of it has already decided. It is no ServeMux, which would
// answer a path it finds unclean with a redirect of its own: a path goes on
// as it came.
func (p *Proxy) mux() http.Handler {
	api, site := p.toAPI(), p.toSite()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, gate.VestibulePrefix) {
			api.ServeHTTP(w, r)
			return
		}
		site.ServeHTTP(w, r)
	})
}

// toSite is the reverse proxy to the upstream. The path goes exactly as the
// gate checked it, percent-escapes and all (the request line's target, after
// the upstream's base path), never as Go would re-encode it.
func (p *Proxy) toSite() http.Handler {
	base := strings.TrimSuffix(p.o.Upstream.EscapedPath(), "/")
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.o.Upstream)
			r.SetXForwarded()
			path := r.In.RequestURI
			if !strings.HasPrefix(path, "/") {
				path = r.In.URL.RequestURI() // an absolute-form target
			}
			path, _, _ = strings.Cut(path, "?")
			r.Out.URL.Opaque = base + path
		},
		ErrorLog:     p.o.ErrorLog,
		ErrorHandler: p.unreachable("the site"),
	}
}

// toAPI is the reverse proxy of the gate's routes to Vestibule's API.
func (p *Proxy) toAPI() http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.o.API)
			r.SetXForwarded() // X-Forwarded-Host: the site's host, for enter's check
			r.Out.Header.Del(config.OriginHeader)
			if p.o.OriginSecret != "" {
				r.Out.Header.Set(config.OriginHeader, p.o.OriginSecret)
			} else {
				// make dev's API has no origin secret and believes Host only.
				r.Out.Host = r.In.Host
			}
		},
		ErrorLog:     p.o.ErrorLog,
		ErrorHandler: p.unreachable("the waiting room"),
	}
}

// unreachable answers a request the proxy could not pass on: 502, a short
// page, never cached; the cause goes to the log.
func (p *Proxy) unreachable(what string) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		logf := log.Printf
		if p.o.ErrorLog != nil {
			logf = p.o.ErrorLog.Printf
		}
		logf("gate serve: %s %s: %s: %v", r.Method, r.URL.Path, what, err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(what + " cannot be reached just now; try again in a moment.\n"))
	}
}
