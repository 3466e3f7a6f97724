package gate

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The review's finding: rooms by path were skipped by spelling the path
// another way. Behind the gate stand two real Go origins, http.FileServer and
// a ServeMux, both of which read "/%74ickets/42", "//tickets/42" and
// "/./tickets/42" as "/tickets/42"; the spring room's page must not be reached
// without spring's session, whatever the spelling and whatever other cookie
// comes, and the CloudFront function in node decides each row as Decide does.
func TestPathSpellingsDoNotSkipARoom(t *testing.T) {
	base, _, _, k2 := parityConfig(t)
	now := time.Now()
	cookie := func(room string) string {
		return RoomCookieName(room) + "=" + Sign(k2, Session{Room: room, Seq: 1, Expires: now.Add(time.Hour)})
	}
	byPath := base
	byPath.Room, byPath.OpenPaths = "", nil
	byPath.Routes = []Route{{Prefix: "/tickets", Room: "spring"}, {Prefix: "/merch", Room: "merch"}}
	catchAll := byPath
	catchAll.Routes = append([]Route{{Prefix: "/", Room: "site"}}, byPath.Routes...)

	// The origins: a file tree and a router, each serving the spring page at
	// /tickets/42.
	root := t.TempDir()
	if err := writeFile(filepath.Join(root, "tickets", "42"), "spring page"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "merch"), 0o755); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/tickets/42", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("spring page")) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("other page")) })
	origins := map[string]http.Handler{"FileServer": http.FileServer(http.Dir(root)), "ServeMux": mux}

	tests := []struct {
		name   string
		cfg    Config
		target string
		cookie string
		status int // what the gate answers; 0 for a pass
	}{
		// The review's rows.
		{"escaped letter, no cookie", byPath, "/%74ickets/42", "", 400},
		{"double slash, no cookie", byPath, "//tickets/42", "", 400},
		{"dot segment, no cookie", byPath, "/./tickets/42", "", 400},
		{"dot-dot out of merch, merch's cookie", byPath, "/merch/../tickets/42", cookie("merch"), 400},
		{"catch-all: escaped letter, site's cookie", catchAll, "/%74ickets/42", cookie("site"), 400},
		// More spellings.
		{"upper case, no cookie", byPath, "/TICKETS/42", "", 302},
		{"upper case, merch's cookie", byPath, "/Tickets/42", cookie("merch"), 302},
		{"catch-all: upper case, site's cookie", catchAll, "/Tickets/42", cookie("site"), 302},
		{"escaped slash", byPath, "/tickets%2F42", "", 400},
		{"escaped slash, lower case hex", catchAll, "/tickets%2f42", cookie("site"), 400},
		{"escaped dot-dot", byPath, "/merch/%2e%2e/tickets/42", cookie("merch"), 400},
		{"backslash", byPath, `/merch\..\tickets\42`, cookie("merch"), 400},
		{"escaped backslash", byPath, "/merch/..%5Ctickets/42", cookie("merch"), 400},
		{"path parameter", byPath, "/tickets;x/42", "", 400},
		{"path parameter on an unprotected path", byPath, "/about;jsessionid=1", "", 400},
		{"escaped semicolon", byPath, "/tickets%3Bx/42", "", 400},
		{"escaped percent (a double decode)", byPath, "/%2574ickets/42", "", 400},
		{"trailing dot segment", byPath, "/tickets/42/.", "", 400},
		{"triple slash", catchAll, "///tickets/42", cookie("site"), 400},
		{"dot segment at the end of an unprotected path", byPath, "/about/..", "", 400},
		{"escaped tilde", byPath, "/merch/%7Ex", cookie("merch"), 400},
		{"malformed escape", byPath, "/merch/%zz", cookie("merch"), 400},
		{"a cut escape", byPath, "/merch/%4", cookie("merch"), 400},
		// What stays as it was.
		{"spring's cookie", byPath, "/tickets/42", cookie("spring"), 0},
		{"no cookie", byPath, "/tickets/42", "", 302},
		{"merch's cookie", byPath, "/tickets/42", cookie("merch"), 302},
		{"catch-all, site's cookie", catchAll, "/tickets/42", cookie("site"), 302},
		{"three dots are a name", byPath, "/about/.../x", "", 0},
		{"an escaped space", byPath, "/about/a%20b", "", 0},
		{"a trailing slash", byPath, "/tickets/", cookie("spring"), 0},
	}
	for _, origin := range []string{"FileServer", "ServeMux"} {
		for _, tc := range tests {
			h := mustMiddlewareAt(t, tc.cfg, now, origins[origin])
			// As net/http's server reads a request line.
			r := httptest.NewRequest("GET", "/", nil)
			r.RequestURI = tc.target
			if u, err := url.ParseRequestURI(tc.target); err == nil {
				r.URL = u
			}
			if tc.cookie != "" {
				r.Header.Set("Cookie", tc.cookie)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			reached := strings.Contains(w.Body.String(), "spring page")
			switch {
			case tc.status != 0 && w.Code != tc.status:
				t.Errorf("%s, %s: %s answered %d, want %d", origin, tc.name, tc.target, w.Code, tc.status)
			case reached && !strings.Contains(tc.cookie, RoomCookieName("spring")):
				t.Errorf("%s, %s: %s reached the spring page without spring's session", origin, tc.name, tc.target)
			case tc.status == 0 && w.Code == http.StatusBadRequest:
				t.Errorf("%s, %s: %s was refused", origin, tc.name, tc.target)
			}
		}
	}

	// The function in node, row by row against Decide.
	for _, cfg := range []Config{byPath, catchAll} {
		var cases []jsCase
		var rows []int
		for i, tc := range tests {
			if len(tc.cfg.Routes) == len(cfg.Routes) {
				cases = append(cases, jsCase{Name: tc.name, Method: "GET", Target: tc.target, Cookie: tc.cookie})
				rows = append(rows, i)
			}
		}
		out := runFunction(t, cfg, cfg.Keys.KVSEntries(), now, cases, 0, nil)
		if len(out.Results) != len(cases) {
			t.Fatalf("the function answered %d cases of %d", len(out.Results), len(cases))
		}
		for j, i := range rows {
			tc, js := tests[i], out.Results[j]
			d := Decide(cfg, "GET", tc.target, tc.cookie, false, now)
			if js.Pass != d.Pass || js.Status != d.Status || js.Location != d.Location {
				t.Errorf("%s: function = pass %v %d %q; Decide = pass %v %d %q", tc.name, js.Pass, js.Status, js.Location, d.Pass, d.Status, d.Location)
			}
			if want := tc.status; want != 0 && d.Status != want || want == 0 && !d.Pass {
				t.Errorf("%s: Decide = %d (%s), want %d", tc.name, d.Status, d.Reason, want)
			}
			checkParity(t, cfg, tc.name, Request{Method: "GET", Target: tc.target, Cookie: tc.cookie}, nil, d, now)
		}
	}
}

