package oidcapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/api/oidcapi"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// The relying party of these tests and the waiting room's host as make dev
// serves it.
const (
	callback = "https://app.example.com/oauth2/idpresponse"
	host     = "127.0.0.1:8080"
	verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636's example
)

// forEachRedis runs fn with a fixture whose handler has the provider on, on
// the single node and the cluster; more, unless nil, adds to its options.
func forEachRedis(t *testing.T, more func(o *api.Options), fn func(t *testing.T, f *apitest.Fixture)) {
	redistest.ForEach(t, func(t *testing.T, c redis.UniversalClient) {
		clk := testkit.FixedClock(time.Now().Truncate(time.Second))
		fn(t, apitest.NewFixtureOn(t, app.NewEngine(c, clk.Now), clk, func(k *token.Keys, o *api.Options) {
			p, err := token.NewOIDC(k.TicketSecret, o.Entries)
			if err != nil {
				t.Fatal(err)
			}
			o.OIDC = p
			if more != nil {
				more(o)
			}
		}))
	})
}

// get sends a GET to the waiting room's host.
func get(f *apitest.Fixture, path string, headers map[string]string) apitest.Response {
	h := map[string]string{"host": host}
	for k, v := range headers {
		h[k] = v
	}
	return f.Do("GET", path, "", h)
}

// post sends a form to the waiting room's host.
func post(f *apitest.Fixture, path string, form url.Values, headers map[string]string) apitest.Response {
	h := map[string]string{"host": host}
	for k, v := range headers {
		h[k] = v
	}
	ev := apitest.Event("POST", path, "", h)
	ev.Headers["content-type"] = "application/x-www-form-urlencoded"
	ev.Body = form.Encode()
	return f.Send(ev)
}

// authorizeURL is an authorization request of the room to the callback.
func authorizeURL(id string, extra url.Values) string {
	q := url.Values{"client_id": {id}, "redirect_uri": {callback}, "response_type": {"code"},
		"scope": {"openid"}, "state": {"st-1"}, "nonce": {"n-1"}}
	for k, v := range extra {
		q[k] = v
	}
	return "/oidc/" + id + "/authorize?" + q.Encode()
}

// wantPage checks a page answer: the status, the code shown, and no redirect.
func wantPage(t *testing.T, r apitest.Response, status int, code string) {
	t.Helper()
	if r.StatusCode != status || !strings.HasPrefix(r.Headers["Content-Type"], "text/html") || r.Headers["Location"] != "" ||
		!strings.Contains(r.Body, `id="code">`+code+`<`) || r.Headers["Cache-Control"] != "no-store" {
		t.Fatalf("got %d %v %s, want a %d page %s and no redirect", r.StatusCode, r.Headers, r.Body, status, code)
	}
}

// wantRedirectError checks an error sent back to the relying party.
func wantRedirectError(t *testing.T, r apitest.Response, code string) {
	t.Helper()
	u, err := url.Parse(r.Headers["Location"])
	if r.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(r.Headers["Location"], callback+"?") ||
		u.Query().Get("error") != code || u.Query().Get("state") != "st-1" || u.Query().Has("code") {
		t.Fatalf("got %d Location %q, want a 303 to the callback with error=%s and the state", r.StatusCode, r.Headers["Location"], code)
	}
}

// oauthErr is the OAuth error of a JSON answer.
func oauthErr(r apitest.Response) string { return apitest.Str(r.JSON, "error") }

