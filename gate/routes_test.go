package gate

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// routesConfig is a site with rooms by path: /tickets to one room, /merch to
// another (with /merch/vip, on the site's own host, to a third), the rest
// unprotected.
func routesConfig(t testing.TB) (Config, Key) {
	cfg, _, _, k2 := parityConfig(t)
	cfg.Room = ""
	cfg.Routes = []Route{
		{Prefix: "/tickets", Room: "tix"},
		{Prefix: "/merch", Room: "merch"},
		{Host: "booking.example.com", Prefix: "/merch/vip", Room: "vip"},
		{Host: "other.example.com", Prefix: "/merch/vip", Room: "elsewhere"},
	}
	return cfg, k2
}

// The gate's path rules: the longest prefix wins, a prefix matches only at a
// segment boundary (/tickets is not /ticketsale), a route naming the host wins
// over one that does not on the same prefix and never matches another host,
// and a path no route matches is nobody's.
func TestRoutesLongestPrefixAtASegmentBoundary(t *testing.T) {
	cfg, _ := routesConfig(t)
	for _, c := range []struct {
		host, path, room string
	}{
		{"booking.example.com", "/tickets", "tix"},
		{"booking.example.com", "/tickets/42", "tix"},
		{"booking.example.com", "/tickets/", "tix"},
		{"booking.example.com", "/ticketsale", ""},
		{"booking.example.com", "/Tickets", "tix"},
		{"booking.example.com", "/MERCH/VIP/1", "vip"},
		{"booking.example.com", "/merch/tees", "merch"},
		{"booking.example.com", "/merch/vip", "vip"},
		{"BOOKING.example.com:443", "/merch/vip/1", "vip"},
		{"booking.example.com.", "/merch/vip/1", "vip"},
		{"other.example.com", "/merch/vip/1", "elsewhere"},
		{"third.example.com", "/merch/vip/1", "merch"},
		{"", "/merch/vip", "merch"},
		{"booking.example.com", "/merch/vipers", "merch"},
		{"booking.example.com", "/", ""},
		{"booking.example.com", "/about", ""},
	} {
		room, ok := cfg.RoomFor(c.host, c.path)
		if room != c.room || ok != (c.room != "") {
			t.Errorf("RoomFor(%q, %q) = %q %v, want %q", c.host, c.path, room, ok, c.room)
		}
	}
	// Room alone is the route "/": every path, as before routes.
	one := Config{Room: "demo"}
	for _, p := range []string{"/", "/x", "https://evil.example/"} {
		if room, ok := one.RoomFor("any.example", p); room != "demo" || !ok {
			t.Errorf("a room alone, %q: %q %v", p, room, ok)
		}
	}
}

// Bad rules are a clear error naming the rule, before a gate starts or a
// function is made.
func TestRoutesValidation(t *testing.T) {
	base, _ := routesConfig(t)
	for _, c := range []struct {
		name   string
		edit   func(*Config)
		reason string
	}{
		{"a room and routes", func(c *Config) { c.Room = "demo" }, "one or the other"},
		{"trailing slash", func(c *Config) { c.Routes[0].Prefix = "/tickets/" }, `write "/tickets"`},
		{"a star", func(c *Config) { c.Routes[0].Prefix = "/tickets*" }, "cannot match"},
		{"no slash", func(c *Config) { c.Routes[0].Prefix = "tickets" }, "does not start with /"},
		{"traversal", func(c *Config) { c.Routes[0].Prefix = "/a/../tickets" }, "cannot match"},
		{"double slash", func(c *Config) { c.Routes[0].Prefix = "//tickets" }, "cannot match"},
		{"percent", func(c *Config) { c.Routes[0].Prefix = "/t%20x" }, "cannot match"},
		{"bad room", func(c *Config) { c.Routes[0].Room = "a b" }, "room"},
		{"host in upper case", func(c *Config) { c.Routes[0].Host = "Booking.example.com" }, "lower case"},
		{"host with a port", func(c *Config) { c.Routes[0].Host = "booking.example.com:443" }, "without a port"},
		{"twice", func(c *Config) { c.Routes[1].Prefix = "/tickets" }, "given twice"},
		{"rooms equal but for case", func(c *Config) { c.Routes[1].Room = "TIX" }, "differ only in case"},
		{"too many", func(c *Config) {
			for i := range MaxRoutes {
				c.Routes = append(c.Routes, Route{Prefix: "/r" + strings.Repeat("x", i), Room: "r"})
			}
		}, "at most"},
	} {
		cfg := base
		cfg.Routes = append([]Route(nil), base.Routes...)
		c.edit(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want an ErrConfig saying %q", c.name, err, c.reason)
		}
		if _, err := CloudFrontFunction(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: CloudFrontFunction: %v", c.name, err)
		}
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("the good rule set: %v", err)
	}
}

