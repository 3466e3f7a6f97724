package e2e

import (
	"crypto/rand"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// OAuth2ProxyVersion is the oauth2-proxy the test runs: `make deps-oauth2-proxy`
// builds this version from the Go module proxy into .tools/bin (the Makefile
// pins the same one).
const OAuth2ProxyVersion = "v7.15.6"

// oauth2Proxy finds the oauth2-proxy binary: OAUTH2_PROXY, .tools/bin, PATH.
func oauth2Proxy(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("OAUTH2_PROXY"); p != "" {
		return p
	}
	if p := repoPath(t, filepath.Join(".tools", "bin", "oauth2-proxy")); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("oauth2-proxy"); err == nil {
		return p
	}
	testkit.Missing(t, "oauth2-proxy "+OAuth2ProxyVersion, "make deps-oauth2-proxy builds it into .tools/bin")
	return ""
}

// checkOAuth2Proxy fails the test unless bin is oauth2-proxy at
// OAuth2ProxyVersion, the version the Makefile pins.
func checkOAuth2Proxy(t *testing.T, bin string) {
	t.Helper()
	info, err := buildinfo.ReadFile(bin)
	if err != nil || info.Main.Path != "github.com/oauth2-proxy/oauth2-proxy/v7" || info.Main.Version != OAuth2ProxyVersion {
		t.Fatalf("%s is not oauth2-proxy %s (%v): make deps-oauth2-proxy", bin, OAuth2ProxyVersion, err)
	}
	mk, err := os.ReadFile(repoPath(t, "Makefile"))
	if err != nil || !strings.Contains(string(mk), "\nOAUTH2_PROXY_VERSION := "+OAuth2ProxyVersion+"\n") {
		t.Fatalf("the Makefile does not pin oauth2-proxy %s (%v)", OAuth2ProxyVersion, err)
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// startOAuth2Proxy runs oauth2-proxy as the room's relying party in front of
// upstream, on a free loopback port, with the flags docs/GATE.md gives; it
// returns its URL once it answers, and stops it when the test ends.
func startOAuth2Proxy(t *testing.T, s *localstack.Stack, room, secret, upstream string) string {
	t.Helper()
	bin := oauth2Proxy(t)
	checkOAuth2Proxy(t, bin)
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cookie := make([]byte, 16)
	rand.Read(cookie)
	// A visitor has no email, which oauth2-proxy asks of every session:
	// --oidc-email-claim=sub makes the visitor id the "email", and
	// --email-domain=* lets it through (docs/GATE.md, "OpenID Connect").
	cmd := exec.Command(bin,
		"--provider=oidc", "--oidc-issuer-url="+s.OIDCIssuer(room),
		"--client-id="+room, "--client-secret="+secret,
		"--redirect-url=http://"+addr+"/oauth2/callback", "--http-address="+addr,
		"--upstream="+upstream, "--email-domain=*", "--oidc-email-claim=sub",
		"--cookie-secret="+hex.EncodeToString(cookie), "--cookie-secure=false",
		"--skip-provider-button", "--code-challenge-method=S256")
	logs := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("oauth2-proxy: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("oauth2-proxy's log:\n%s", logs)
		}
	})
	url := "http://" + addr
	if !testkit.WaitFor(30*time.Second, func() bool {
		r, err := http.Get(url + "/ping")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}) {
		t.Fatalf("oauth2-proxy did not start:\n%s", logs)
	}
	return url
}

// TestOAuth2Proxy: oauth2-proxy, built from its module, is the room's
// relying party in front of a site. A visitor who opens the site goes
// through the waiting room, is admitted and reaches the site as the visitor
// the ID token names; a second visitor, beyond maxActive, waits; a browser
// without the proxy's session is sent to the room again.
func TestOAuth2Proxy(t *testing.T) {
	s := stack(t, "")
	const id = "oidc-proxy"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>site</title><body id="site"><p id="user">%s</p><p id="path">%s</p>`,
			html.EscapeString(r.Header.Get("X-Forwarded-User")), html.EscapeString(r.URL.RequestURI()))
	}))
	t.Cleanup(upstream.Close)

	// The proxy reads the room's discovery as it starts; the room then
	// names the proxy's callback, once its address is known.
	cfg := baseSettings(s)
	cfg["originUrl"] = upstream.URL + "/"
	putRoom(t, s, id, cfg)
	secret := credential(t, s, id)
	proxy := startOAuth2Proxy(t, s, id, secret, upstream.URL+"/")
	cfg["originUrl"], cfg["oidcRedirectUris"] = proxy+"/", []string{proxy + "/oauth2/callback"}
	putRoom(t, s, id, cfg)

	a := visitor(t)
	do(t, a, chromedp.Navigate(proxy+"/tickets?show=42"))
	waitNav(t, a, `location.href === `+jsString(proxy+"/tickets?show=42")+` && document.body.id === "site"`)
	user := text(t, a, "user")
	if user == "" {
		t.Fatalf("the site got no user from the proxy: %s", pageSummary(a))
	}
	if n := stats(t, s, id, "active"); n != 1 {
		t.Fatalf("active sessions %v after the sign-in, want 1", n)
	}
	screenshot(t, a, "screenshot-oidc-oauth2-proxy.png")
	// Other pages of the site pass with the proxy's session.
	do(t, a, chromedp.Navigate(proxy+"/"))
	waitNav(t, a, `document.body.id === "site" && document.getElementById("path").textContent === "/"`)

	// Beyond maxActive (1): the second visitor waits on the room's page.
	b := visitor(t)
	do(t, b, chromedp.Navigate(proxy+"/"))
	waitNav(t, b, `location.origin === `+jsString(s.URL())+` && new URLSearchParams(location.search).get("room") === `+jsString(id))
	waitState(t, b, "waiting", wait)
	waitJS(t, b, `+document.body.dataset.polls >= 2`, wait)
	if got := browsertest.Eval[string](t, b, "document.body.dataset.state"); got != "waiting" || stats(t, s, id, "admitted") != 0 {
		t.Fatalf("the visitor beyond maxActive is %q (admitted %v), want waiting", got, stats(t, s, id, "admitted"))
	}
}