// The discovery document has the fields OpenID Connect Discovery 1.0 §3
// requires, the userinfo endpoint an ALB needs, and says what the provider
// does; its issuer is the host the request came to.
func TestDiscovery(t *testing.T) {
	forEachRedis(t, nil, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"originUrl":"https://app.example.com/"}`)
		r := get(f, "/oidc/"+id+"/.well-known/openid-configuration", nil)
		if r.StatusCode != 200 {
			t.Fatalf("%d %s", r.StatusCode, r.Body)
		}
		iss := "http://" + host + "/oidc/" + id
		for k, want := range map[string]string{
			"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
			"userinfo_endpoint": iss + "/userinfo", "jwks_uri": "http://" + host + "/api/jwks.json",
		} {
			if got := r.Str(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		lists := map[string][]string{
			"response_types_supported": {"code"}, "subject_types_supported": {"public"},
			"id_token_signing_alg_values_supported": {"ES256"}, "code_challenge_methods_supported": {"S256"},
			"token_endpoint_auth_methods_supported": {"client_secret_basic", "client_secret_post"},
		}
		for k, want := range lists {
			b, _ := json.Marshal(r.JSON[k])
			w, _ := json.Marshal(want)
			if string(b) != string(w) {
				t.Errorf("%s = %s, want %s", k, b, w)
			}
		}
		// Another host, another issuer: the host is the waiting room's (and
		// over https off this machine).
		other := f.Do("GET", "/oidc/"+id+"/.well-known/openid-configuration", "", map[string]string{"host": "queue.example.com"})
		if other.Str("issuer") != "https://queue.example.com/oidc/"+id {
			t.Errorf("issuer on queue.example.com: %q", other.Str("issuer"))
		}
		apitest.WantStatus(t, get(f, "/oidc/no-such-room/.well-known/openid-configuration", nil), 404, "unknown_room")
	})
}

// Behind CloudFront the issuer is the viewer's host, which the /oidc/*
// behaviour's function copies into X-Forwarded-Host; without CloudFront's
// origin secret the header is not believed.
func TestIssuerBehindCloudFront(t *testing.T) {
	forEachRedis(t, func(o *api.Options) {
		o.Edge = api.NewEdgeGuard([]string{apitest.EdgeCurrent}, nil, nil)
	}, func(t *testing.T, f *apitest.Fixture) {
		id := apitest.NewRoom(t, f.H, `{"originUrl":"https://app.example.com/"}`)
		ev := func() events.APIGatewayV2HTTPRequest {
			return apitest.Event("GET", "/oidc/"+id+"/.well-known/openid-configuration", "", map[string]string{
				"host": "abc.execute-api.eu-west-1.amazonaws.com", "x-forwarded-host": "queue.example.com"})
		}
		if r := f.Send(apitest.ViaCloudFront(ev(), apitest.EdgeCurrent, "")); r.Str("issuer") != "https://queue.example.com/oidc/"+id {
			t.Errorf("via CloudFront: %d %s", r.StatusCode, r.Body)
		}
		apitest.WantStatus(t, f.Send(ev()), 403, "forbidden")
	})
}

// authorize refuses, with a page and never a redirect, a request whose
// client or redirect URI is not the room's; once the redirect URI is known,
// it sends errors back there with the state; a valid request is the room's
// waiting page with the request sealed.
func TestAuthorize(t *testing.T) {
	forEachRedis(t, nil, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"originUrl":"https://app.example.com/","oidcRedirectUris":["` + callback + `"]}`)
		bare := f.Room(`{"originUrl":"https://app.example.com/"}`)

		wantPage(t, get(f, authorizeURL(id, url.Values{"redirect_uri": {"https://evil.example/cb"}}), nil), 400, "invalid_redirect_uri")
		wantPage(t, get(f, authorizeURL(id, url.Values{"redirect_uri": {callback + "/"}}), nil), 400, "invalid_redirect_uri")
		wantPage(t, get(f, authorizeURL(id, url.Values{"redirect_uri": nil}), nil), 400, "invalid_redirect_uri")
		wantPage(t, get(f, authorizeURL(bare, nil), nil), 400, "invalid_redirect_uri")
		wantPage(t, get(f, authorizeURL(id, url.Values{"client_id": {bare}}), nil), 400, "invalid_client")
		wantPage(t, get(f, authorizeURL(id, nil)+"&redirect_uri=https%3A%2F%2Fevil.example%2Fcb", nil), 400, "invalid_request")
		wantPage(t, get(f, authorizeURL("gone", url.Values{"client_id": {"gone"}}), nil), 404, "unknown_room")
		wantPage(t, get(f, authorizeURL(id, url.Values{"state": {strings.Repeat("s", 1025)}}), nil), 400, "invalid_request")
		wantPage(t, f.Do("PUT", "/oidc/"+id+"/authorize", "", map[string]string{"host": host}), 405, "method_not_allowed")
		// POST takes the parameters as a form
		form, _ := url.ParseQuery(strings.SplitN(authorizeURL(id, nil), "?", 2)[1])
		if r := post(f, "/oidc/"+id+"/authorize", form, nil); r.StatusCode != http.StatusFound {
			t.Errorf("authorize by POST: %d %v %s", r.StatusCode, r.Headers, r.Body)
		}

		for _, c := range []struct {
			extra url.Values
			code  string
		}{
			{url.Values{"response_type": {"token"}}, "unsupported_response_type"},
			{url.Values{"scope": {"profile"}}, "invalid_scope"},
			{url.Values{"code_challenge": {"x"}, "code_challenge_method": {"plain"}}, "invalid_request"},
			{url.Values{"code_challenge": {"short"}}, "invalid_request"},
			{url.Values{"prompt": {"none"}}, "login_required"},
			{url.Values{"request": {"eyJ..."}}, "request_not_supported"},
			{url.Values{"response_mode": {"fragment"}}, "invalid_request"},
		} {
			wantRedirectError(t, get(f, authorizeURL(id, c.extra), nil), c.code)
		}

		r := get(f, authorizeURL(id, url.Values{"code_challenge": {s256(verifier)}, "code_challenge_method": {"S256"}}), nil)
		loc, _ := url.Parse(r.Headers["Location"])
		if r.StatusCode != http.StatusFound || loc == nil || loc.Path != "/" || loc.Host != "" || loc.Query().Get("room") != id || loc.Query().Get("oidc") == "" {
			t.Fatalf("a valid request: %d Location %q, want 302 to this host's waiting page", r.StatusCode, r.Headers["Location"])
		}
	})
}

