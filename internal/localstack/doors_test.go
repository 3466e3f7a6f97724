package localstack_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/nginxtest"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// doorsStack is make dev's stack with the nginx door on a free port, and
// nginx running the snippet the stack prints, as printed (or, with a
// resolver, the same door with the API's address in a variable, as a
// deployment writes it).
func doorsStack(t *testing.T, resolver string) (*localstack.Stack, string, *nginxtest.Nginx) {
	t.Helper()
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	nginxAddr := "127.0.0.1:" + strconv.Itoa(port)
	keys := t.TempDir()
	s, err := localstack.Start(context.Background(), localstack.Options{StaticDir: static, KeyDir: keys, TickInterval: 50 * time.Millisecond,
		DoorOptions: localstack.DoorOptions{NginxAddr: nginxAddr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.NginxURL() != "http://"+nginxAddr || !strings.Contains(s.NginxSnippet(), "listen "+nginxAddr+";") {
		t.Fatalf("nginx door at %q, snippet:\n%s", s.NginxURL(), s.NginxSnippet())
	}
	snippet := s.NginxSnippet()
	if resolver != "" {
		snippet = localstack.NginxDoor{Listen: nginxAddr, Site: s.PlainSiteURL(), API: s.URL(), Room: localstack.NginxRoomID,
			OpenPaths: localstack.SiteOpenPaths, WaitingRoom: s.URL() + "/", Resolver: resolver}.Config()
		if !strings.Contains(snippet, "proxy_pass $vestibule_api/api/gate/check/nginx?") {
			t.Fatalf("the snippet with a resolver:\n%s", snippet)
		}
	}
	return s, keys, nginxtest.Start(t, snippet, nginxAddr)
}

// admitted waits in room until admitted, as the waiting page does, and
// returns the entry token and the enter URL.
func admitted(t *testing.T, s *localstack.Stack, room string) (string, string) {
	t.Helper()
	code, _, e := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/"+room+"/enqueue", "", "")
	ticket, _ := e["ticket"].(string)
	if code != 200 || ticket == "" {
		t.Fatalf("enqueue in %s: %d %v", room, code, e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e["entryToken"] == nil && time.Now().Before(deadline) {
		time.Sleep(pollpolicy.MinInterval)
		_, _, e = testkit.CallJSON(t, "GET", s.URL()+"/api/rooms/"+room+"/poll", ticket, "")
	}
	tok, _ := e["entryToken"].(string)
	enter, _ := e["enterUrl"].(string)
	if tok == "" {
		t.Fatalf("not admitted to %s: %v", room, e)
	}
	return tok, enter
}

// rawGet sends a request line exactly as written (a client would clean
// "/./" away) to addr, with the headers, and returns the answer.
func rawGet(t *testing.T, addr, target string, headers ...string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	req := "GET " + target + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return resp
}

// doorJourney is the gate's contract through one door of the demo site,
// from a plain HTTP client: no cookie, the waiting room of the door's room;
// enter, the cookie; the site with it, the path as asked; the path tricks
// refused; a navigation past the session's time to renew goes through
// renew, which extends the session in the engine; the site's "Finish
// booking" (its end header) turns the cookie into the receipt, whose next
// request goes to leave, which ends the session.
func doorJourney(t *testing.T, s *localstack.Stack, keys, base, room string) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	name := gate.DevCookieName + "-" + room
	// A room whose sessions renew: 2 minutes idle, 10 at most.
	if code, _, body := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/rooms/"+room, s.AdminKey(), map[string]any{
		"gate": true, "originUrl": base + "/", "maxActive": 5, "admitPerMinute": 60, "sessionTTLSeconds": 120, "maxSessionSeconds": 600,
	}); code != 200 {
		t.Fatalf("PUT %s: %d %v", room, code, body)
	}
	resp := rawGet(t, addr, "/tickets?show=42")
	if want := s.URL() + "/?room=" + room + "&return=%2Ftickets%3Fshow%3D42"; resp.StatusCode != 302 || resp.Header.Get("Location") != want ||
		resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("no cookie: %d %v, want a 302 to %s", resp.StatusCode, resp.Header, want)
	}
	if resp = rawGet(t, addr, "/robots.txt"); resp.StatusCode != 200 {
		t.Fatalf("an open path: %d", resp.StatusCode)
	}

	tok, enter := admitted(t, s, room)
	if enter != base+"/.vestibule/enter" {
		t.Fatalf("enterUrl %q, want the door's", enter)
	}
	form := url.Values{"token": {tok}, "return": {"/tickets?show=42"}}.Encode()
	req, _ := http.NewRequest("POST", enter, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body := do(t, req)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == name {
			session = c
		}
	}
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/tickets?show=42" || session == nil || session.Secure || !session.HttpOnly {
		t.Fatalf("enter through the door: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	cookie := "Cookie: " + name + "=" + session.Value
	resp = rawGet(t, addr, "/tickets?show=42", cookie)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `<code id="path">/tickets?show=42</code>`) {
		t.Fatalf("the site with the session: %d %s", resp.StatusCode, b)
	}
	for _, trick := range []string{"//tickets", "/./tickets", "/tickets%2F42", "/tickets;x/42", "/%74ickets", "/x/../tickets"} {
		if resp = rawGet(t, addr, trick, cookie); resp.StatusCode != 400 || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v, want the gate's 400", trick, resp.StatusCode, resp.Header)
		}
	}
	// Renewal: the session's cookie made due (re-signed with the stack's
	// key, its time to renew a second ago) sends a navigation through renew,
	// which extends the session and comes back with a cookie that ends later.
	k, err := token.LoadLocal(keys)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := k.GateKeys()
	if err != nil {
		t.Fatal(err)
	}
	sess, err := gate.Verify(ring, session.Value, room, time.Now())
	if err != nil || !sess.Renews() {
		t.Fatalf("the session's cookie %+v (%v): want one that renews", sess, err)
	}
	sess.RenewAt = time.Now().Add(-time.Second).Truncate(time.Second)
	due := name + "=" + gate.Sign(ring.Current, sess)
	resp = rawGet(t, addr, "/tickets?show=42", "Cookie: "+due, "Sec-Fetch-Mode: navigate")
	if want := gate.RenewPath + "?return=%2Ftickets%3Fshow%3D42"; resp.StatusCode != 302 || resp.Header.Get("Location") != want {
		t.Fatalf("a due navigation: %d %v, want a 302 to %s", resp.StatusCode, resp.Header, want)
	}
	if resp = rawGet(t, addr, "/tickets?show=42", "Cookie: "+due, "Sec-Fetch-Mode: cors"); resp.StatusCode != 200 {
		t.Errorf("a due fetch: %d, want it passed", resp.StatusCode)
	}
	resp = rawGet(t, addr, gate.RenewPath+"?return=%2Ftickets%3Fshow%3D42", "Cookie: "+due)
	var renewed *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == name {
			renewed = c
		}
	}
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/tickets?show=42" || renewed == nil {
		t.Fatalf("renew through the door: %d %v", resp.StatusCode, resp.Header)
	}
	if ns, err := gate.Verify(ring, renewed.Value, room, time.Now()); err != nil || ns.Expires.Before(sess.Expires) || !ns.RenewAt.After(sess.RenewAt) {
		t.Errorf("the renewed cookie %+v (%v); the due one %+v", ns, err, sess)
	}

	// A forged cookie is sent to wait.
	resp = rawGet(t, addr, "/tickets", "Cookie: "+name+"="+session.Value[:len(session.Value)-4]+"AAAA")
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), s.URL()+"/?room="+room) {
		t.Errorf("a forged cookie: %d %v", resp.StatusCode, resp.Header)
	}

	// The site ends the session: the receipt, and the end header kept from the browser.
	req, _ = http.NewRequest("POST", base+"/done", nil)
	req.AddCookie(session)
	resp, _ = do(t, req)
	var receipt *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == name {
			receipt = c
		}
	}
	if resp.StatusCode != 200 || resp.Header.Get(gate.EndHeader) != "" || receipt == nil || receipt.Value != gate.ReceiptPrefix+session.Value {
		t.Fatalf("the site's end: %d %v", resp.StatusCode, resp.Header)
	}
	resp = rawGet(t, addr, "/tickets", "Cookie: "+name+"="+receipt.Value)
	if resp.StatusCode != 302 || resp.Header.Get("Location") != gate.LeavePath {
		t.Fatalf("with the receipt: %d %v, want a 302 to leave", resp.StatusCode, resp.Header)
	}
	resp = rawGet(t, addr, gate.LeavePath, "Cookie: "+name+"="+receipt.Value)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/" || !strings.Contains(resp.Header.Get("Set-Cookie"), name+"=;") {
		t.Fatalf("leave with the receipt: %d %v", resp.StatusCode, resp.Header)
	}
	_, _, info := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/"+room, s.AdminKey(), nil)
	if st, _ := info["stats"].(map[string]any); st["active"] != 0.0 {
		t.Errorf("after leave: %v, want no session", info["stats"])
	}
}