// The CloudFront function and DecideRequest route rooms by path alike, and as
// the table says: each room's pages need that room's session, under the
// room's own cookie name or the shared one; a session of one room opens no
// other; paths no route matches pass (a dot-segment out of them is a 400);
// the waiting room is the route's room's.
func TestCloudFrontParityRoutes(t *testing.T) {
	cfg, k2 := routesConfig(t)
	now := time.Now()
	future := now.Add(time.Hour)
	cookieOf := func(room string) string { return Sign(k2, Session{Room: room, Seq: 7, Expires: future}) }
	tix, merch, vip := cookieOf("tix"), cookieOf("merch"), cookieOf("vip")
	const wait = "https://queue.example.com/wait?room="
	const site = "booking.example.com"
	tests := []struct {
		name, host, method, target, cookie string
		pass                               bool
		location                           string
		reads                              int
	}{
		{"unprotected root", site, "GET", "/", "", true, "", 0},
		{"unprotected page", site, "GET", "/about?x=1", "", true, "", 0},
		{"not at a segment boundary", site, "GET", "/ticketsale", "", true, "", 0},
		{"case differs", site, "GET", "/Tickets", "", false, wait + "tix&return=%2FTickets", 0},
		{"tickets without a session", site, "GET", "/tickets/42?b=2&a=1", "", false, wait + "tix&return=%2Ftickets%2F42%3Fa%3D1%26b%3D2", 0},
		{"tickets prefix itself", site, "GET", "/tickets", "", false, wait + "tix&return=%2Ftickets", 0},
		{"tickets with its room's cookie", site, "GET", "/tickets/42", RoomCookieName("tix") + "=" + tix, true, "", 1},
		{"tickets with the shared cookie name", site, "GET", "/tickets/42", CookieName + "=" + tix, true, "", 1},
		{"tickets with merch's session", site, "GET", "/tickets/42", RoomCookieName("merch") + "=" + merch, false, wait + "tix&return=%2Ftickets%2F42", 0},
		{"tix's value under merch's name", site, "GET", "/tickets/42", RoomCookieName("merch") + "=" + tix, false, wait + "tix&return=%2Ftickets%2F42", 0},
		{"both sessions", site, "GET", "/merch/tees", RoomCookieName("tix") + "=" + tix + "; " + RoomCookieName("merch") + "=" + merch, true, "", 1},
		{"merch without a session", site, "POST", "/merch/cart", "", false, wait + "merch&return=%2F", 0},
		{"vip on its host", site, "GET", "/merch/vip/1", RoomCookieName("merch") + "=" + merch, false, wait + "vip&return=%2Fmerch%2Fvip%2F1", 0},
		{"vip on its host with a session", site, "GET", "/merch/vip/1", RoomCookieName("vip") + "=" + vip, true, "", 1},
		{"vip's host in upper case, with a port", "BOOKING.example.com:443", "GET", "/merch/vip", "", false, wait + "vip&return=%2Fmerch%2Fvip", 0},
		{"vip's path on a third host is refused", "third.example.com", "GET", "/merch/vip", RoomCookieName("merch") + "=" + merch, false, "", 0},
		{"merch's path on a third host is merch's", "third.example.com", "GET", "/merch/tees", RoomCookieName("merch") + "=" + merch, true, "", 1},
		{"a receipt of tix on tickets", site, "GET", "/tickets", RoomCookieName("tix") + "=" + ReceiptPrefix + tix, false, LeavePath, 0},
		{"a receipt of tix on merch", site, "GET", "/merch", RoomCookieName("tix") + "=" + ReceiptPrefix + tix, false, wait + "merch&return=%2Fmerch", 0},
		{"the gate's route", site, "POST", "/.vestibule/enter", "", true, "", 0},
		{"an open path under a route", site, "GET", "/static/x.js", "", true, "", 0},
		{"traversal out of the unprotected", site, "GET", "/about/../tickets", "", false, "", 0},
		{"encoded traversal out of the unprotected", site, "GET", "/about/%2E%2E/tickets", "", false, "", 0},
		{"traversal inside tickets", site, "GET", "/tickets/../x", "", false, "", 0},
	}
	cases := make([]jsCase, len(tests))
	for i, tc := range tests {
		cases[i] = jsCase{Name: tc.name, Method: tc.method, Target: tc.target, Cookie: tc.cookie, Headers: map[string]string{"host": tc.host}}
	}
	out := runFunction(t, cfg, cfg.Keys.KVSEntries(), now, cases, 0, nil)
	if len(out.Results) != len(tests) {
		t.Fatalf("%d results for %d cases", len(out.Results), len(tests))
	}
	seen := 0
	h := mustMiddlewareAt(t, cfg, now, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen++
		w.WriteHeader(http.StatusTeapot)
	}))
	for i, tc := range tests {
		js := out.Results[i]
		goD := DecideRequest(cfg, Request{Host: tc.host, Method: tc.method, Target: tc.target, Cookie: tc.cookie}, now)
		if goD.Pass != tc.pass || !tc.pass && goD.Location != tc.location || !tc.pass && (goD.Status == http.StatusBadRequest) != (tc.location == "") {
			t.Errorf("%s: DecideRequest = pass %v %q (%s %s); want pass %v %q", tc.name, goD.Pass, goD.Location, goD.Reason, goD.Room, tc.pass, tc.location)
		}
		if js.Pass != goD.Pass || js.Location != goD.Location || js.Status != goD.Status {
			t.Errorf("%s: function = pass %v %q; DecideRequest = pass %v %q", tc.name, js.Pass, js.Location, goD.Pass, goD.Location)
		}
		if js.KVSReads != tc.reads {
			t.Errorf("%s: %d KeyValueStore reads, want %d", tc.name, js.KVSReads, tc.reads)
		}
		r := httptest.NewRequest(tc.method, tc.target, nil)
		r.Host = tc.host
		if tc.cookie != "" {
			r.Header.Set("Cookie", tc.cookie)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if pass := w.Code == http.StatusTeapot; pass != tc.pass || !pass && (w.Header().Get("Location") != tc.location || w.Code != goD.Status) {
			t.Errorf("%s: Middleware = %d %q; want pass %v %q", tc.name, w.Code, w.Header().Get("Location"), tc.pass, tc.location)
		}
		checkParity(t, cfg, tc.name, Request{Host: tc.host, Method: tc.method, Target: tc.target, Cookie: tc.cookie}, nil, goD, now)
	}
}