// s256 is a verifier's S256 challenge.
func s256(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// flow is one visitor's way through the provider up to the code: authorize,
// the waiting page's join (a passthrough room admits at once) and continue.
type flow struct {
	request, entry, code string
}

func start(t *testing.T, f *apitest.Fixture, id string, extra url.Values) flow {
	t.Helper()
	r := get(f, authorizeURL(id, extra), nil)
	loc, err := url.Parse(r.Headers["Location"])
	if r.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorize: %d %v %s", r.StatusCode, r.Headers, r.Body)
	}
	fl := flow{request: loc.Query().Get("oidc")}
	j := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	if fl.entry = j.Str("entryToken"); fl.entry == "" {
		t.Fatalf("enqueue: %d %s", j.StatusCode, j.Body)
	}
	c := post(f, "/oidc/"+id+"/continue", url.Values{"token": {fl.entry}, "request": {fl.request}}, nil)
	back, err := url.Parse(c.Headers["Location"])
	if c.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(c.Headers["Location"], callback+"?") ||
		back.Query().Get("state") != "st-1" || back.Query().Get("code") == "" {
		t.Fatalf("continue: %d %v %s", c.StatusCode, c.Headers, c.Body)
	}
	fl.code = back.Query().Get("code")
	return fl
}

// redeem posts a code to the token route, the client authenticated by HTTP
// Basic with secret.
func redeem(f *apitest.Fixture, id, secret, code string, extra url.Values) apitest.Response {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {callback}}
	for k, v := range extra {
		form[k] = v
	}
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(secret)))
	return post(f, "/oidc/"+id+"/token", form, map[string]string{"authorization": "Basic " + basic})
}

