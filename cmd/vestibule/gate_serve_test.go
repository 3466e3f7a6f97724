package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// waitNav waits until js holds in the tab, trying again across the
// navigations of the gate's journey (redirects, form posts), for 15 s.
func waitNav(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerText.replace(/\s+/g, " ").slice(0, 300)`))
	t.Fatalf("waiting for %s: %v; the tab shows %s", js, last, href)
}

func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// `vestibule gate serve` itself, against a local stack: the command
// guards the plain demo site with a room, and a visitor in Chromium joins
// through it, waits, is admitted and reaches the site on the page asked for;
// a second visitor waits while the first holds the room's one place; the
// path tricks get the gate's 400; Ctrl-C stops it cleanly.
func TestGateServe(t *testing.T) {
	for _, k := range []string{"VESTIBULE_STACK", "VESTIBULE_ENDPOINT", "VESTIBULE_ADMIN_KEY", "VESTIBULE_KEY_DIR"} {
		t.Setenv(k, "")
	}
	keys := t.TempDir()
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL: "redis://" + redistest.Own(t).Options().Addr, StaticDir: filepath.Join("..", "..", "static"),
		KeyDir: keys, AdminKey: adminKey, TickInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	site := "http://" + addr
	id := newRoom(t, s, map[string]any{"gate": true, "originUrl": site + "/", "maxActive": 1, "admitPerMinute": 600,
		"sessionTTLSeconds": 120, "claimTTLSeconds": 120})

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out, errb testkit.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"gate", "serve", "--upstream", s.PlainSiteURL(), "--room", id, "--open-paths", "/robots.txt",
			"--endpoint", s.URL(), "--keys", keys, "--listen", addr}, &out, &errb)
	}()
	if !testkit.WaitFor(10*time.Second, func() bool { return strings.Contains(out.String(), "vestibule gate serve: "+site) }) {
		t.Fatalf("gate serve did not start: %q %q", out.String(), errb.String())
	}
	for _, want := range []string{"room " + id, s.URL() + "/", "keys from " + keys} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("gate serve's first lines lack %q: %s", want, out.String())
		}
	}

	waiting := s.URL() + "/?room=" + id
	v := browser(t)
	if err := chromedp.Do(v, chromedp.Navigate(site+"/tickets?show=42")); err != nil {
		t.Fatal(err)
	}
	waitNav(t, v, `location.href.startsWith(`+jsQuote(waiting+"&return=%2Ftickets%3Fshow%3D42")+`)`)
	waitNav(t, v, `location.href === `+jsQuote(site+"/tickets?show=42")+` && document.getElementById("path").textContent === "/tickets?show=42"`)

	second := browser(t)
	if err := chromedp.Do(second, chromedp.Navigate(site+"/about")); err != nil {
		t.Fatal(err)
	}
	waitNav(t, second, `location.href.startsWith(`+jsQuote(waiting+"&return=%2Fabout")+`) && document.body.dataset.state === "waiting"`)

	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, trick := range []string{"//tickets", "/./tickets", "/tickets%2F42", "/tickets;x", "/%74ickets"} {
		// The request line as written: Go's client would send "//tickets"
		// as an absolute URL.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "GET "+trick+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d, want the gate's 400", trick, resp.StatusCode)
		}
	}
	if resp, err := client.Get(site + "/robots.txt"); err != nil || resp.StatusCode != 200 {
		t.Errorf("an open path: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	stop()
	select {
	case code := <-exit:
		if code != 130 && code != 0 {
			t.Errorf("gate serve stopped with %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gate serve did not stop")
	}
}

// gate serve's arguments: each mistake is a usage error (exit 2) or, for a
// key folder that is not a stack's, an error that says so (exit 1), before
// anything listens; help lists the command.
func TestGateServeUsage(t *testing.T) {
	for _, k := range []string{"VESTIBULE_STACK", "VESTIBULE_ENDPOINT", "VESTIBULE_KEY_DIR"} {
		t.Setenv(k, "")
	}
	old := newGateAWS
	t.Cleanup(func() { newGateAWS = old })
	newGateAWS = func(context.Context, *globals) (gateAWS, error) {
		t.Fatal("reached AWS")
		return gateAWS{}, nil
	}
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"gate", "serve", "--room", "r", "--endpoint", "http://127.0.0.1:1"}, 2, "--upstream"},
		{[]string{"gate", "serve", "--upstream", "http://127.0.0.1:2", "--endpoint", "http://127.0.0.1:1"}, 2, "--room ROOM or --routes"},
		{[]string{"gate", "serve", "--upstream", "http://127.0.0.1:2", "--room", "r"}, 2, "--stack NAME, or --endpoint"},
		{[]string{"gate", "serve", "--upstream", "http://127.0.0.1:2", "--room", "r", "--routes", "/x=y", "--endpoint", "http://127.0.0.1:1", "--keys", empty}, 1, "no entry.key"},
		{[]string{"gate", "serve", "--upstream", "http://127.0.0.1:2", "--routes", "x=y", "--endpoint", "http://127.0.0.1:1"}, 2, "[HOST]/PREFIX=ROOM"},
		{[]string{"gate", "serve", "extra", "--upstream", "http://127.0.0.1:2", "--room", "r"}, 2, "no arguments"},
	} {
		var out, errb testkit.Buffer
		if code := run(context.Background(), c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.says) {
			t.Errorf("%v: exit %d %q, want %d saying %q", c.args, code, errb.String(), c.code, c.says)
		}
	}
	if _, err := os.Stat(filepath.Join(empty, "entry.key")); err == nil {
		t.Error("gate serve made keys of its own in the folder it was given")
	}
	var out, errb testkit.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "vestibule gate serve --upstream URL") {
		t.Errorf("help: %d %q", code, out.String())
	}
}

// With --stack, gate serve takes what the stack's gate has: the waiting
// room and API from its outputs, the origin secret, and the keys of its
// entry-key secret.
func TestGateServeFromStack(t *testing.T) {
	old := newGateAWS
	t.Cleanup(func() { newGateAWS = old })
	newGateAWS = func(context.Context, *globals) (gateAWS, error) { return stackAWS(nil), nil }
	c := &command{g: &globals{}, room: "spring-tour", stderr: &testkit.Buffer{}}
	c.g.target.Stack = "Vestibule"
	c.serve.upstream = "https://origin.example/"
	c.gate.openPaths = "/robots.txt, /static/*"
	s, err := c.serveSetup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ring, err := s.keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	key, _ := gate.DeriveKey([]byte(strings.Repeat("e", 64)))
	if s.opts.Gate.WaitingRoomURL != "https://d2waiting.cloudfront.net/" || s.opts.API.String() != "https://abc123.execute-api.eu-west-1.amazonaws.com/" ||
		s.opts.OriginSecret != "the-origin-secret" || ring.Current.ID != key.ID || strings.Join(s.opts.Gate.OpenPaths, " ") != "/robots.txt /static/*" {
		t.Fatalf("setup %+v, ring %s", s.opts, ring.Current.ID)
	}
	c.serve.keys = "somewhere"
	if _, err := c.serveSetup(context.Background()); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("--keys with --stack: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gate serve test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// gate serve over HTTPS (--tls-cert, --tls-key), and a rotation of the
// stack's keys reaching it: a cookie of the new key is sent to wait until
// the proxy reads the folder again (--reload), and passes after.
func TestGateServeTLSAndRotation(t *testing.T) {
	t.Setenv("VESTIBULE_STACK", "")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "the site") }))
	defer site.Close()
	keys := t.TempDir()
	k, err := token.LoadLocal(keys) // the stack's keys, as make dev makes them
	if err != nil {
		t.Fatal(err)
	}
	old, err := k.GateKeys()
	if err != nil {
		t.Fatal(err)
	}
	cert, key := selfSigned(t, t.TempDir())
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out, errb testkit.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"gate", "serve", "--upstream", site.URL, "--room", "demo", "--api", "http://127.0.0.1:1",
			"--waiting-room", "https://queue.example/", "--keys", keys, "--listen", addr, "--tls-cert", cert, "--tls-key", key,
			"--reload", "50ms"}, &out, &errb)
	}()
	if !testkit.WaitFor(10*time.Second, func() bool { return strings.Contains(out.String(), "vestibule gate serve: https://"+addr) }) {
		t.Fatalf("gate serve did not start: %q %q", out.String(), errb.String())
	}
	client := &http.Client{Timeout: 5 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // the test's own certificate
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(ring gate.KeyRing) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+addr+"/book", nil)
		s := gate.Session{Room: "demo", Seq: 1, Expires: time.Now().Add(time.Hour)}
		req.AddCookie(&http.Cookie{Name: gate.RoomCookieName("demo"), Value: gate.Sign(ring.Current, s)})
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(old); code != 200 {
		t.Fatalf("with the stack's key over HTTPS: %d", code)
	}
	// Rotate as an operator would: the current key becomes the previous.
	prev, _ := os.ReadFile(filepath.Join(keys, "entry.key"))
	fresh := []byte(strings.Repeat("n", 64))
	if err := os.WriteFile(filepath.Join(keys, "entry.previous.key"), prev, 0o600); err != nil {
		t.Fatal(err)
	}
	newer, err := (&token.Keys{EntrySeeds: [][]byte{fresh}}).GateKeys()
	if err != nil {
		t.Fatal(err)
	}
	if code := get(newer); code != 302 {
		t.Fatalf("a key the proxy does not have yet: %d", code)
	}
	if err := os.WriteFile(filepath.Join(keys, "entry.key"), fresh, 0o600); err != nil {
		t.Fatal(err)
	}
	if !testkit.WaitFor(10*time.Second, func() bool { return get(newer) == 200 }) {
		t.Fatalf("the new key never reached the proxy: %s", errb.String())
	}
	if code := get(old); code != 200 {
		t.Errorf("the previous key after the rotation: %d", code)
	}
	stop()
	if code := <-exit; code != 130 && code != 0 {
		t.Errorf("gate serve stopped with %d: %s", code, errb.String())
	}

	// A certificate without its key, and one that cannot be read.
	for _, args := range [][]string{{"--tls-cert", cert}, {"--tls-cert", filepath.Join(keys, "nothing"), "--tls-key", key}} {
		var out, errb testkit.Buffer
		code := run(context.Background(), append([]string{"gate", "serve", "--upstream", site.URL, "--room", "demo", "--api", "http://127.0.0.1:1",
			"--waiting-room", "https://queue.example/", "--keys", keys, "--listen", "127.0.0.1:0"}, args...), &out, &errb)
		if code == 0 || errb.String() == "" {
			t.Errorf("%v: exit %d %q", args, code, errb.String())
		}
	}
}