// The site's end of a session on a site with rooms by path: the function at
// viewer response and Middleware both replace the session of the path's room
// with its receipt, under the name the cookie came by, and leave the other
// room's session alone; on a path no route matches nothing is ended.
func TestCloudFrontParityRoutesResponse(t *testing.T) {
	cfg, k2 := routesConfig(t)
	now := time.Now()
	tixS := Session{Room: "tix", Seq: 7, Expires: now.Add(time.Hour)}
	merchS := Session{Room: "merch", Seq: 8, Expires: now.Add(time.Hour)}
	tix, merch := Sign(k2, tixS), Sign(k2, merchS)
	both := RoomCookieName("tix") + "=" + tix + "; " + RoomCookieName("merch") + "=" + merch
	tests := []struct {
		name, target, cookie string
		setName, value       string // the receipt's cookie name and value; "" for none
		s                    Session
	}{
		{"tickets ends tix", "/tickets/done", both, RoomCookieName("tix"), ReceiptPrefix + tix, tixS},
		{"merch ends merch", "/merch/done", both, RoomCookieName("merch"), ReceiptPrefix + merch, merchS},
		{"the shared name", "/tickets/done", CookieName + "=" + tix, CookieName, ReceiptPrefix + tix, tixS},
		{"no route", "/about", both, "", "", Session{}},
	}
	cases := make([]jsCase, len(tests))
	for i, tc := range tests {
		cases[i] = jsCase{Name: tc.name, Method: "GET", Target: tc.target, Cookie: tc.cookie,
			Headers: map[string]string{"host": "booking.example.com"}, Response: map[string][]string{"vestibule-session": {"end"}}}
	}
	out := runFunction(t, cfg, cfg.Keys.KVSEntries(), now, cases, 0, nil)
	if len(out.Results) != len(tests) {
		t.Fatalf("%d results for %d cases", len(out.Results), len(tests))
	}
	h := mustMiddlewareAt(t, cfg, now, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(EndHeader, "end")
		w.WriteHeader(http.StatusOK)
	}))
	for i, tc := range tests {
		js := out.Results[i]
		r := httptest.NewRequest("GET", "https://booking.example.com"+tc.target, nil)
		r.Header.Set("Cookie", tc.cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		goSet := w.Result().Header.Values("Set-Cookie")
		if tc.setName == "" {
			if len(goSet) != 0 || len(js.Cookies) != 0 {
				t.Errorf("%s: cookies set: Middleware %q, function %v", tc.name, goSet, js.Cookies)
			}
			continue
		}
		o := CookieOptions{name: tc.setName}
		want := EndCookie(tc.value[len(ReceiptPrefix):], tc.s, now, o)
		if len(goSet) != 1 || goSet[0] != want {
			t.Errorf("%s: Middleware set %q\nwant %s", tc.name, goSet, want)
		}
		jc, ok := js.Cookies[tc.setName]
		if g := tc.setName + "=" + jc.Value + "; " + jc.Attributes; !ok || len(js.Cookies) != 1 || g != want {
			t.Errorf("%s: the function set %v\nwant %s", tc.name, js.Cookies, want)
		}
		// The checks give the same receipt, of the path's room, under its name.
		req := Request{Host: "booking.example.com", Method: "GET", Target: tc.target, Cookie: tc.cookie}
		for p, a := range checkParity(t, cfg, tc.name, req, nil, DecideRequest(cfg, req, now), now) {
			if got := a.Header.Get(ReceiptHeader); got != want {
				t.Errorf("%s: %s's check gives the receipt %q\nwant %q", tc.name, p, got, want)
			}
		}
	}
}

