package gateproxy_test

import (
	"bufio"
	"crypto/sha256"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/gateproxy"
)

func key(t *testing.T, label string) gate.Key {
	t.Helper()
	sum := sha256.Sum256([]byte("gateproxy test " + label))
	k, err := gate.NewKey(sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// recorder is a server that notes each request it gets and answers 200
// ("upstream" or "api"), with the end header when the path says so.
type recorder struct {
	mu   sync.Mutex
	seen []*http.Request
	srv  *httptest.Server
}

func newRecorder(t *testing.T, name string) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r)
		rec.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/done") {
			w.Header().Set(gate.EndHeader, gate.EndValue)
		}
		_, _ = io.WriteString(w, name)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) last() *http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seen) == 0 {
		return nil
	}
	return rec.seen[len(rec.seen)-1]
}

// raw sends a request line as written, and returns the answer.
func raw(t *testing.T, addr, target string, header string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n"+header+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

// The proxy gates as gate.Middleware does, sends the site the path exactly
// as the gate checked it (after the upstream's base path), sends the gate's
// routes to the API with the site's host, turns the site's end header into
// the receipt, and takes new keys while it serves.
func TestGatingProxy(t *testing.T) {
	site, api := newRecorder(t, "upstream"), newRecorder(t, "api")
	k1, k2 := key(t, "1"), key(t, "2")
	up, _ := url.Parse(site.srv.URL + "/base/")
	apiURL, _ := url.Parse(api.srv.URL)
	p, err := gateproxy.New(gateproxy.Options{
		Gate: gate.Config{Room: "demo", WaitingRoomURL: "https://queue.example/", OpenPaths: []string{"/robots.txt"},
			Keys: gate.KeyRing{Current: k1}},
		Upstream: up, API: apiURL, ErrorLog: log.New(io.Discard, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	now := time.Now()
	s := gate.Session{Room: "demo", Seq: 7, Expires: now.Add(time.Hour)}
	cookie := "Cookie: " + gate.RoomCookieName("demo") + "=" + gate.Sign(k1, s) + "\r\n"

	// Without a session: the waiting room; nothing reaches the site.
	if r := raw(t, addr, "/tickets?b=2&a=1", ""); r.StatusCode != 302 || r.Header.Get("Location") != "https://queue.example/?room=demo&return=%2Ftickets%3Fa%3D1%26b%3D2" || site.last() != nil {
		t.Fatalf("no session: %d %v, site saw %v", r.StatusCode, r.Header, site.last())
	}
	// With it, the path as sent, escapes and all.
	for _, target := range []string{"/tickets?b=2&a=1", "/caf%c3%a9/a(b)!", "/a%20b/x:y@z", "/"} {
		r := raw(t, addr, target, cookie)
		got := site.last()
		if r.StatusCode != 200 || got == nil || got.RequestURI != "/base"+target {
			t.Errorf("%s: %d, the site got %v", target, r.StatusCode, got)
			continue
		}
		if got.Header.Get("X-Forwarded-Host") != "shop.example" {
			t.Errorf("%s: X-Forwarded-Host %q", target, got.Header.Get("X-Forwarded-Host"))
		}
	}
	// A path that is not canonical never reaches the site.
	n := len(site.seen)
	for _, trick := range []string{"//tickets", "/./tickets", "/tickets%2F42", "/tickets;x", "/%74ickets", "/x/../tickets"} {
		if r := raw(t, addr, trick, cookie); r.StatusCode != 400 {
			t.Errorf("%s: %d", trick, r.StatusCode)
		}
	}
	if len(site.seen) != n {
		t.Errorf("a trick reached the site: %v", site.last().RequestURI)
	}
	// The site's end of the session: the receipt, and the header gone.
	r := raw(t, addr, "/done", cookie)
	if r.Header.Get(gate.EndHeader) != "" || !strings.HasPrefix(r.Header.Get("Set-Cookie"), gate.RoomCookieName("demo")+"="+gate.ReceiptPrefix+gate.Sign(k1, s)+";") {
		t.Errorf("end: %v", r.Header)
	}

	// The gate's routes go to the API: the site's Host (no origin secret),
	// a visitor's origin header dropped.
	r = raw(t, addr, "/.vestibule/renew?return=%2Fx", "X-Vestibule-Origin: forged\r\n")
	got := api.last()
	if r.StatusCode != 200 || got == nil || got.RequestURI != "/.vestibule/renew?return=%2Fx" || got.Host != "shop.example" || got.Header.Get(config.OriginHeader) != "" {
		t.Fatalf("renew to the API: %d, the API got %+v", r.StatusCode, got)
	}

	// A rotation: a cookie of the new key passes once the proxy has it.
	newer := "Cookie: " + gate.RoomCookieName("demo") + "=" + gate.Sign(k2, s) + "\r\n"
	if r := raw(t, addr, "/x", newer); r.StatusCode != 302 {
		t.Errorf("a cookie of a key the proxy lacks: %d", r.StatusCode)
	}
	if err := p.SetKeys(gate.KeyRing{Current: k2, Previous: k1}); err != nil {
		t.Fatal(err)
	}
	if r := raw(t, addr, "/x", newer); r.StatusCode != 200 {
		t.Errorf("after SetKeys: %d", r.StatusCode)
	}
	if err := p.SetKeys(gate.KeyRing{}); err == nil {
		t.Error("an empty ring was taken")
	}
	if r := raw(t, addr, "/x", newer); r.StatusCode != 200 {
		t.Errorf("after a refused SetKeys: %d", r.StatusCode)
	}

	// The site down: 502, not cached.
	site.srv.Close()
	if r := raw(t, addr, "/x", newer); r.StatusCode != 502 || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the site down: %d %v", r.StatusCode, r.Header)
	}
}

// With the stack's origin secret the API gets it, and the site's host in
// X-Forwarded-Host (its own Host stays the API's).
func TestGatingProxyOriginSecret(t *testing.T) {
	site, api := newRecorder(t, "upstream"), newRecorder(t, "api")
	up, _ := url.Parse(site.srv.URL)
	apiURL, _ := url.Parse(api.srv.URL)
	p, err := gateproxy.New(gateproxy.Options{
		Gate:     gate.Config{Room: "demo", WaitingRoomURL: "https://queue.example/", Keys: gate.KeyRing{Current: key(t, "1")}},
		Upstream: up, API: apiURL, OriginSecret: "the-origin-secret-0123456789",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	raw(t, strings.TrimPrefix(srv.URL, "http://"), "/.vestibule/leave", "X-Forwarded-Host: evil.example\r\n")
	got := api.last()
	if got == nil || got.Header.Get(config.OriginHeader) != "the-origin-secret-0123456789" ||
		got.Header.Get("X-Forwarded-Host") != "shop.example" || got.Host != apiURL.Host {
		t.Fatalf("the API got %+v", got)
	}
	if site.last() != nil {
		t.Error("leave reached the site")
	}
	for _, bad := range []string{"ftp://x/", "http:///x", "http://x/?q=1", "/relative"} {
		u, _ := url.Parse(bad)
		if _, err := gateproxy.New(gateproxy.Options{Gate: gate.Config{Room: "demo", WaitingRoomURL: "https://q.example/", Keys: gate.KeyRing{Current: key(t, "1")}},
			Upstream: u, API: apiURL}); err == nil {
			t.Errorf("upstream %s was taken", bad)
		}
	}
}
