package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// The parity test runs the real CloudFront Function in node (with only the
// 'cloudfront' module's KeyValueStore stood in for) over a table of requests,
// and checks that it decides exactly as Decide does, and that both decide what
// the table says, so that they cannot be wrong together.

// jsCase is one request as the harness reads it.
type jsCase struct {
	Name   string `json:"name"`
	Method string `json:"method"`
	Target string `json:"target"`
	Cookie string `json:"cookie"`
	// Headers are more request headers (names in lower case).
	Headers map[string]string `json:"headers,omitempty"`
	// Response, when set, makes the case a viewer-response event: the site's
	// response carries these headers (names in lower case).
	Response map[string][]string `json:"response,omitempty"`
}

// jsResult is what the function did with one request.
type jsResult struct {
	Name         string `json:"name"`
	Pass         bool   `json:"pass"`
	Status       int    `json:"status"`
	Location     string `json:"location"`
	CacheControl string `json:"cacheControl"`
	KVSReads     int    `json:"kvsReads"`
	HMACs        int    `json:"hmacs"` // HMACs set up (crypto.createHmac)
	// For a viewer-response case: the answer's headers and cookies.
	Headers map[string][]string `json:"headers"`
	Cookies map[string]struct {
		Value      string `json:"value"`
		Attributes string `json:"attributes"`
	} `json:"cookies"`
}

type jsBench struct {
	Name          string  `json:"name"`
	GateNs        float64 `json:"gateNs"`
	PassthroughNs float64 `json:"passthroughNs"`
}

type jsOutput struct {
	Node    string     `json:"node"`
	Results []jsResult `json:"results"`
	Bench   []jsBench  `json:"bench"`
}

