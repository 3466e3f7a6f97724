package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// rp is a relying party built on go-oidc and x/oauth2, as a site's own
// sign-in would be: its /protected page needs a session of its own, which
// /callback gives once the ID token the room's provider issued verifies
// (issuer, audience, signature by the JWKS, expiry, nonce). In capture mode
// the callback keeps the code and redeems nothing, so the test can.
type rp struct {
	srv      *httptest.Server
	room     string
	provider *oidc.Provider
	conf     oauth2.Config

	mu       sync.Mutex
	pending  map[string][2]string // state → nonce, PKCE verifier
	sessions map[string]string    // session cookie → subject
	codes    []string             // every code the callback got
	verifier map[string]string    // code → its PKCE verifier (capture mode)
	capture  bool
}

// newRP starts a relying party of room on stack s and makes it the room's
// one redirect URI and its origin, with the settings given.
func newRP(t *testing.T, s *localstack.Stack, room string, cfg settings) *rp {
	t.Helper()
	p := &rp{room: room, pending: map[string][2]string{}, sessions: map[string]string{}, verifier: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/protected", p.protected)
	mux.HandleFunc("/callback", p.callback)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	cfg["originUrl"], cfg["oidcRedirectUris"] = p.srv.URL+"/", []string{p.srv.URL + "/callback"}
	putRoom(t, s, room, cfg)
	var err error
	if p.provider, err = oidc.NewProvider(context.Background(), s.OIDCIssuer(room)); err != nil {
		t.Fatalf("discovery: %v", err)
	}
	p.conf = oauth2.Config{ClientID: room, ClientSecret: "", Endpoint: p.provider.Endpoint(),
		RedirectURL: p.srv.URL + "/callback", Scopes: []string{oidc.ScopeOpenID}}
	return p
}

func (p *rp) withSecret(secret string) *rp { p.conf.ClientSecret = secret; return p }

func randomText() string { return rand.Text() }

// protected is the site's page: the subject for a session, else the sign-in.
func (p *rp) protected(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie("rp-session"); err == nil {
		p.mu.Lock()
		sub, ok := p.sessions[c.Value]
		p.mu.Unlock()
		if ok {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>protected</title><body id="protected"><p id="sub">%s</p>`, html.EscapeString(sub))
			return
		}
	}
	state, nonce, verifier := randomText(), randomText(), oauth2.GenerateVerifier()
	p.mu.Lock()
	p.pending[state] = [2]string{nonce, verifier}
	p.mu.Unlock()
	http.Redirect(w, r, p.conf.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// callback redeems the code and checks the ID token, as go-oidc's users do.
func (p *rp) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	pend, ok := p.pending[q.Get("state")]
	delete(p.pending, q.Get("state"))
	p.codes = append(p.codes, q.Get("code"))
	p.verifier[q.Get("code")] = pend[1]
	capture := p.capture
	p.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "unknown state", http.StatusBadRequest)
		return
	case q.Get("error") != "":
		http.Error(w, "provider error: "+q.Get("error"), http.StatusForbidden)
		return
	case capture:
		fmt.Fprint(w, `<!doctype html><title>captured</title><body id="captured">`)
		return
	}
	tok, err := p.conf.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(pend[1]))
	if err != nil {
		http.Error(w, "exchange: "+err.Error(), http.StatusBadGateway)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := p.provider.Verifier(&oidc.Config{ClientID: p.room}).Verify(r.Context(), raw)
	if err != nil || idt.Nonce != pend[0] {
		http.Error(w, fmt.Sprintf("id token: %v (nonce %q)", err, idt), http.StatusUnauthorized)
		return
	}
	sess := randomText()
	p.mu.Lock()
	p.sessions[sess] = idt.Subject
	p.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "rp-session", Value: sess, Path: "/", HttpOnly: true, Expires: idt.Expiry})
	http.Redirect(w, r, "/protected", http.StatusSeeOther)
}

// lastCode is the last code the callback got.
func (p *rp) lastCode(t *testing.T) (code, verifier string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.codes) == 0 {
		t.Fatal("the relying party got no code")
	}
	c := p.codes[len(p.codes)-1]
	return c, p.verifier[c]
}

// oauthError is the OAuth error code of a failed exchange.
func oauthError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return fmt.Sprint(err)
}

// stats is the admin view's count of a room.
func stats(t *testing.T, s *localstack.Stack, room, what string) float64 {
	t.Helper()
	_, _, info := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+room, s.AdminKey(), nil)
	st, _ := info["stats"].(map[string]any)
	n, _ := st[what].(float64)
	return n
}

// TestOIDC: a site whose sign-in is a go-oidc relying party of the room.
// A visitor who opens its protected page is sent through the room's
// authorize to the waiting page, admitted, sent back with a code, and the
// site's page shows the subject of a verified ID token; a second visitor,
// beyond maxActive, waits. The code redeems once (a replay is invalid_grant
// and admits nobody); a foreign redirect URI gets the provider's page, no
// redirect; a wrong secret and a wrong PKCE verifier are refused without
// spending the code.
func TestOIDC(t *testing.T) {
	s := stack(t, "")
	const id = "oidc-e2e"
	cfg := baseSettings(s)
	site := newRP(t, s, id, cfg)
	secret := credential(t, s, id)
	site.withSecret(secret)

	a := visitor(t)
	do(t, a, chromedp.Navigate(site.srv.URL+"/protected"))
	waitNav(t, a, `location.href === `+jsString(site.srv.URL+"/protected")+` && document.body.id === "protected"`)
	sub := text(t, a, "sub")
	if sub == "" {
		t.Fatalf("the site shows no subject: %s", pageSummary(a))
	}
	screenshot(t, a, "screenshot-oidc-site.png")
	if n := stats(t, s, id, "active"); n != 1 {
		t.Fatalf("active sessions %v after the sign-in, want 1", n)
	}

	// Beyond maxActive (1): the second visitor waits on the room's page.
	b := visitor(t)
	do(t, b, chromedp.Navigate(site.srv.URL+"/protected"))
	waitNav(t, b, `location.origin === `+jsString(s.URL())+` && new URLSearchParams(location.search).get("room") === `+jsString(id)+
		` && !!new URLSearchParams(location.search).get("oidc")`)
	waitState(t, b, "waiting", wait)
	// A poll after the join: the ticks since found the room full.
	waitJS(t, b, `+document.body.dataset.polls >= 2`, wait)
	if got := browsertest.Eval[string](t, b, "document.body.dataset.state"); got != "waiting" || stats(t, s, id, "admitted") != 0 {
		t.Fatalf("the visitor beyond maxActive is %q (admitted %v), want waiting: %s", got, stats(t, s, id, "admitted"), pageSummary(b))
	}

	// The code the site redeemed: a replay is invalid_grant, and nobody more is in.
	code, verifier := site.lastCode(t)
	if _, err := site.conf.Exchange(context.Background(), code, oauth2.VerifierOption(verifier)); oauthError(err) != "invalid_grant" {
		t.Fatalf("replayed code: %v, want invalid_grant", err)
	}
	if n := stats(t, s, id, "active"); n != 1 {
		t.Fatalf("active sessions %v after the replay, want 1", n)
	}

	// A redirect URI the room does not list: the provider's page, no redirect.
	c := visitor(t)
	do(t, c, chromedp.Navigate(s.OIDCIssuer(id)+"/authorize?"+url.Values{"client_id": {id}, "response_type": {"code"},
		"scope": {"openid"}, "state": {"x"}, "redirect_uri": {"https://evil.example/callback"}}.Encode()))
	waitNav(t, c, `document.getElementById("code") && document.getElementById("code").textContent === "invalid_redirect_uri"`)
	if got := browsertest.Eval[string](t, c, "location.href"); !strings.HasPrefix(got, s.OIDCIssuer(id)+"/authorize") {
		t.Errorf("a foreign redirect URI took the browser to %s", got)
	}
	screenshot(t, c, "screenshot-oidc-foreign-redirect.png")
}

// TestOIDCRefusals: in a room that admits at once, a code the site keeps
// unredeemed is refused with a wrong secret (invalid_client) and a wrong
// PKCE verifier (invalid_grant), neither spending it: with the right ones it
// then redeems.
func TestOIDCRefusals(t *testing.T) {
	s := stack(t, "")
	const id = "oidc-refusals"
	cfg := baseSettings(s)
	cfg["mode"] = "passthrough"
	site := newRP(t, s, id, cfg)
	site.capture = true

	v := visitor(t)
	do(t, v, chromedp.Navigate(site.srv.URL+"/protected"))
	waitNav(t, v, `document.body.id === "captured"`)
	code, verifier := site.lastCode(t)
	ctx := context.Background()

	wrong := site.conf
	wrong.ClientSecret = "not-the-origin-credential-0123456789abcdef"
	if _, err := wrong.Exchange(ctx, code, oauth2.VerifierOption(verifier)); oauthError(err) != "invalid_client" {
		t.Fatalf("wrong secret: %v, want invalid_client", err)
	}
	site.withSecret(credential(t, s, id))
	if _, err := site.conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); oauthError(err) != "invalid_grant" {
		t.Fatalf("wrong verifier: %v, want invalid_grant", err)
	}
	if n := stats(t, s, id, "active"); n != 0 {
		t.Fatalf("active sessions %v after refusals, want 0", n)
	}
	tok, err := site.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("the right secret and verifier: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if _, err := site.provider.Verifier(&oidc.Config{ClientID: id}).Verify(ctx, raw); err != nil {
		t.Fatalf("ID token: %v", err)
	}
	if n := stats(t, s, id, "active"); n != 1 {
		t.Fatalf("active sessions %v after the redemption, want 1", n)
	}
}

// credential is the room's origin credential, as the admin API shows it.
func credential(t *testing.T, s *localstack.Stack, room string) string {
	t.Helper()
	_, _, info := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+room, s.AdminKey(), nil)
	c, _ := info["originCredential"].(string)
	if c == "" {
		t.Fatalf("no origin credential for %s: %v", room, info)
	}
	return c
}
