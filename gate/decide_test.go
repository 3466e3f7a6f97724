package gate

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	base, _, _, _ := parityConfig(t)
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		ok   bool
	}{
		{"http on localhost", func(c *Config) { c.WaitingRoomURL = "http://localhost:8080/" }, true},
		{"http on 127.0.0.1", func(c *Config) { c.WaitingRoomURL = "http://127.0.0.1:8080/?lang=en" }, true},
		{"no open paths", func(c *Config) { c.OpenPaths = nil }, true},
		{"room", func(c *Config) { c.Room = "a b" }, false},
		{"no room", func(c *Config) { c.Room = "" }, false},
		{"http elsewhere", func(c *Config) { c.WaitingRoomURL = "http://queue.example.com/" }, false},
		{"relative", func(c *Config) { c.WaitingRoomURL = "/wait" }, false},
		{"scheme-relative", func(c *Config) { c.WaitingRoomURL = "//queue.example.com/" }, false},
		{"javascript", func(c *Config) { c.WaitingRoomURL = "javascript:alert(1)" }, false},
		{"fragment", func(c *Config) { c.WaitingRoomURL = "https://queue.example.com/#x" }, false},
		{"user info", func(c *Config) { c.WaitingRoomURL = "https://u:p@queue.example.com/" }, false},
		{"quote", func(c *Config) { c.WaitingRoomURL = `https://queue.example.com/"` }, false},
		{"open path without slash", func(c *Config) { c.OpenPaths = []string{"static/*"} }, false},
		{"open path, star inside", func(c *Config) { c.OpenPaths = []string{"/static/*/x"} }, false},
		{"open path, everything", func(c *Config) { c.OpenPaths = []string{"/*"} }, false},
		{"open path, dot-dot", func(c *Config) { c.OpenPaths = []string{"/a/../b"} }, false},
		{"open path, percent", func(c *Config) { c.OpenPaths = []string{"/a%20b"} }, false},
		{"open path, space", func(c *Config) { c.OpenPaths = []string{"/a b"} }, false},
		{"open path, too long", func(c *Config) { c.OpenPaths = []string{"/" + strings.Repeat("a", MaxOpenPathLen)} }, false},
		{"too many open paths", func(c *Config) { c.OpenPaths = make([]string, MaxOpenPaths+1) }, false},
		{"no keys", func(c *Config) { c.Keys = KeyRing{} }, false},
	} {
		c := base
		c.OpenPaths = append([]string(nil), base.OpenPaths...)
		tc.edit(&c)
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v does not wrap ErrConfig", tc.name, err)
		}
	}
}

func TestRedirectPrefix(t *testing.T) {
	for url, want := range map[string]string{
		"https://q.example.com/":           "https://q.example.com/?room=r&return=",
		"https://q.example.com":            "https://q.example.com?room=r&return=",
		"https://q.example.com/w?lang=fr":  "https://q.example.com/w?lang=fr&room=r&return=",
		"https://q.example.com/w?":         "https://q.example.com/w?room=r&return=",
		"https://q.example.com/w?lang=fr&": "https://q.example.com/w?lang=fr&room=r&return=",
	} {
		if got := (Config{Room: "r", WaitingRoomURL: url}).redirectPrefix("r"); got != want {
			t.Errorf("%s: %s, want %s", url, got, want)
		}
	}
}

