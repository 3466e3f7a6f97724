package gateapi_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/apitest"
)

// The forward-auth check route over API Gateway events, as each proxy calls
// it: the session of enter passes (with its receipt), no cookie is sent to
// the waiting room and a non-canonical path is refused, each in the statuses
// its proxy knows; every answer is no-store; what the route cannot answer is
// a JSON error. The decisions themselves are held to the parity rows in
// package gate (checkParity).
func TestGateCheck(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		f.Gate(false, nil)
		tok, _ := f.Admit(`{"mode":"passthrough","gate":true,"sessionTTLSeconds":300,"originUrl":"` + apitest.Site + `"}`)
		claims, err := f.Entries.Verify(tok, f.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		c := apitest.SetCookie(t, f.Enter("site.example", tok, "/"))
		session := c.Name + "=" + c.Value
		settings := url.Values{"room": {claims.Room}, "waitingRoom": {"https://queue.example/"}, "open": {"/robots.txt"}}.Encode()
		wait := "https://queue.example/?room=" + claims.Room + "&return="

		nginx := func(method, target string, cookies ...string) apitest.Response {
			ev := apitest.Event("GET", "/api/gate/check/nginx?"+settings, "", map[string]string{
				"x-original-method": method, "x-original-uri": target, "x-forwarded-host": "site.example",
				// A visitor's header of Traefik's protocol, naming an open path.
				"x-forwarded-uri": "/robots.txt",
			})
			ev.Cookies = cookies
			return f.Send(ev)
		}
		r := nginx("GET", "/tickets?b=2&a=1", session)
		receipt := r.Headers[gate.ReceiptHeader]
		if r.StatusCode != 200 || !strings.HasPrefix(receipt, c.Name+"="+gate.ReceiptPrefix+c.Value+";") || r.Headers["Cache-Control"] != "no-store" {
			t.Fatalf("nginx, with the session: %d %v", r.StatusCode, r.Headers)
		}
		r = nginx("GET", "/tickets?b=2&a=1")
		if r.StatusCode != 401 || r.Headers["Location"] != wait+"%2Ftickets%3Fa%3D1%26b%3D2" || r.Headers["Cache-Control"] != "no-store" {
			t.Errorf("nginx, no cookie: %d %v", r.StatusCode, r.Headers)
		}
		if r = nginx("GET", "/robots.txt"); r.StatusCode != 200 || r.Headers[gate.ReceiptHeader] != "" {
			t.Errorf("nginx, an open path: %d %v", r.StatusCode, r.Headers)
		}
		for _, trick := range []string{"//tickets", "/./tickets", "/tickets%2F42", "/tickets;x", "/%74ickets"} {
			if r = nginx("GET", trick, session); r.StatusCode != 403 || r.Headers["Cache-Control"] != "no-store" {
				t.Errorf("nginx, %s: %d %v", trick, r.StatusCode, r.Headers)
			}
		}
		// The session's end, as the gate sees it: past it, the cookie is
		// nobody's.
		f.Clock.Advance(301 * time.Second)
		if r = nginx("GET", "/tickets", session); r.StatusCode != 401 {
			t.Errorf("nginx, an expired session: %d %v", r.StatusCode, r.Headers)
		}
		f.Clock.Advance(-301 * time.Second)

		// Traefik: the gate's own statuses, a page to follow.
		traefik := func(target string, cookies ...string) apitest.Response {
			ev := apitest.Event("GET", "/api/gate/check/traefik?"+settings, "", map[string]string{
				"x-forwarded-method": "GET", "x-forwarded-uri": target, "x-forwarded-host": "site.example",
				"x-original-uri": "/robots.txt",
			})
			ev.Cookies = cookies
			return f.Send(ev)
		}
		if r = traefik("/tickets", session); r.StatusCode != 200 {
			t.Errorf("traefik, with the session: %d %v", r.StatusCode, r.Headers)
		}
		if r = traefik("/tickets"); r.StatusCode != 302 || r.Headers["Location"] != wait+"%2Ftickets" || !strings.Contains(r.Body, "href=") {
			t.Errorf("traefik, no cookie: %d %v %q", r.StatusCode, r.Headers, r.Body)
		}
		if r = traefik("//tickets", session); r.StatusCode != 400 {
			t.Errorf("traefik, //: %d", r.StatusCode)
		}

		// Envoy: the original method, path and query; the settings in headers.
		envoy := func(method, path string, cookies ...string) apitest.Response {
			ev := apitest.Event(method, "/api/gate/check/envoy"+path, "", map[string]string{
				"host": "site.example", gate.EnvoyHeaderRoom: claims.Room, gate.EnvoyHeaderWaitingRoom: "https://queue.example/",
			})
			ev.Cookies = cookies
			return f.Send(ev)
		}
		if r = envoy("DELETE", "/tickets/42?x=1", session); r.StatusCode != 200 || r.Headers[gate.ReceiptHeader] != receipt {
			t.Errorf("envoy, with the session: %d %v", r.StatusCode, r.Headers)
		}
		if r = envoy("GET", "/tickets/42?x=1"); r.StatusCode != 302 || r.Headers["Location"] != wait+"%2Ftickets%2F42%3Fx%3D1" {
			t.Errorf("envoy, no cookie: %d %v", r.StatusCode, r.Headers)
		}
		if r = envoy("POST", "/"); r.StatusCode != 302 || r.Headers["Location"] != wait+"%2F" {
			t.Errorf("envoy, the root: %d %v", r.StatusCode, r.Headers)
		}
		if r = envoy("GET", "//tickets", session); r.StatusCode != 400 {
			t.Errorf("envoy, //: %d", r.StatusCode)
		}

		// What the route cannot answer.
		apitest.WantStatus(t, f.Do("GET", "/api/gate/check/haproxy?"+settings, "", nil), 404, "unknown_route")
		apitest.WantStatus(t, f.Do("GET", "/api/gate/check/nginx/x?"+settings, "", nil), 404, "unknown_route")
		apitest.WantStatus(t, f.Do("GET", "/api/gate/check/nginx?"+settings, "", nil), 400, "bad_check")
		apitest.WantStatus(t, f.Do("GET", "/api/gate/check/nginx?room=a%20b&waitingRoom=https://q.example/", "", map[string]string{
			"x-original-method": "GET", "x-original-uri": "/"}), 400, "bad_check")
		apitest.WantStatus(t, f.Do("GET", "/api/gate/check/envoy/x", "", nil), 400, "bad_check")
	})
}

// Without gate keys the check has nothing to verify with: 404. Behind
// CloudFront's origin secret (a deployed stack), a proxy must present it,
// as the /.vestibule/* behaviour does.
func TestGateCheckNeedsKeysAndTheOriginSecret(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		const secret = "origin-secret-0123456789abcdef"
		ev := apitest.Event("GET", "/api/gate/check/nginx?room=demo&waitingRoom=https://q.example/", "",
			map[string]string{"x-original-method": "GET", "x-original-uri": "/"})
		apitest.WantStatus(t, f.Send(ev), 404, "unknown_route")
		f.Gate(false, func(o *api.Options) { o.Edge = api.NewEdgeGuard([]string{secret}, nil, nil) })
		apitest.WantStatus(t, f.Send(ev), 403, "")
		if r := f.Send(apitest.ViaCloudFront(ev, secret, "")); r.StatusCode != 401 || r.Headers["Location"] != "https://q.example/?room=demo&return=%2F" {
			t.Errorf("with the origin secret: %d %v", r.StatusCode, r.Headers)
		}
	})
}