// The code flow: the code redeems once, with the client's secret, its
// redirect URI and its PKCE verifier, into an ID token (signed by the entry
// key, ending with the session) and an access token userinfo answers for;
// the redemption is the grant's consume, so a replay admits nobody.
func TestCodeFlow(t *testing.T) {
	forEachRedis(t, nil, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"mode":"passthrough","sessionTTLSeconds":300,"originUrl":"https://app.example.com/","oidcRedirectUris":["` + callback + `"]}`)
		secret := f.Origins.Credential(id)
		fl := start(t, f, id, url.Values{"code_challenge": {s256(verifier)}, "code_challenge_method": {"S256"}})
		claims, err := f.Entries.Verify(fl.entry, f.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		pkce := url.Values{"code_verifier": {verifier}}

		// Refused before the consume: the grant is still there after each.
		if r := redeem(f, id, "wrong-secret", fl.code, pkce); r.StatusCode != 401 || oauthErr(r) != "invalid_client" || r.Headers["WWW-Authenticate"] == "" {
			t.Fatalf("wrong secret: %d %v %s", r.StatusCode, r.Headers, r.Body)
		}
		if r := redeem(f, id, secret, fl.code, url.Values{"code_verifier": {strings.Repeat("x", 43)}}); r.StatusCode != 400 || oauthErr(r) != "invalid_grant" {
			t.Fatalf("wrong verifier: %d %s", r.StatusCode, r.Body)
		}
		if r := redeem(f, id, secret, fl.code, nil); oauthErr(r) != "invalid_grant" {
			t.Fatalf("no verifier: %d %s", r.StatusCode, r.Body)
		}
		if r := redeem(f, id, secret, fl.code, url.Values{"code_verifier": {verifier}, "redirect_uri": {"https://app.example.com/other"}}); oauthErr(r) != "invalid_grant" {
			t.Fatalf("another redirect_uri: %d %s", r.StatusCode, r.Body)
		}
		if r := redeem(f, id, secret, fl.code+"x", pkce); oauthErr(r) != "invalid_grant" {
			t.Fatalf("a tampered code: %d %s", r.StatusCode, r.Body)
		}
		if r := redeem(f, id, secret, fl.code, url.Values{"code_verifier": {verifier}, "grant_type": {"refresh_token"}}); oauthErr(r) != "unsupported_grant_type" {
			t.Fatalf("another grant type: %d %s", r.StatusCode, r.Body)
		}
		if st, _ := f.Q.Stats(t.Context(), id); st.Active != 0 {
			t.Fatalf("a refused redemption consumed the grant: %+v", st)
		}

		// The redemption.
		r := redeem(f, id, secret, fl.code, pkce)
		if r.StatusCode != 200 || r.Str("token_type") != "Bearer" || r.Num("expires_in") != 300 || r.Headers["Cache-Control"] != "no-store" {
			t.Fatalf("token: %d %v %s", r.StatusCode, r.Headers, r.Body)
		}
		if st, _ := f.Q.Stats(t.Context(), id); st.Active != 1 {
			t.Fatalf("after the redemption: %+v, want one session", st)
		}
		idt, err := jwt.Parse(r.Str("id_token"), func(tk *jwt.Token) (any, error) {
			return publicKey(t, f, tk.Header["kid"]), nil
		}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithTimeFunc(f.Clock.Now),
			jwt.WithIssuer("http://"+host+"/oidc/"+id), jwt.WithAudience(id), jwt.WithSubject(claims.Visitor))
		if err != nil {
			t.Fatalf("ID token: %v", err)
		}
		mc := idt.Claims.(jwt.MapClaims)
		exp, _ := mc.GetExpirationTime()
		if mc["nonce"] != "n-1" || !exp.Equal(f.Clock.Now().Add(300*time.Second)) {
			t.Errorf("ID token claims %v, want the nonce and exp at the session's end", mc)
		}

		// A replay: invalid_grant, and nobody more is admitted.
		if r := redeem(f, id, secret, fl.code, pkce); r.StatusCode != 400 || oauthErr(r) != "invalid_grant" {
			t.Fatalf("replay: %d %s", r.StatusCode, r.Body)
		}
		if st, _ := f.Q.Stats(t.Context(), id); st.Active != 1 {
			t.Fatalf("after the replay: %+v, want still one session", st)
		}

		// A code past its minute, a code of another room: invalid_grant.
		late := start(t, f, id, nil)
		f.Clock.Advance(oidcapi.CodeTTL)
		if r := redeem(f, id, secret, late.code, nil); oauthErr(r) != "invalid_grant" {
			t.Fatalf("an expired code: %d %s", r.StatusCode, r.Body)
		}
		other := f.Room(`{"mode":"passthrough","originUrl":"https://app.example.com/","oidcRedirectUris":["` + callback + `"]}`)
		if r := redeem(f, other, f.Origins.Credential(other), start(t, f, id, nil).code, nil); oauthErr(r) != "invalid_grant" {
			t.Fatalf("another room's code: %d %s", r.StatusCode, r.Body)
		}

		// userinfo answers for the access token until the session's end.
		tokens := redeemOK(t, f, id, secret)
		ui := get(f, "/oidc/"+id+"/userinfo", apitest.Bearer(tokens.Str("access_token")))
		if ui.StatusCode != 200 || ui.Str("sub") == "" {
			t.Fatalf("userinfo: %d %s", ui.StatusCode, ui.Body)
		}
		if ui := post(f, "/oidc/"+id+"/userinfo", nil, apitest.Bearer(tokens.Str("access_token"))); ui.StatusCode != 200 {
			t.Fatalf("userinfo by POST: %d %s", ui.StatusCode, ui.Body)
		}
		if ui := get(f, "/oidc/"+id+"/userinfo", apitest.Bearer(fl.code)); ui.StatusCode != 401 || !strings.Contains(ui.Headers["WWW-Authenticate"], "invalid_token") {
			t.Fatalf("userinfo with a code: %d %v", ui.StatusCode, ui.Headers)
		}
		if ui := get(f, "/oidc/"+id+"/userinfo", nil); ui.StatusCode != 401 || ui.Headers["WWW-Authenticate"] != `Bearer realm="vestibule"` {
			t.Fatalf("userinfo without a token: %d %v", ui.StatusCode, ui.Headers)
		}
		f.Clock.Advance(300 * time.Second)
		if ui := get(f, "/oidc/"+id+"/userinfo", apitest.Bearer(tokens.Str("access_token"))); ui.StatusCode != 401 {
			t.Fatalf("userinfo past the session's end: %d %s", ui.StatusCode, ui.Body)
		}
	})
}

// redeemOK runs a whole flow without PKCE, the client authenticated in the
// form, and returns the token answer.
func redeemOK(t *testing.T, f *apitest.Fixture, id, secret string) apitest.Response {
	t.Helper()
	fl := start(t, f, id, nil)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {fl.code}, "redirect_uri": {callback},
		"client_id": {id}, "client_secret": {secret}}
	ok := post(f, "/oidc/"+id+"/token", form, nil)
	if ok.StatusCode != 200 {
		t.Fatalf("token with client_secret_post: %d %s", ok.StatusCode, ok.Body)
	}
	// a verifier for a code issued without a challenge is a downgrade
	form.Set("code", start(t, f, id, nil).code)
	form.Set("code_verifier", verifier)
	if r := post(f, "/oidc/"+id+"/token", form, nil); oauthErr(r) != "invalid_grant" {
		t.Fatalf("a verifier without a challenge: %d %s", r.StatusCode, r.Body)
	}
	return ok
}

// publicKey is the JWKS key the kid names.
func publicKey(t *testing.T, f *apitest.Fixture, kid any) any {
	t.Helper()
	b, err := f.Entries.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []map[string]string }
	_ = json.Unmarshal(b, &set)
	for _, k := range set.Keys {
		if k["kid"] == kid {
			x, _ := base64.RawURLEncoding.DecodeString(k["x"])
			y, _ := base64.RawURLEncoding.DecodeString(k["y"])
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				t.Fatal(err)
			}
			return pub
		}
	}
	t.Fatalf("no JWKS key %v", kid)
	return nil
}

// Redis down: authorize is a 503 page, token a 503 temporarily_unavailable,
// both with Retry-After; nothing is redirected and no code is spent.
func TestRedisDown(t *testing.T) {
	closed, err := testkit.FreePort() // nothing listens here
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := app.NewRedis(fmt.Sprintf("redis://127.0.0.1:%d", closed), false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	var p *token.OIDC
	f := apitest.NewFixtureOn(t, app.NewEngine(rdb, clk.Now), clk, func(k *token.Keys, o *api.Options) {
		p, _ = token.NewOIDC(k.TicketSecret, o.Entries)
		o.OIDC = p
	})
	r := get(f, authorizeURL("r1", nil), nil)
	wantPage(t, r, http.StatusServiceUnavailable, "unavailable")
	if r.Headers["Retry-After"] == "" {
		t.Errorf("authorize: no Retry-After: %v", r.Headers)
	}
	code, err := p.SealCode(token.Code{Room: "r1", Seq: 1, Visitor: "v", Audience: "https://app.example.com/",
		RedirectURI: callback, AuthTime: clk.Now(), Expires: clk.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	r = redeem(f, "r1", f.Origins.Credential("r1"), code, nil)
	if r.StatusCode != http.StatusServiceUnavailable || oauthErr(r) != "temporarily_unavailable" || r.Headers["Retry-After"] == "" {
		t.Errorf("token: %d %v %s", r.StatusCode, r.Headers, r.Body)
	}
}