// BenchmarkCloudFrontFunctionRoutes times the function with 16 routes (the
// last one the match) against a function that only returns the request, as
// BenchmarkCloudFrontFunction does for one room:
//
//	go test ./gate -run '^$' -bench CloudFrontFunctionRoutes -benchtime 1x
func BenchmarkCloudFrontFunctionRoutes(b *testing.B) {
	cfg, _, _, k2 := parityConfig(b)
	cfg.Room = ""
	for i := range 16 {
		cfg.Routes = append(cfg.Routes, Route{Host: "booking.example.com", Prefix: "/section-" + strconv.Itoa(i), Room: "room-" + strconv.Itoa(i)})
	}
	cookie := RoomCookieName("room-15") + "=" + Sign(k2, Session{Room: "room-15", Seq: 1764150000123456, Expires: time.Now().Add(time.Hour)})
	host := map[string]string{"host": "booking.example.com"}
	cases := []jsCase{
		{Name: "valid session", Method: "GET", Target: "/section-15/book?id=42", Cookie: "theme=dark; " + cookie, Headers: host},
		{Name: "no cookie", Method: "GET", Target: "/section-15/book?id=42", Cookie: "theme=dark", Headers: host},
		{Name: "no route", Method: "GET", Target: "/about", Cookie: "theme=dark", Headers: host},
	}
	out := runFunction(b, cfg, cfg.Keys.KVSEntries(), time.Time{}, nil, 10000, cases)
	if len(out.Bench) != len(cases) {
		b.Fatalf("the harness timed %d cases of %d", len(out.Bench), len(cases))
	}
	for _, r := range out.Bench {
		b.Run(strings.ReplaceAll(r.Name, " ", "_"), func(b *testing.B) {
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.GateNs, "gate-ns")
			b.ReportMetric(r.PassthroughNs, "passthrough-ns")
			b.ReportMetric(r.GateNs/r.PassthroughNs, "ratio")
		})
	}
}