// The review's second finding: routes "shop.example.com/vip=vip,/=site" and a
// site cookie opened the vip page on "Host: other.example", since an origin
// behind one distribution answers every host alike. A host the routes do not
// know is not passed on a route of another host; the hosts they know decide
// as before.
func TestUnknownHostNotPassedOnAnotherHostsRoute(t *testing.T) {
	cfg, _, _, k2 := parityConfig(t)
	now := time.Now()
	cookie := func(room string) string {
		return RoomCookieName(room) + "=" + Sign(k2, Session{Room: room, Seq: 1, Expires: now.Add(time.Hour)})
	}
	cfg.Room, cfg.OpenPaths = "", []string{"/static/*"}
	cfg.Routes = []Route{{Host: "shop.example.com", Prefix: "/vip", Room: "vip"}, {Prefix: "/", Room: "site"}}
	const wait = "https://queue.example.com/wait?room="
	tests := []struct {
		name, host, target, cookie string
		status                     int // 0: passes
		location                   string
	}{
		{"the review's row", "other.example", "/vip/1", cookie("site"), 400, ""},
		{"in another case", "other.example", "/VIP/1", cookie("site"), 400, ""},
		{"no Host", "", "/vip/1", cookie("site"), 400, ""},
		{"with vip's cookie, still refused", "other.example", "/vip/1", cookie("vip"), 400, ""},
		{"vip on its host", "shop.example.com", "/vip/1", cookie("vip"), 0, ""},
		{"vip on its host, site's cookie", "shop.example.com", "/vip/1", cookie("site"), 302, wait + "vip&return=%2Fvip%2F1"},
		{"vip's host with a port and in capitals", "SHOP.example.com:443", "/vip/1", cookie("site"), 302, wait + "vip&return=%2Fvip%2F1"},
		{"the rest on another host is the site's", "other.example", "/about", cookie("site"), 0, ""},
		{"the rest on another host, no cookie", "other.example", "/about", "", 302, wait + "site&return=%2Fabout"},
		{"an open path on another host", "other.example", "/static/x.js", "", 0, ""},
		{"the gate's route on another host", "other.example", "/.vestibule/enter", "", 0, ""},
	}
	cases := make([]jsCase, len(tests))
	for i, tc := range tests {
		cases[i] = jsCase{Name: tc.name, Method: "GET", Target: tc.target, Cookie: tc.cookie, Headers: map[string]string{"host": tc.host}}
	}
	out := runFunction(t, cfg, cfg.Keys.KVSEntries(), now, cases, 0, nil)
	if len(out.Results) != len(tests) {
		t.Fatalf("the function answered %d cases of %d", len(out.Results), len(tests))
	}
	h := mustMiddlewareAt(t, cfg, now, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for i, tc := range tests {
		d := DecideRequest(cfg, Request{Host: tc.host, Method: "GET", Target: tc.target, Cookie: tc.cookie}, now)
		if tc.status == 0 && !d.Pass || tc.status != 0 && (d.Pass || d.Status != tc.status || d.Location != tc.location) {
			t.Errorf("%s: DecideRequest = pass %v %d %q (%s); want %d %q", tc.name, d.Pass, d.Status, d.Location, d.Reason, tc.status, tc.location)
		}
		if js := out.Results[i]; js.Pass != d.Pass || js.Status != d.Status || js.Location != d.Location {
			t.Errorf("%s: function = pass %v %d %q; DecideRequest = pass %v %d %q", tc.name, js.Pass, js.Status, js.Location, d.Pass, d.Status, d.Location)
		}
		r := httptest.NewRequest("GET", tc.target, nil)
		r.Host = tc.host
		r.Header.Set("Cookie", tc.cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if want := map[bool]int{true: http.StatusTeapot, false: d.Status}[d.Pass]; w.Code != want {
			t.Errorf("%s: Middleware = %d, want %d", tc.name, w.Code, want)
		}
		checkParity(t, cfg, tc.name, Request{Host: tc.host, Method: "GET", Target: tc.target, Cookie: tc.cookie}, nil, d, now)
	}
}

// Canonical against a table, and its promise: a canonical path is one
// net/url reads back unchanged (no escape it would decode differently).
func TestCanonical(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/": true, "/a/b.c": true, "/a/.b": true, "/a/..b": true, "/a/...": true,
		"/a%20b": true, "/caf%C3%A9": true, "/caf%c3%a9": true, "/a:b@c!$&'()*+,=": true, "/~x": true,
		"": false, "a": false, "//": false, "/a//b": false, "/.": false, "/..": false, "/a/./b": false, "/a/../b": false,
		"/a;b": false, "/a\\b": false, "/a b": false, "/a%": false, "/a%2": false, "/a%g0": false,
		"/%41": false, "/%7e": false, "/%2F": false, "/%2f": false, "/%5C": false, "/%3B": false, "/%25": false,
		"/%2E": false, "/%3A": false, "/%40": false, "/é": false, "/a#b": false, "/a?b": false, "*": false,
	} {
		if got := Canonical(p); got != want {
			t.Errorf("Canonical(%q) = %v, want %v", p, got, want)
		}
	}
}

// FuzzCanonical: a canonical path means one thing to every reader: Go's URL
// parser decodes it to a path that re-escapes to the same text (case of hex
// aside), and its decoded form has no empty or dot segment.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/%74ickets", "//x", "/./x", "/a%20b", "/a;b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !Canonical(p) {
			return
		}
		r, err := http.NewRequest("GET", "http://x"+p, nil)
		if err != nil {
			t.Fatalf("%q: canonical, but %v", p, err)
		}
		if !strings.EqualFold(r.URL.EscapedPath(), p) {
			t.Fatalf("%q: canonical, but read back as %q", p, r.URL.EscapedPath())
		}
		dec := r.URL.Path
		if strings.Contains(dec, "//") || strings.Contains(dec+"/", "/./") || strings.Contains(dec+"/", "/../") {
			t.Fatalf("%q: canonical, but decodes to %q", p, dec)
		}
	})
}
