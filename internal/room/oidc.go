package room

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
)

// The room as an OpenID Connect provider (docs/GATE.md, "OpenID Connect"): a
// relying party (an ALB's authenticate-oidc action, oauth2-proxy) sends its
// visitors to the room's authorize route with one of the room's redirect URIs,
// and gets the visitor back there with a code once the room admits them.

// MaxOIDCRedirectURIs is the most redirect URIs a room lists.
const MaxOIDCRedirectURIs = 10

// MaxOIDCRedirectURILen is the longest redirect URI a room accepts.
const MaxOIDCRedirectURILen = 512

// checkRedirectURIs says why uris are not a room's oidcRedirectUris, "" when
// they are: at most MaxOIDCRedirectURIs, each once, each an absolute https
// URL (http only on localhost or 127.0.0.1, which the waiting page's form may
// go to in development) without a fragment or credentials. A relying party's
// redirect_uri must equal one of them exactly (RFC 6749 §3.1.2, OAuth 2.0
// Security BCP §4.1.3): no prefix, no pattern.
func checkRedirectURIs(uris []string) string {
	if len(uris) > MaxOIDCRedirectURIs {
		return fmt.Sprintf("%d URIs, at most %d", len(uris), MaxOIDCRedirectURIs)
	}
	for i, s := range uris {
		if reason := checkRedirectURI(s); reason != "" {
			return fmt.Sprintf("%q %s", s, reason)
		}
		if slices.Contains(uris[:i], s) {
			return fmt.Sprintf("%q is listed twice", s)
		}
	}
	return ""
}

// checkRedirectURI says why s is not a redirect URI, "" when it is one.
func checkRedirectURI(s string) string {
	if len(s) > MaxOIDCRedirectURILen {
		return fmt.Sprintf("is longer than %d characters", MaxOIDCRedirectURILen)
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return "is not an absolute URL"
	}
	if reason := checkURL(s, u); reason != "" {
		return reason
	}
	switch {
	case u.Fragment != "" || u.RawFragment != "" || len(s) > 0 && s[len(s)-1] == '#':
		return "has a fragment (RFC 6749 §3.1.2 forbids one)"
	case u.Scheme == "https":
	case u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1"):
	default:
		return "must be https:// (plain http:// only on localhost or 127.0.0.1, in development)"
	}
	return ""
}

// AllowsRedirect reports whether uri is exactly one of the room's OIDC
// redirect URIs.
func (c Config) AllowsRedirect(uri string) bool {
	return uri != "" && slices.Contains(c.OIDCRedirectURIs, uri)
}

// encodeRedirectURIs is the list as the settings hash stores it: its JSON,
// "" for none.
func encodeRedirectURIs(uris []string) string {
	if len(uris) == 0 {
		return ""
	}
	b, _ := json.Marshal(uris) // a []string always marshals
	return string(b)
}

// decodeRedirectURIs reads the settings hash's list; "" or anything else that
// is not a JSON list of strings is none, so a room fails closed: no relying
// party can be sent back anywhere.
func decodeRedirectURIs(s string) []string {
	var uris []string
	if s == "" || json.Unmarshal([]byte(s), &uris) != nil || len(uris) == 0 {
		return nil
	}
	return uris
}