func TestDecideReasons(t *testing.T) {
	cfg, k0, _, k2 := parityConfig(t)
	now := time.Unix(1800000000, 0)
	s := Session{Room: "demo", Seq: 9, Expires: now.Add(time.Minute)}
	valid := "__Host-vestibule=" + Sign(k2, s)
	for _, tc := range []struct {
		target, cookie string
		reason         Reason
		err            error
	}{
		{"/.vestibule/enter", "", ReasonVestibule, nil},
		{"/robots.txt", valid, ReasonOpen, nil},
		{"/book", valid, ReasonSession, nil},
		{"/book", "", ReasonMissing, nil},
		{"/book", "other=1", ReasonMissing, nil},
		{"/book", "__Host-vestibule=" + Sign(k0, s), ReasonInvalid, ErrUnknownKey},
		{"/book", "__Host-vestibule=x; " + valid, ReasonSession, nil},
		{"/book", "__Host-vestibule=x; __Host-vestibule=" + Sign(k0, s), ReasonInvalid, ErrMalformed},
		{"/book", "__Host-vestibule=end." + Sign(k2, s), ReasonEnded, nil},
		{"/book", "__Host-vestibule=end.x", ReasonInvalid, ErrMalformed},
		{"/.vestibule", "", ReasonMissing, nil},
		{"/book", "vestibule=" + Sign(k2, s), ReasonMissing, nil},
	} {
		d := Decide(cfg, "GET", tc.target, tc.cookie, false, now)
		if d.Reason != tc.reason || !errors.Is(d.Err, tc.err) || (tc.err == nil) != (d.Err == nil) {
			t.Errorf("%s %q: %s %v, want %s %v", tc.target, tc.cookie, d.Reason, d.Err, tc.reason, tc.err)
		}
		if d.Reason == ReasonSession && d.Session != (Session{Room: "demo", Seq: 9, Expires: s.Expires.UTC()}) {
			t.Errorf("session %+v", d.Session)
		}
	}
	// A zero config never passes a cookie and never panics.
	if d := Decide(Config{}, "GET", "/x", valid, false, now); d.Pass {
		t.Errorf("zero config: %+v", d)
	}
}

func TestEscapeComponent(t *testing.T) {
	// encodeURIComponent's results, from node.
	for in, want := range map[string]string{
		"/a?b=c&d=e":     "%2Fa%3Fb%3Dc%26d%3De",
		"-_.!~*'()":      "-_.!~*'()",
		"$+,;:@%":        "%24%2B%2C%3B%3A%40%25",
		" é\x00":         "%20%C3%A9%00",
		"AZaz09":         "AZaz09",
		"[]#\"<>\\^`{}|": "%5B%5D%23%22%3C%3E%5C%5E%60%7B%7D%7C",
	} {
		if got := escapeComponent(in); got != want {
			t.Errorf("escapeComponent(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSafeReturn(t *testing.T) {
	for in, want := range map[string]string{
		"/":                    "/",
		"/book?id=42&x=%20":    "/book?id=42&x=%20",
		"/@evil.example":       "/@evil.example",
		"":                     "/",
		"book":                 "/",
		"//evil.example":       "/",
		`/\evil.example`:       "/",
		"https://evil.example": "/",
		"/a#b":                 "/",
		"/a\tb":                "/",
		"/caf\u00e9":           "/",
	} {
		if got := SafeReturn(in); got != want {
			t.Errorf("SafeReturn(%q) = %q, want %q", in, got, want)
		}
	}
	long := "/" + strings.Repeat("a", MaxReturnLen-1)
	if SafeReturn(long) != long || SafeReturn(long+"a") != "/" {
		t.Error("MaxReturnLen")
	}
}

// Whatever the request, the return path is a path on this site.
func FuzzReturnPath(f *testing.F) {
	for _, s := range []string{"/", "/a?b=c", "//evil", `/\evil`, "https://evil", "/a b", "/é", "/x?&&a"} {
		f.Add("GET", s)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		path, query, _ := strings.Cut(target, "?")
		r := returnPath(method, path, query)
		if SafeReturn(r) != r || !strings.HasPrefix(r, "/") || strings.HasPrefix(r, "//") || len(r) > MaxReturnLen || strings.Trim(r, returnChars) != "" {
			t.Fatalf("returnPath(%q, %q) = %q", method, target, r)
		}
		d := Decide(Config{Room: "r", WaitingRoomURL: "https://q.example.com/"}, method, target, "", false, time.Unix(0, 0))
		switch {
		case d.Status == http.StatusBadRequest && Canonical(path), d.Status != http.StatusBadRequest && !Canonical(path):
			t.Fatalf("%q: %d, canonical %v", target, d.Status, Canonical(path))
		case d.Status == http.StatusFound && d.Location != "https://q.example.com/?room=r&return="+escapeComponent(r):
			t.Fatalf("Location %q", d.Location)
		}
	})
}

// TestGateChains: one gate, validated once, guards several handlers and sits
// in a chain of func(http.Handler) http.Handler like any net/http middleware:
// what runs outside it sees every request, what runs inside only the passed.
func TestGateChains(t *testing.T) {
	cfg, _, _, k2 := parityConfig(t)
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var outer, inner []string
	logged := func(seen *[]string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				*seen = append(*seen, r.URL.Path)
				next.ServeHTTP(w, r)
			})
		}
	}
	chain := func(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
	page := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) })
	}
	mux := http.NewServeMux()
	mux.Handle("/tickets/", chain(page("tickets"), logged(&outer), g.Middleware, logged(&inner)))
	mux.Handle("/merch/", g.Middleware(page("merch")))
	cookie := CookieName + "=" + Sign(k2, Session{Room: "demo", Seq: 1, Expires: time.Now().Add(time.Hour)})
	get := func(target, cookie string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w
	}
	if w := get("/tickets/1", ""); w.Code != http.StatusFound {
		t.Errorf("/tickets/1 without a cookie: %d, want 302", w.Code)
	}
	if w := get("/tickets/2", cookie); w.Code != http.StatusOK || w.Body.String() != "tickets" {
		t.Errorf("/tickets/2 with a session: %d %q", w.Code, w.Body)
	}
	if w := get("/merch/3", ""); w.Code != http.StatusFound {
		t.Errorf("/merch/3 without a cookie: %d, want 302", w.Code)
	}
	if !slices.Equal(outer, []string{"/tickets/1", "/tickets/2"}) || !slices.Equal(inner, []string{"/tickets/2"}) {
		t.Errorf("outside the gate saw %v, inside %v; want both requests outside, the passed one inside", outer, inner)
	}
}

