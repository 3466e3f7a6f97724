package localstack

import (
	"fmt"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// DemoOIDCRoomID is the room make dev sets up as an OpenID Connect provider
// (docs/GATE.md, "OpenID Connect"): its issuer is the waiting room's
// /oidc/demo-oidc, and it sends visitors back to an oauth2-proxy on
// OIDCDemoProxyAddr in front of the demo site.
const DemoOIDCRoomID = "demo-oidc"

// OIDCDemoProxyAddr is where the printed oauth2-proxy command listens: its
// default port, on this machine.
const OIDCDemoProxyAddr = "127.0.0.1:4180"

// oidcDemoRoom is the demo OIDC room's settings: 5 at a time, 60 a minute,
// the oauth2-proxy's callback its one redirect URI, and the proxy (the
// relying party) its origin.
func (s *Stack) oidcDemoRoom() room.Config {
	c := room.DefaultConfig()
	c.MaxActive, c.AdmitPerMinute = 5, 60
	c.OriginURL = "http://" + OIDCDemoProxyAddr + "/"
	c.OIDCRedirectURIs = []string{"http://" + OIDCDemoProxyAddr + "/oauth2/callback"}
	return c
}

// OIDCIssuer is the issuer of the room id on this stack.
func (s *Stack) OIDCIssuer(id string) string { return s.url + routes.OIDCPrefix + id }

// OIDCDemo is what make dev prints of the demo OIDC room: its issuer, its
// client secret (the room's origin credential) and an oauth2-proxy command
// that signs visitors in through it in front of the plain demo site (or, on a
// stack without it, oauth2-proxy's static page).
func (s *Stack) OIDCDemo() string {
	credential := s.credential
	upstream := "static://200"
	if s.plainURL != "" {
		upstream = s.plainURL + "/"
	}
	return fmt.Sprintf(`The room as an OpenID Connect provider (docs/GATE.md, "OpenID Connect"):
  issuer         %s  (room %s; client_id %s)
  client secret  %s  (the room's origin credential)
  redirect URI   http://%s/oauth2/callback
  oauth2-proxy as the relying party (then open http://%s/):
    oauth2-proxy --provider=oidc --oidc-issuer-url=%s \
      --client-id=%s --client-secret=%s \
      --redirect-url=http://%s/oauth2/callback --http-address=%s \
      --upstream=%s --email-domain='*' --oidc-email-claim=sub --code-challenge-method=S256 \
      --cookie-secret=$(openssl rand -hex 16) --cookie-secure=false --skip-provider-button
`, s.OIDCIssuer(DemoOIDCRoomID), DemoOIDCRoomID, DemoOIDCRoomID, credential(DemoOIDCRoomID),
		OIDCDemoProxyAddr, OIDCDemoProxyAddr, s.OIDCIssuer(DemoOIDCRoomID), DemoOIDCRoomID, credential(DemoOIDCRoomID),
		OIDCDemoProxyAddr, OIDCDemoProxyAddr, upstream)
}
