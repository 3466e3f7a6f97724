package localstack_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// make dev serves the room as an OpenID Connect provider on the waiting
// room's host: the demo-oidc room's discovery names its issuer there, its
// authorize sends the printed oauth2-proxy's callback to the waiting page,
// and what make dev prints carries the issuer and the room's client secret.
func TestOIDCDemoRoom(t *testing.T) {
	s, err := localstack.Start(context.Background(), localstack.Options{KeyDir: t.TempDir(), StaticDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	iss := s.OIDCIssuer(localstack.DemoOIDCRoomID)
	code, _, doc := testkit.CallJSON(t, http.MethodGet, iss+"/.well-known/openid-configuration", "", nil)
	if code != 200 || doc["issuer"] != iss || doc["jwks_uri"] != s.URL()+"/api/jwks.json" {
		t.Fatalf("discovery: %d %v", code, doc)
	}
	callback := "http://" + localstack.OIDCDemoProxyAddr + "/oauth2/callback"
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(iss + "/authorize?" + url.Values{"client_id": {localstack.DemoOIDCRoomID},
		"redirect_uri": {callback}, "response_type": {"code"}, "scope": {"openid"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.Contains(loc, "room="+localstack.DemoOIDCRoomID) {
		t.Fatalf("authorize with the printed callback: %d %q", resp.StatusCode, loc)
	}
	_, _, info := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+localstack.DemoOIDCRoomID, s.AdminKey(), nil)
	secret, _ := info["originCredential"].(string)
	printed := s.OIDCDemo()
	for _, want := range []string{iss, "--client-secret=" + secret, "--redirect-url=" + callback, "--oidc-email-claim=sub"} {
		if secret == "" || !strings.Contains(printed, want) {
			t.Errorf("make dev prints no %q:\n%s", want, printed)
		}
	}
}