func TestMiddleware(t *testing.T) {
	cfg, _, _, k2 := parityConfig(t)
	var seen *http.Request
	h := mustMiddleware(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		w.WriteHeader(http.StatusTeapot)
	}))
	s := Session{Room: "demo", Seq: 5, Expires: time.Now().Add(time.Hour).Truncate(time.Second)}
	cookie := Sign(k2, s)

	do := func(method, target string, cookies ...string) *httptest.ResponseRecorder {
		seen = nil
		r := httptest.NewRequest(method, target, nil)
		for _, c := range cookies {
			r.Header.Add("Cookie", c)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	w := do("GET", "/book?id=42")
	if w.Code != http.StatusFound || w.Header().Get("Location") != "https://queue.example.com/wait?room=demo&return=%2Fbook%3Fid%3D42" ||
		w.Header().Get("Cache-Control") != "no-store" || seen != nil || w.Body.Len() != 0 {
		t.Errorf("no cookie: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
	// HTTP/2 may send cookies as several headers.
	w = do("GET", "/book", "theme=dark", "__Host-vestibule="+cookie)
	if w.Code != http.StatusTeapot || seen == nil {
		t.Fatalf("valid cookie: %d", w.Code)
	}
	if got, ok := SessionFromContext(seen.Context()); !ok || got != (Session{Room: "demo", Seq: 5, Expires: s.Expires.UTC()}) {
		t.Errorf("SessionFromContext = %+v, %v", got, ok)
	}
	w = do("GET", "/static/app.js")
	if w.Code != http.StatusTeapot {
		t.Errorf("open path: %d", w.Code)
	}
	if _, ok := SessionFromContext(seen.Context()); ok {
		t.Error("an open path has a session")
	}
	w = do("POST", "/.vestibule/enter")
	if w.Code != http.StatusTeapot {
		t.Errorf("/.vestibule/enter: %d", w.Code)
	}
	w = do("GET", "/static/%2e%2e/book")
	if w.Code != http.StatusBadRequest || seen != nil || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("encoded dot-dot: %d %s", w.Code, w.Header().Get("Location"))
	}

	// Local development: a plain-http waiting room on a loopback host reads
	// the development cookie on a loopback Host, and only there.
	dev := cfg
	dev.WaitingRoomURL = "http://localhost:8080/"
	dh := mustMiddleware(t, dev, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(EndHeader, "end")
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, tc := range []struct {
		host, cookie string
		code         int
		set          string
	}{
		{"localhost:8081", DevCookieName + "=" + cookie, http.StatusTeapot, DevCookieName + "=end." + cookie},
		{"localhost:8081", CookieName + "=" + cookie, http.StatusFound, ""},
		{"127.0.0.1:8081", DevCookieName + "=" + cookie, http.StatusTeapot, DevCookieName + "=end." + cookie},
		{"site.example", DevCookieName + "=" + cookie, http.StatusFound, ""},
		{"site.example", CookieName + "=" + cookie, http.StatusTeapot, CookieName + "=end." + cookie},
	} {
		r := httptest.NewRequest("GET", "/book", nil)
		r.Host = tc.host
		r.Header.Set("Cookie", tc.cookie)
		w := httptest.NewRecorder()
		dh.ServeHTTP(w, r)
		set := w.Header().Get("Set-Cookie")
		if w.Code != tc.code || !strings.HasPrefix(set, tc.set) || (tc.set == "") != (set == "") || w.Header().Get(EndHeader) != "" {
			t.Errorf("dev, %s, %s: %d, Set-Cookie %q", tc.host, tc.cookie, w.Code, set)
		}
		if tc.set != "" && strings.Contains(set, "Secure") == strings.HasPrefix(tc.set, DevCookieName) {
			t.Errorf("dev, %s: %s", tc.host, set)
		}
	}
	// Streaming through the gate: the header goes out with the first flush,
	// without the end header, and the writer beneath is reachable.
	sh := mustMiddleware(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(EndHeader, "keep")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the gate: %v", err)
		}
		w.Write([]byte("x"))
	}))
	sr := httptest.NewRequest("GET", "/static/x", nil)
	sw := httptest.NewRecorder()
	sh.ServeHTTP(sw, sr)
	if !sw.Flushed || sw.Header().Get(EndHeader) != "" || sw.Body.String() != "x" {
		t.Errorf("streamed: flushed %v, header %v, body %q", sw.Flushed, sw.Header(), sw.Body.String())
	}
	// A receipt without a session goes to leave.
	w = do("GET", "/book", CookieName+"=end."+cookie)
	if w.Code != http.StatusFound || w.Header().Get("Location") != LeavePath || seen != nil {
		t.Errorf("receipt: %d %s", w.Code, w.Header().Get("Location"))
	}
	// /.vestibule itself is a page like any other (N7).
	w = do("GET", "/.vestibule")
	if w.Code != http.StatusFound || seen != nil {
		t.Errorf("/.vestibule without a session: %d", w.Code)
	}

	// A config that does not validate gives its error and no gate, as
	// net/http's constructors do, rather than a panic; so does the
	// deprecated one-call form.
	bad := cfg
	bad.Keys = KeyRing{}
	if g, err := New(bad); err == nil || g != nil || err.Error() != bad.Validate().Error() {
		t.Errorf("New of a config without keys: %v, %v; want Validate's error and no gate", g, err)
	}
	if h, err := Middleware(bad, http.NotFoundHandler()); err == nil || h != nil || err.Error() != bad.Validate().Error() {
		t.Errorf("Middleware of a config without keys: %v, %v; want Validate's error and no handler", h, err)
	}
}