// make dev's nginx snippet, run by Debian's nginx as printed: the demo site
// behind room demo-nginx through forward-auth.
func TestNginxDoor(t *testing.T) {
	for name, resolver := range map[string]string{"as printed": "", "with a resolver": "127.0.0.1"} {
		t.Run(name, func(t *testing.T) {
			s, keys, nginx := doorsStack(t, resolver)
			doorJourney(t, s, keys, s.NginxURL(), localstack.NginxRoomID)
			if t.Failed() {
				t.Logf("nginx's error log:\n%s", nginx.ErrorLog())
			}
		})
	}
}

// docs/GATE.md's nginx snippet for a deployed stack is the door's, as
// NginxDoor writes it for those settings: the lines that run in the tests.
func TestNginxDoorDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "GATE.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := localstack.NginxDoor{Listen: "443 ssl", ServerName: "booking.example.com", Site: "http://127.0.0.1:3000",
		API: "https://abc123.execute-api.eu-west-1.amazonaws.com", Room: "spring-tour", OpenPaths: []string{"/robots.txt", "/static/*"},
		WaitingRoom: "https://queue.example.com/", OriginSecret: "<the stack's origin secret>", Resolver: "169.254.169.253"}.Config()
	if !strings.Contains(string(b), "```nginx\n"+want+"```\n") {
		t.Errorf("docs/GATE.md does not show the snippet NginxDoor writes:\n%s", want)
	}
}

// make dev's gating proxy door: the demo site behind room demo-proxy
// through vestibule gate serve's proxy.
func TestProxyDoor(t *testing.T) {
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
	keys := t.TempDir()
	s, err := localstack.Start(context.Background(), localstack.Options{StaticDir: static, KeyDir: keys, TickInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.NginxURL() != "" || s.NginxSnippet() != "" {
		t.Errorf("a nginx door without its address: %q", s.NginxURL())
	}
	doorJourney(t, s, keys, s.ProxyURL(), localstack.ProxyRoomID)
}
