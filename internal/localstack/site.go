package localstack

import (
	"html/template"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/vestibule-dev/vestibule/gate"
)

// SiteOpenPaths are the demo site's open paths: they load without a session.
var SiteOpenPaths = []string{"/robots.txt", "/favicon.ico"}

// newGatedSite is the demo booking site of make dev as the edge gate protects
// a real one: a plain site with no Vestibule code in it (site), behind
// gate.Middleware, which is what the CloudFront function does in AWS, and
// /.vestibule/* passed to the waiting room's API (api, its base URL) as
// CloudFront's /.vestibule/* behaviour does, keeping the site's Host (the
// API believes X-Forwarded-Host only behind CloudFront's origin secret). cfg is the gate's configuration (room, waiting room, open
// paths, keys).
func newGatedSite(cfg gate.Config, api *url.URL) (http.Handler, error) {
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(api)
		r.SetXForwarded()
		// The site's host, which enter checks: the local API has no origin
		// secret, so it believes Host, never X-Forwarded-Host.
		r.Out.Host = r.In.Host
	}}
	mux := http.NewServeMux()
	mux.Handle(gate.VestibulePrefix, proxy)
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /\n"))
	})
	waiting, _ := url.Parse(cfg.WaitingRoomURL)
	mux.Handle("/", site(waiting.Scheme+"://"+waiting.Host))
	g, err := gate.New(cfg)
	if err != nil {
		return nil, err
	}
	return g.Middleware(mux), nil
}

// site is the booking site itself: every path is a page that says where it
// is. It knows nothing of Vestibule; leaving is a plain form to the gate's
// route, and its "finish booking" form (POST /done) ends the session the way
// a site does when a purchase is over: its answer carries the response header
// gate.EndHeader, which the gate turns into the end of the session. Its CSP's form-action names the waiting room's origin (waiting): the
// leave form's answer redirects to "/", which the gate redirects to the waiting
// room, and browsers check form-action along a form's redirects too.
func site(waiting string) http.HandlerFunc {
	csp := "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' " + waiting
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", csp)
		done := ""
		if r.Method == http.MethodPost && r.URL.Path == "/done" {
			w.Header().Set(gate.EndHeader, gate.EndValue)
			done = "yes"
		}
		_ = sitePage.Execute(w, map[string]string{"Path": r.URL.RequestURI(), "Done": done})
	}
}

// demoStyle is the title and the start of the style of the demo site's page
// and the demo origin's (origin.go): one look, as they stand for one booking site.
const demoStyle = `<title>Demo booking site</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem; color: #1a1a1a; }
  .card { border: 1px solid #ccc; border-radius: 8px; padding: 1rem 1.25rem; }
  button { font: inherit; padding: .5rem 1rem; }
`

var sitePage = template.Must(template.New("site").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
` + demoStyle + `</style>
</head>
<body id="site">
<main>
<h1>Demo booking site</h1>
<p>This stands for your booking site. It has no Vestibule code: the edge gate in front of it let you
in because your browser holds a session cookie for the <code>demo</code> room.</p>
<div class="card">
<p>You are on <code id="path">{{.Path}}</code>.</p>
{{if .Done}}<p id="done">Your booking is complete. Your session has ended: the next visitor is let in.</p>
{{else}}<p><a href="/tickets?show=42">Tickets for show 42</a> · <a href="/">Home</a></p>
<form method="post" action="/done"><button type="submit" id="finish">Finish booking</button></form>
<form method="post" action="/.vestibule/leave"><button type="submit" id="leave">Leave without booking</button></form>{{end}}
</div>
</main>
</body>
</html>
`))
