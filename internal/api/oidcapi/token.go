package oidcapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// tokenResponse is a successful token answer (RFC 6749 §5.1, OpenID Connect
// Core §3.1.3.3). There is no refresh token: a session that ends sends the
// visitor back through the room.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	IDToken     string `json:"id_token"`
	Scope       string `json:"scope"`
}

// pkceVerifier is a code verifier (RFC 7636 §4.1): 43 to 128 unreserved characters.
var pkceVerifier = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// client returns the client's id and secret (RFC 6749 §2.3.1): from HTTP
// Basic (each part form-encoded) or from the form, not both; basic says which.
func client(r *httpapi.Request, form url.Values) (id, secret string, basic, ok bool) {
	h := strings.TrimSpace(r.Header("authorization"))
	if len(h) > 6 && strings.EqualFold(h[:6], "basic ") {
		if form.Has("client_secret") {
			return "", "", true, false
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:]))
		if err != nil {
			return "", "", true, false
		}
		u, p, found := strings.Cut(string(raw), ":")
		id, err1 := url.QueryUnescape(u)
		secret, err2 := url.QueryUnescape(p)
		if !found || err1 != nil || err2 != nil || form.Has("client_id") && form.Get("client_id") != id {
			return "", "", true, false
		}
		return id, secret, true, true
	}
	return form.Get("client_id"), form.Get("client_secret"), false, form.Has("client_id") && form.Has("client_secret")
}

// token is POST /oidc/{room}/token (RFC 6749 §4.1.3, OpenID Connect Core
// §3.1.3): the client (the room, its origin credential as the secret)
// redeems a code. The code must be this provider's for the room, unexpired,
// for the same redirect URI, and with the PKCE verifier of its challenge
// (none without one). Its redemption is the consume of the grant it names:
// the first one turns the grant into a session, and any other (a replay, a
// code of a grant consumed or expired another way) is invalid_grant and
// admits nobody. The answer: an ID token whose exp is the session's end, an
// access token for userinfo that lives as long, no refresh token. Errors are
// OAuth's JSON (RFC 6749 §5.2).
func (h *API) token(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.OIDC == nil {
		return none, oauthError(errNoProvider)
	}
	form, ok := query(string(r.Body))
	if !ok {
		return none, oauthError(errInvalidRequest("the form is malformed or repeats a parameter"))
	}
	id, secret, basic, ok := client(r, form)
	if !ok {
		return none, oauthError(errInvalidRequest("client authentication: HTTP Basic or client_id and client_secret in the form, not both"))
	}
	if id != r.Room || h.o.Origins == nil || !h.o.Origins.Check(r.Room, secret) {
		return none, clientError(basic)
	}
	if form.Get("grant_type") != "authorization_code" {
		return none, oauthError(&httpapi.Error{Status: http.StatusBadRequest, Code: "unsupported_grant_type", Message: "only grant_type=authorization_code is supported"})
	}
	c, err := h.o.OIDC.OpenCode(form.Get("code"), r.Room, r.Now)
	if err != nil {
		return none, oauthError(errInvalidGrant("the code is invalid or expired"))
	}
	if form.Get("redirect_uri") != c.RedirectURI {
		return none, oauthError(errInvalidGrant("redirect_uri is not the authorization request's"))
	}
	if err := checkPKCE(c.Challenge, form); err != nil {
		return none, oauthError(err)
	}
	sess, err := h.o.Queue.Consume(ctx, r.Room, c.Seq, c.Audience)
	switch {
	case errors.Is(err, room.ErrAlreadyConsumed):
		return none, oauthError(errInvalidGrant("the code was used already"))
	case errors.Is(err, room.ErrGrantExpired), errors.Is(err, room.ErrUnknownGrant),
		errors.Is(err, room.ErrWrongAudience), errors.Is(err, room.ErrUnknownRoom):
		return none, oauthError(errInvalidGrant("the visitor's turn is over"))
	case err != nil:
		return none, oauthError(&httpapi.Error{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable",
			Message: "temporarily unavailable, retry shortly", Cause: err})
	}
	return h.tokens(r, c, sess)
}

// tokens is the answer to a redeemed code: the ID token and the access token
// of the session sess.
func (h *API) tokens(r *httpapi.Request, c token.Code, sess room.Session) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	end := sess.ExpiresAt
	idt, err := h.o.OIDC.IDToken(token.IDClaims{Issuer: Issuer(r), Subject: c.Visitor, Audience: r.Room,
		Nonce: c.Nonce, IssuedAt: r.Now, AuthTime: c.AuthTime, Expiry: end})
	if err != nil {
		// A session that ends within the second it starts, or a key
		// misconfiguration: the grant is spent either way.
		return none, oauthError(&httpapi.Error{Status: http.StatusInternalServerError, Code: "server_error", Message: "internal error", Cause: err})
	}
	access, err := h.o.OIDC.SealAccess(token.Access{Room: r.Room, Subject: c.Visitor, Expires: end})
	if err != nil {
		return none, oauthError(&httpapi.Error{Status: http.StatusInternalServerError, Code: "server_error", Message: "internal error", Cause: err})
	}
	resp := httpapi.JSON(http.StatusOK, tokenResponse{
		AccessToken: access, TokenType: "Bearer", IDToken: idt, Scope: "openid",
		ExpiresIn: max(1, int64(end.Sub(r.Now)/time.Second)),
	})
	resp.Headers["Pragma"] = "no-cache"
	return resp, nil
}

// checkPKCE checks the form's code_verifier against the code's challenge
// (RFC 7636 §4.6): S256, compared in constant time. A code issued without a
// challenge takes no verifier (a verifier then means a downgrade, RFC 9700
// §2.1.1).
func checkPKCE(challenge string, form url.Values) *httpapi.Error {
	v := form.Get("code_verifier")
	switch {
	case challenge == "" && form.Has("code_verifier"):
		return errInvalidGrant("code_verifier sent for a code issued without a code_challenge")
	case challenge == "":
		return nil
	case !pkceVerifier.MatchString(v):
		return errInvalidGrant("code_verifier missing or malformed")
	}
	sum := sha256.Sum256([]byte(v))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) != 1 {
		return errInvalidGrant("code_verifier does not match the code_challenge")
	}
	return nil
}

// userinfo is GET or POST /oidc/{room}/userinfo (OpenID Connect Core §5.3)
// with the access token the token route gave (Authorization: Bearer): the
// subject, until the session's end. It keeps no state, so it answers until
// then even after the site completed the session.
func (h *API) userinfo(_ context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.OIDC == nil {
		return none, oauthError(errNoProvider)
	}
	s, ok := r.Bearer()
	if !ok {
		return none, bearerError("")
	}
	a, err := h.o.OIDC.OpenAccess(s, r.Room, r.Now)
	if err != nil {
		return none, bearerError("invalid_token")
	}
	return httpapi.JSON(http.StatusOK, map[string]string{"sub": a.Subject}), nil
}