// runFunction runs the harness over cases (and the timing runs when
// iterations > 0) against the deployable function for cfg, with the KeyValueStore
// holding kvs and the function's clock (Date.now) fixed at now, the instant
// the Go side decides at: a verdict never depends on the time node takes to
// start (the zero time leaves the clock running).
func runFunction(t testing.TB, cfg Config, kvs map[string]string, now time.Time, cases []jsCase, iterations int, bench []jsCase) jsOutput {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.Missing(t, "node", "install Node.js: the CloudFront Function cannot be run")
	}
	src, err := CloudFrontFunction(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stub, err := os.ReadFile(filepath.Join("testdata", "cloudfront-stub.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if cases == nil {
		cases = []jsCase{}
	}
	var nowMS int64
	if !now.IsZero() {
		nowMS = now.UnixMilli()
	}
	input, err := json.Marshal(map[string]any{"kvs": kvs, "cases": cases, "now": nowMS,
		"bench": map[string]any{"iterations": iterations, "cases": bench}})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		// The deployable text, unchanged, plus the one line node needs to reach
		// the handler (CloudFront finds it by name; node needs an export).
		"gate.mjs":                             src + "\nexport { handler };\n",
		"passthrough.mjs":                      "async function handler(event) {\n    return event.request;\n}\nexport { handler };\n",
		"node_modules/cloudfront/package.json": `{"name": "cloudfront", "type": "module", "exports": "./index.mjs"}`,
		"node_modules/cloudfront/index.mjs":    string(stub),
		"input.json":                           string(input),
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := writeFile(p, content); err != nil {
			t.Fatal(err)
		}
	}
	harness, err := filepath.Abs(filepath.Join("testdata", "harness.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, harness, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res jsOutput
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("harness output: %v\n%s", err, out)
	}
	return res
}

func TestCloudFrontParity(t *testing.T) {
	cfg, k0, k1, k2 := parityConfig(t)
	now := time.Now()
	future := now.Add(time.Hour)
	sess := Session{Room: "demo", Seq: 1764150000123456, Expires: future}
	valid := Sign(k2, sess)
	rotated := Sign(k1, sess)
	// A cookie whose MAC is one character off, and others edited after signing.
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	parts := strings.Split(valid, ".")
	edit := func(field int, v string) string {
		p := append([]string(nil), parts...)
		p[field] = v
		return strings.Join(p, ".")
	}
	// The same MAC bytes spelled with other low bits in its last character:
	// a lenient base64 decoder reads the same 32 bytes.
	lastBits := func(s string) string {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		i := strings.IndexByte(alphabet, s[len(s)-1])
		return s[:len(s)-1] + string(alphabet[i^1])
	}
	const to = "https://queue.example.com/wait?room=demo&return="
	const bad = "" // a 400: the path is not canonical
	expired := Sign(k2, Session{Room: "demo", Seq: 7, Expires: now.Add(-time.Hour)})
	foreign := Sign(k2, Session{Room: "other", Seq: 1, Expires: future})
	forged := flip(valid, len(valid)-10)

	tests := []struct {
		name, method, target, cookie string
		pass                         bool
		location                     string // when !pass
		reads                        int    // KeyValueStore reads the function makes
	}{
		// Sessions.
		{"valid", "GET", "/book", "__Host-vestibule=" + valid, true, "", 1},
		{"valid among other cookies", "GET", "/book", "a=1; __Host-vestibule=" + valid + "; b=2", true, "", 1},
		{"valid, POST", "POST", "/book/pay", "__Host-vestibule=" + valid, true, "", 1},
		{"valid, spaces around", "GET", "/book", " __Host-vestibule = " + valid + " ", true, "", 1},
		{"rotated: signed with the previous key", "GET", "/book", "__Host-vestibule=" + rotated, true, "", 1},
		{"expired an hour ago", "GET", "/book", "__Host-vestibule=" + Sign(k2, Session{Room: "demo", Seq: 7, Expires: now.Add(-time.Hour)}), false, to + "%2Fbook", 0},
		{"expires this second", "GET", "/book", "__Host-vestibule=" + Sign(k2, Session{Room: "demo", Seq: 7, Expires: now}), false, to + "%2Fbook", 0},
		{"tampered MAC", "GET", "/book", "__Host-vestibule=" + flip(valid, len(valid)-10), false, to + "%2Fbook", 1},
		{"tampered MAC, last character's spare bits", "GET", "/book", "__Host-vestibule=" + lastBits(valid), false, to + "%2Fbook", 1},
		{"tampered seq", "GET", "/book", "__Host-vestibule=" + edit(3, "1764150000123457"), false, to + "%2Fbook", 1},
		{"tampered expiry", "GET", "/book", "__Host-vestibule=" + edit(4, strconv.FormatInt(future.Unix()+86400, 10)), false, to + "%2Fbook", 1},
		{"tampered room", "GET", "/book", "__Host-vestibule=" + edit(2, "demo2"), false, to + "%2Fbook", 0},
		{"wrong room", "GET", "/book", "__Host-vestibule=" + Sign(k2, Session{Room: "other", Seq: 1, Expires: future}), false, to + "%2Fbook", 0},
		{"unknown kid (rotated out)", "GET", "/book", "__Host-vestibule=" + Sign(k0, sess), false, to + "%2Fbook", 1},
		{"current kid, wrong secret", "GET", "/book", "__Host-vestibule=" + Sign(Key{ID: k2.ID, Secret: k0.Secret}, sess), false, to + "%2Fbook", 1},
		{"kid not in the store", "GET", "/book", "__Host-vestibule=" + edit(1, "current"), false, to + "%2Fbook", 1},
		{"missing cookie", "GET", "/book", "", false, to + "%2Fbook", 0},
		{"other cookies only", "GET", "/book", "session=abc; theme=dark", false, to + "%2Fbook", 0},
		{"malformed", "GET", "/book", "__Host-vestibule=garbage", false, to + "%2Fbook", 0},
		{"empty value", "GET", "/book", "__Host-vestibule=", false, to + "%2Fbook", 0},
		{"version 2", "GET", "/book", "__Host-vestibule=v2" + valid[2:], false, to + "%2Fbook", 0},
		{"extra field", "GET", "/book", "__Host-vestibule=" + valid + ".x", false, to + "%2Fbook", 0},
		{"quoted", "GET", "/book", `__Host-vestibule="` + valid + `"`, false, to + "%2Fbook", 0},
		{"leading zero in seq", "GET", "/book", "__Host-vestibule=" + edit(3, "01"), false, to + "%2Fbook", 0},
		{"seq of 19 digits", "GET", "/book", "__Host-vestibule=" + edit(3, "1234567890123456789"), false, to + "%2Fbook", 0},
		{"oversize", "GET", "/book", "__Host-vestibule=" + valid + strings.Repeat("A", 200), false, to + "%2Fbook", 0},
		{"name in another case", "GET", "/book", "__host-vestibule=" + valid, false, to + "%2Fbook", 0},
		{"the old name without the prefix", "GET", "/book", "vestibule=" + valid, false, to + "%2Fbook", 0},
		{"name with a suffix", "GET", "/book", "__Host-vestibule_demo=" + valid, false, to + "%2Fbook", 0},
		{"second copy valid", "GET", "/book", "__Host-vestibule=garbage; __Host-vestibule=" + valid, true, "", 1},
		{"fourth copy valid after three malformed", "GET", "/book", "__Host-vestibule=x; __Host-vestibule=x; __Host-vestibule=x; __Host-vestibule=" + valid, true, "", 1},
		{"valid after expired and foreign copies", "GET", "/book", "__Host-vestibule=" + expired + "; __Host-vestibule=" + foreign + "; __Host-vestibule=" + expired + "; __Host-vestibule=" + valid, true, "", 1},
		{"valid after three forged copies: only three MACs are checked", "GET", "/book", "__Host-vestibule=" + forged + "; __Host-vestibule=" + forged + "; __Host-vestibule=" + forged + "; __Host-vestibule=" + valid, false, to + "%2Fbook", 3},

		// A session the origin ended (the response side turned the cookie into a receipt).
		{"receipt: to leave", "GET", "/book", "__Host-vestibule=end." + valid, false, "/.vestibule/leave", 0},
		{"receipt, POST: to leave", "POST", "/book/pay", "__Host-vestibule=end." + valid, false, "/.vestibule/leave", 0},
		{"receipt of another room", "GET", "/book", "__Host-vestibule=end." + foreign, false, to + "%2Fbook", 0},
		{"receipt of an expired session", "GET", "/book", "__Host-vestibule=end." + expired, false, to + "%2Fbook", 0},
		{"receipt, malformed", "GET", "/book", "__Host-vestibule=end.x", false, to + "%2Fbook", 0},
		{"receipt and a valid session", "GET", "/book", "__Host-vestibule=end." + valid + "; __Host-vestibule=" + valid, true, "", 1},
		{"receipt on an open path", "GET", "/robots.txt", "__Host-vestibule=end." + valid, true, "", 0},
		{"receipt on leave", "GET", "/.vestibule/leave", "__Host-vestibule=end." + valid, true, "", 0},

		// Open paths and Vestibule's routes.
		{"open, exact", "GET", "/robots.txt", "", true, "", 0},
		{"open, exact, not a prefix", "GET", "/robots.txt/x", "", false, to + "%2Frobots.txt%2Fx", 0},
		{"open, prefix", "GET", "/static/app.js", "", true, "", 0},
		{"open, prefix needs its slash", "GET", "/static", "", false, to + "%2Fstatic", 0},
		{"open, with a query", "GET", "/healthz?deep=1", "", true, "", 0},
		{"open, any method", "POST", "/healthz", "", true, "", 0},
		{"open, case-sensitive", "GET", "/Static/app.js", "", false, to + "%2FStatic%2Fapp.js", 0},
		{"open, dot-dot", "GET", "/static/../book", "", false, bad, 0},
		{"open, encoded dot-dot", "GET", "/static/%2e%2e/book", "", false, bad, 0},
		{"open, encoded dot-dot upper case", "GET", "/static/%2E%2E/book", "", false, bad, 0},
		{"open, backslash", "GET", `/static/..\book`, "", false, bad, 0},
		{"open, dot-dot with a session", "GET", "/static/../book", "__Host-vestibule=" + valid, false, bad, 0},
		{"vestibule enter, POST, no cookie", "POST", "/.vestibule/enter", "", true, "", 0},
		{"vestibule leave", "POST", "/.vestibule/leave", "__Host-vestibule=garbage", true, "", 0},
		{"vestibule leave page", "GET", "/.vestibule/leave", "", true, "", 0},
		{"vestibule bare", "GET", "/.vestibule", "", false, to + "%2F.vestibule", 0},
		{"vestibule bare with a query", "GET", "/.vestibule?x=1", "", false, to + "%2F.vestibule%3Fx%3D1", 0},
		{"vestibule slash", "GET", "/.vestibule/", "", false, to + "%2F.vestibule%2F", 0},
		{"vestibule other route", "GET", "/.vestibule/admin", "", false, to + "%2F.vestibule%2Fadmin", 0},
		{"vestibule enter lookalike", "POST", "/.vestibule/enter/x", "", false, to + "%2F", 0},
		{"vestibule bare with a session", "GET", "/.vestibule", "__Host-vestibule=" + valid, true, "", 1},
		{"vestibule lookalike", "GET", "/.vestibulex", "", false, to + "%2F.vestibulex", 0},
		{"vestibule dot-dot", "GET", "/.vestibule/../book", "", false, bad, 0},
		{"vestibule encoded dot-dot", "GET", "/.vestibule/%2E%2e/book", "", false, bad, 0},

		// Where the visitor comes back to.
		{"root", "GET", "/", "", false, to + "%2F", 0},
		{"HEAD keeps the path", "HEAD", "/book", "", false, to + "%2Fbook", 0},
		{"POST returns to /", "POST", "/book/pay", "", false, to + "%2F", 0},
		{"query, sorted", "GET", "/event?id=42&b=2&a=1", "", false, to + "%2Fevent%3Fa%3D1%26b%3D2%26id%3D42", 0},
		{"query, repeated name", "GET", "/e?a=2&a=1", "", false, to + "%2Fe%3Fa%3D1%26a%3D2", 0},
		{"query, name without value", "GET", "/e?flag", "", false, to + "%2Fe%3Fflag%3D", 0},
		{"query, empty parts", "GET", "/e?&&", "", false, to + "%2Fe", 0},
		{"query, encoded value kept", "GET", "/s?q=a%20b", "", false, to + "%2Fs%3Fq%3Da%2520b", 0},
		{"hostile: //host", "GET", "//evil.example/x", "", false, bad, 0},
		{"hostile: ///host", "GET", "///evil.example", "", false, bad, 0},
		{`hostile: /\host`, "GET", `/\evil.example`, "", false, bad, 0},
		{"hostile: scheme", "GET", "https://evil.example/", "", false, bad, 0},
		{"hostile: javascript:", "GET", "javascript:alert(1)", "", false, bad, 0},
		{"hostile: encoded slashes", "GET", "/%2F%2Fevil.example", "", false, bad, 0},
		{"hostile: next= in the query stays a path", "GET", "/login?next=https://evil.example", "", false, to + "%2Flogin%3Fnext%3Dhttps%3A%2F%2Fevil.example", 0},
		{"hostile: CRLF", "GET", "/x\r\nSet-Cookie: a=b", "", false, bad, 0},
		{"hostile: space", "GET", "/a b", "", false, bad, 0},
		{"an escaped space is canonical", "GET", "/a%20b", "", false, to + "%2Fa%2520b", 0},
		{"hostile: quote and angle", "GET", `/"><script>`, "", false, bad, 0},
		{"hostile: non-ASCII", "GET", "/café", "", false, bad, 0},
		{"non-ASCII escaped is canonical", "GET", "/caf%C3%A9", "", false, to + "%2Fcaf%25C3%25A9", 0},
		{"hostile: NUL", "GET", "/x\x00y", "", false, bad, 0},
		{"hostile: too long", "GET", "/" + strings.Repeat("a", MaxReturnLen), "", false, to + "%2F", 0},
		{"longest kept", "GET", "/" + strings.Repeat("a", MaxReturnLen-1), "", false, to + "%2F" + strings.Repeat("a", MaxReturnLen-1), 0},
	}

	cases := make([]jsCase, len(tests))
	for i, tc := range tests {
		cases[i] = jsCase{Name: tc.name, Method: tc.method, Target: tc.target, Cookie: tc.cookie}
	}
	out := runFunction(t, cfg, cfg.Keys.KVSEntries(), now, cases, 0, nil)
	if len(out.Results) != len(tests) {
		t.Fatalf("the function answered %d cases of %d", len(out.Results), len(tests))
	}
	t.Logf("node %s, %d cases", out.Node, len(tests))
	for i, tc := range tests {
		js := out.Results[i]
		goD := Decide(cfg, tc.method, tc.target, tc.cookie, false, now)
		wantStatus := 0
		if !tc.pass {
			wantStatus = 302
			if tc.location == bad {
				wantStatus = 400
			}
		}
		// Go against the table.
		if goD.Pass != tc.pass || goD.Status != wantStatus || goD.Location != tc.location {
			t.Errorf("%s: Decide = pass %v, %d %q (%s, %v); want pass %v, %q", tc.name, goD.Pass, goD.Status, goD.Location, goD.Reason, goD.Err, tc.pass, tc.location)
		}
		// JavaScript against Go, and so against the table.
		if js.Pass != goD.Pass || js.Status != goD.Status || js.Location != goD.Location {
			t.Errorf("%s: function = pass %v, %d %q; Decide = pass %v, %d %q", tc.name, js.Pass, js.Status, js.Location, goD.Pass, goD.Status, goD.Location)
		}
		if !js.Pass && js.CacheControl != "no-store" {
			t.Errorf("%s: redirect with Cache-Control %q", tc.name, js.CacheControl)
		}
		if js.KVSReads != tc.reads {
			t.Errorf("%s: the function read the KeyValueStore %d times, want %d", tc.name, js.KVSReads, tc.reads)
		}
		// The forward-auth check of every proxy tells the same decision.
		checkParity(t, cfg, tc.name, Request{Method: tc.method, Target: tc.target, Cookie: tc.cookie}, nil, goD, now)
	}
}

// Renewal: a session past its time to renew sends a GET navigation through
// /.vestibule/renew, with the path to come back to, in the function and in
// Decide (and Middleware) alike; any other request passes while the cookie
// is valid, and a session without a time to renew never renews.
func TestCloudFrontParityRenew(t *testing.T) {
	cfg, _, k1, k2 := parityConfig(t)
	now := time.Now()
	start := now.Add(-10 * time.Minute)
	due := Sign(k2, Session{Room: "demo", Seq: 42, Expires: now.Add(5 * time.Minute), RenewAt: now.Add(-time.Minute), Start: start})
	dueNow := Sign(k2, Session{Room: "demo", Seq: 42, Expires: now.Add(5 * time.Minute), RenewAt: now, Start: start})
	notYet := Sign(k2, Session{Room: "demo", Seq: 42, Expires: now.Add(5 * time.Minute), RenewAt: now.Add(2 * time.Minute), Start: start})
	rotated := Sign(k1, Session{Room: "demo", Seq: 42, Expires: now.Add(5 * time.Minute), RenewAt: now.Add(-time.Minute), Start: start})
	fixed := Sign(k2, Session{Room: "demo", Seq: 42, Expires: now.Add(5 * time.Minute)})
	expiredDue := Sign(k2, Session{Room: "demo", Seq: 42, Expires: now.Add(-time.Second), RenewAt: now.Add(-time.Minute), Start: start})
	parts := strings.Split(due, ".")
	parts[5] = strconv.FormatInt(now.Add(time.Hour).Unix(), 10) // renew later, MAC unchanged
	tampered := strings.Join(parts, ".")
	const to = "https://queue.example.com/wait?room=demo&return="
	nav := map[string]string{"sec-fetch-mode": "navigate", "accept": "text/html,*/*"}
	html := map[string]string{"accept": "text/html,application/xhtml+xml"}
	fetch := map[string]string{"sec-fetch-mode": "cors", "accept": "text/html"}
	tests := []struct {
		name, method, target, cookie string
		headers                      map[string]string
		pass                         bool
		location                     string
		reads                        int
	}{
		{"due, GET navigation", "GET", "/book?b=2&a=1", due, nav, false, "/.vestibule/renew?return=%2Fbook%3Fa%3D1%26b%3D2", 1},
		{"due this second", "GET", "/book", dueNow, nav, false, "/.vestibule/renew?return=%2Fbook", 1},
		{"due, no Sec-Fetch-Mode, Accept text/html", "GET", "/book", due, html, false, "/.vestibule/renew?return=%2Fbook", 1},
		{"due, rotated key", "GET", "/book", rotated, nav, false, "/.vestibule/renew?return=%2Fbook", 1},
		{"due, hostile path is refused", "GET", "//evil.example/x", due, nav, false, "", 0},
		{"due, over-long path returns to /", "GET", "/" + strings.Repeat("a", MaxReturnLen), due, nav, false, "/.vestibule/renew?return=%2F", 1},
		{"due, fetch", "GET", "/api/cart", due, fetch, true, "", 1},
		{"due, no headers", "GET", "/book", due, nil, true, "", 1},
		{"due, Accept JSON", "GET", "/book", due, map[string]string{"accept": "application/json"}, true, "", 1},
		{"due, POST navigation", "POST", "/book/pay", due, nav, true, "", 1},
		{"due, HEAD", "HEAD", "/book", due, nav, true, "", 1},
		{"due, open path", "GET", "/static/app.js", due, nav, true, "", 0},
		{"due, the renew route itself", "GET", "/.vestibule/renew?return=%2Fbook", due, nav, true, "", 0},
		{"not yet due", "GET", "/book", notYet, nav, true, "", 1},
		{"no time to renew", "GET", "/book", fixed, nav, true, "", 1},
		{"due but expired", "GET", "/book", expiredDue, nav, false, to + "%2Fbook", 0},
		{"renew time tampered", "GET", "/book", tampered, nav, false, to + "%2Fbook", 1},
		{"receipt of a renewing session", "GET", "/book", ReceiptPrefix + due, nav, false, "/.vestibule/leave", 0},
	}
	cases := make([]jsCase, len(tests))
	for i, tc := range tests {
		cases[i] = jsCase{Name: tc.name, Method: tc.method, Target: tc.target, Cookie: CookieName + "=" + tc.cookie, Headers: tc.headers}
	}
	out := runFunction(t, cfg, cfg.Keys.KVSEntries(), now, cases, 0, nil)
	if len(out.Results) != len(tests) {
		t.Fatalf("the function answered %d cases of %d", len(out.Results), len(tests))
	}
	h := mustMiddleware(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page")) }))
	for i, tc := range tests {
		js := out.Results[i]
		goD := Decide(cfg, tc.method, tc.target, CookieName+"="+tc.cookie, Navigation(tc.headers["sec-fetch-mode"], tc.headers["accept"]), now)
		wantStatus := 0
		if !tc.pass {
			wantStatus = 302
			if tc.location == "" {
				wantStatus = 400
			}
		}
		if goD.Pass != tc.pass || goD.Status != wantStatus || goD.Location != tc.location {
			t.Errorf("%s: Decide = pass %v, %d %q (%s, %v); want pass %v, %q", tc.name, goD.Pass, goD.Status, goD.Location, goD.Reason, goD.Err, tc.pass, tc.location)
		}
		if js.Pass != goD.Pass || js.Status != goD.Status || js.Location != goD.Location {
			t.Errorf("%s: function = pass %v, %d %q; Decide = pass %v, %d %q", tc.name, js.Pass, js.Status, js.Location, goD.Pass, goD.Status, goD.Location)
		}
		if !js.Pass && js.CacheControl != "no-store" {
			t.Errorf("%s: redirect with Cache-Control %q", tc.name, js.CacheControl)
		}
		if js.KVSReads != tc.reads {
			t.Errorf("%s: the function read the KeyValueStore %d times, want %d", tc.name, js.KVSReads, tc.reads)
		}
		// Middleware reads the same headers from the request.
		r := httptest.NewRequest(tc.method, "https://booking.example.com/", nil)
		r.RequestURI = tc.target
		r.Header.Set("Cookie", CookieName+"="+tc.cookie)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if tc.pass && w.Code != 200 || !tc.pass && (w.Code != wantStatus || w.Header().Get("Location") != tc.location) {
			t.Errorf("%s: Middleware answered %d %q", tc.name, w.Code, w.Header().Get("Location"))
		}
		// The forward-auth checks send a due navigation through renew alike.
		checkParity(t, cfg, tc.name, Request{Method: tc.method, Target: tc.target, Cookie: CookieName + "=" + tc.cookie,
			Navigate: Navigation(tc.headers["sec-fetch-mode"], tc.headers["accept"])}, tc.headers, goD, now)
	}
}

// The response side: the site's "Vestibule-Session: end" turns a valid
// session cookie into its receipt, in the function (viewer response) and in
// Middleware alike, and the header never reaches the browser.
func TestCloudFrontParityResponse(t *testing.T) {
	cfg, _, k1, k2 := parityConfig(t)
	now := time.Now()
	sess := Session{Room: "demo", Seq: 1764150000123456, Expires: now.Add(time.Hour)}
	valid := Sign(k2, sess)
	forged := valid[:len(valid)-3] + "AAA"
	if forged == valid {
		forged = valid[:len(valid)-3] + "BBB"
	}
	const cn = CookieName + "="
	tests := []struct {
		name, target, cookie string
		end                  []string // the site's EndHeader values
		receipt              string   // the session cookie whose receipt is set, "" for none
		reads                int
	}{
		{"end, valid session", "/book/done", cn + valid, []string{"end"}, valid, 1},
		{"end, in another case and spaced", "/book/done", cn + valid, []string{" End "}, valid, 1},
		{"end among other values", "/book/done", cn + valid, []string{"keep", "end"}, valid, 1},
		{"end, session signed with the previous key", "/book/done", cn + Sign(k1, sess), []string{"end"}, Sign(k1, sess), 1},
		{"end, valid after a forged copy", "/book/done", cn + forged + "; " + cn + valid, []string{"end"}, valid, 2},
		{"end on an open path, with a session", "/static/done.html", cn + valid, []string{"end"}, valid, 1},
		{"end, no cookie (an open path)", "/static/done.html", "", []string{"end"}, "", 0},
		{"end, forged cookie (an open path)", "/static/done.html", cn + forged, []string{"end"}, "", 1},
		{"end, a receipt already", "/.vestibule/leave", cn + ReceiptPrefix + valid, []string{"end"}, "", 0},
		{"another value", "/book/done", cn + valid, []string{"keep"}, "", 0},
		{"empty value", "/book/done", cn + valid, []string{""}, "", 0},
		{"no header", "/book", cn + valid, nil, "", 0},
	}
	cases := make([]jsCase, len(tests))
	for i, tc := range tests {
		resp := map[string][]string{"x-site": {"kept"}}
		if tc.end != nil {
			resp["vestibule-session"] = tc.end
		}
		cases[i] = jsCase{Name: tc.name, Method: "GET", Target: tc.target, Cookie: tc.cookie, Response: resp}
	}
	out := runFunction(t, cfg, cfg.Keys.KVSEntries(), now, cases, 0, nil)
	if len(out.Results) != len(tests) {
		t.Fatalf("the function answered %d cases of %d", len(out.Results), len(tests))
	}
	// Both sides decide at now, so the receipt's Max-Age is exact.
	h := mustMiddlewareAt(t, cfg, now, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Site", "kept")
		for _, v := range r.Header.Values("X-Test-End") {
			w.Header().Add(EndHeader, v)
		}
		w.Write([]byte("done"))
	}))
	for i, tc := range tests {
		js := out.Results[i]
		r := httptest.NewRequest("GET", "https://booking.example.com"+tc.target, nil)
		r.Header.Set("Cookie", tc.cookie)
		for _, v := range tc.end {
			r.Header.Add("X-Test-End", v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		goSet := w.Result().Header.Values("Set-Cookie")
		if w.Code != 200 || w.Body.String() != "done" || w.Header().Get("X-Site") != "kept" {
			t.Errorf("%s: Middleware answered %d %q", tc.name, w.Code, w.Body.String())
		}
		if _, ok := w.Header()[EndHeader]; ok {
			t.Errorf("%s: Middleware let %s through", tc.name, EndHeader)
		}
		if _, ok := js.Headers["vestibule-session"]; ok || js.Status != 200 || len(js.Headers["x-site"]) != 1 {
			t.Errorf("%s: the function answered %d %v (%s)", tc.name, js.Status, js.Headers, js.Location)
		}
		jc, jsSet := js.Cookies[CookieName]
		if tc.receipt == "" {
			if len(goSet) != 0 || len(js.Cookies) != 0 {
				t.Errorf("%s: cookies set: Middleware %q, function %v", tc.name, goSet, js.Cookies)
			}
		} else {
			want := EndCookie(tc.receipt, sess, now, CookieOptions{})
			if len(goSet) != 1 || goSet[0] != want {
				t.Errorf("%s: Middleware set %q\nwant %s", tc.name, goSet, want)
			}
			if g := CookieName + "=" + jc.Value + "; " + jc.Attributes; !jsSet || len(js.Cookies) != 1 || g != want {
				t.Errorf("%s: the function set %v\nwant %s", tc.name, js.Cookies, want)
			}
		}
		if js.KVSReads != tc.reads {
			t.Errorf("%s: the function read the KeyValueStore %d times, want %d", tc.name, js.KVSReads, tc.reads)
		}
		// A proxy's check cannot see the site's answer: on every pass with a
		// valid session it gives the receipt the gate would set, and the
		// proxy sets it when the site ends the session (nginx's snippet).
		wantReceipt := ""
		if tc.receipt != "" {
			wantReceipt = EndCookie(tc.receipt, sess, now, CookieOptions{})
		} else if !Ends(tc.end...) {
			wantReceipt = EndCookie(valid, sess, now, CookieOptions{})
		}
		d := Decide(cfg, "GET", tc.target, tc.cookie, false, now)
		for p, a := range checkParity(t, cfg, tc.name, Request{Method: "GET", Target: tc.target, Cookie: tc.cookie}, nil, d, now) {
			if got := a.Header.Get(ReceiptHeader); got != wantReceipt {
				t.Errorf("%s: %s's check gives the receipt %q\nwant %q", tc.name, p, got, wantReceipt)
			}
		}
	}
}

// The function must stay far below CloudFront Functions' 10 KB.
func TestCloudFrontFunctionSize(t *testing.T) {
	cfg, _, _, _ := parityConfig(t)
	src, err := CloudFrontFunction(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The largest config allowed: the longest room, and every open path at its
	// longest, which no site needs, is the upper bound.
	big := cfg
	big.Room = strings.Repeat("r", 64)
	big.OpenPaths = nil
	for i := range 8 {
		big.OpenPaths = append(big.OpenPaths, "/"+strings.Repeat(strconv.Itoa(i), 60)+"/*")
	}
	bigSrc, err := CloudFrontFunction(big)
	if err != nil {
		t.Fatal(err)
	}
	// Rooms by path: 16 routes of a host, a prefix and a room of 24
	// characters each, a large site's rule set.
	byPath := cfg
	byPath.Room = ""
	for i := range 16 {
		n := strconv.Itoa(i)
		byPath.Routes = append(byPath.Routes, Route{Host: "booking-example-site.com", Prefix: "/" + strings.Repeat(n, 23/len(n)), Room: "room-" + strings.Repeat(n, 19/len(n))})
	}
	routesSrc, err := CloudFrontFunction(byPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deployable function: %d bytes (source file %d bytes; with 8 open paths of 63 characters: %d; with 16 routes: %d) of %d",
		len(src), len(functionSource), len(bigSrc), len(routesSrc), MaxFunctionSize)
	if len(src) > MaxFunctionSize*2/3 || len(bigSrc) > MaxFunctionSize*3/4 || len(routesSrc) > MaxFunctionSize*4/5 {
		t.Errorf("the function is %d bytes (%d with a big config, %d with 16 routes): keep it under two thirds (three quarters, four fifths) of %d", len(src), len(bigSrc), len(routesSrc), MaxFunctionSize)
	}
	// A rule set that would not fit is a clear error, not a function
	// CloudFront refuses at deploy.
	huge := byPath
	huge.Routes = nil
	for i := range MaxRoutes {
		huge.Routes = append(huge.Routes, Route{Prefix: "/" + strconv.Itoa(i) + strings.Repeat("p", 200), Room: strings.Repeat("r", 60) + strconv.Itoa(i)})
	}
	if _, err := CloudFrontFunction(huge); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "over CloudFront's limit") {
		t.Errorf("a function over the limit: %v", err)
	}
}

// costCases are the three paths through the function whose cost docs/GATE.md
// states: a valid session, a request without the cookie, an open path.
func costCases(k2 Key) []jsCase {
	cookie := "__Host-vestibule=" + Sign(k2, Session{Room: "demo", Seq: 1764150000123456, Expires: time.Now().Add(time.Hour)})
	return []jsCase{
		{Name: "valid session", Method: "GET", Target: "/book?id=42", Cookie: "theme=dark; " + cookie},
		{Name: "no cookie", Method: "GET", Target: "/book?id=42", Cookie: "theme=dark"},
		{Name: "open path", Method: "GET", Target: "/static/app.js", Cookie: ""},
	}
}

// What one invocation costs, counted rather than timed (docs/GATE.md, "Cost
// per request"): a valid session is one KeyValueStore read and one HMAC; a
// redirect and an open path are neither. BenchmarkCloudFrontFunction times them.
func TestCloudFrontFunctionCost(t *testing.T) {
	cfg, _, _, k2 := parityConfig(t)
	cases := costCases(k2)
	out := runFunction(t, cfg, cfg.Keys.KVSEntries(), time.Time{}, cases, 0, nil)
	want := []struct {
		pass         bool
		reads, hmacs int
	}{{true, 1, 1}, {false, 0, 0}, {true, 0, 0}}
	if len(out.Results) != len(want) {
		t.Fatalf("the function answered %d cases of %d", len(out.Results), len(want))
	}
	for i, w := range want {
		r := out.Results[i]
		if r.Pass != w.pass || r.KVSReads != w.reads || r.HMACs != w.hmacs {
			t.Errorf("%s: pass %v, %d KeyValueStore reads, %d HMACs; want pass %v, %d and %d",
				cases[i].Name, r.Pass, r.KVSReads, r.HMACs, w.pass, w.reads, w.hmacs)
		}
	}
}

// How long one invocation takes in node, relative to a function that only
// returns the request, run the same way (the harness's best of 5 runs of
// 10,000; one run of the benchmark is enough). CloudFront's runtime is not
// node, and this machine is shared: a figure to compare the paths, reported
// as gate-ns and passthrough-ns per case (docs/GATE.md).
//
//	go test ./gate -run '^$' -bench CloudFrontFunction -benchtime 1x
func BenchmarkCloudFrontFunction(b *testing.B) {
	cfg, _, _, k2 := parityConfig(b)
	cases := costCases(k2)
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
	b.Logf("node %s", out.Node)
}
