package oidcapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// discoveryDoc is the provider's metadata (OpenID Connect Discovery 1.0 §3):
// the fields the specification requires, userinfo_endpoint (which an ALB
// needs) and what a client needs to pick its options.
type discoveryDoc struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	UserinfoEndpoint                  string   `json:"userinfo_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	SubjectTypesSupported             []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported  []string `json:"id_token_signing_alg_values_supported"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ClaimsSupported                   []string `json:"claims_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
}

// discovery is GET /oidc/{room}/.well-known/openid-configuration. It answers
// for a room that exists, whatever its settings: a room without redirect URIs
// refuses every authorization request instead.
func (h *API) discovery(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	if h.o.OIDC == nil {
		return events.APIGatewayV2HTTPResponse{}, errNoProvider
	}
	if _, err := h.o.Queue.GetConfig(ctx, r.Room); err != nil {
		return events.APIGatewayV2HTTPResponse{}, httpapi.ToError(err, roomhttp.Answers)
	}
	iss := Issuer(r)
	resp := httpapi.JSON(http.StatusOK, discoveryDoc{
		Issuer:                            iss,
		AuthorizationEndpoint:             iss + "/authorize",
		TokenEndpoint:                     iss + "/token",
		UserinfoEndpoint:                  iss + "/userinfo",
		JWKSURI:                           Base(r) + routes.JWKS.Path,
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{"authorization_code"},
		SubjectTypesSupported:             []string{"public"},
		IDTokenSigningAlgValuesSupported:  []string{"ES256"},
		ScopesSupported:                   []string{"openid"},
		ClaimsSupported:                   []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce"},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:     []string{"S256"},
	})
	// The same for every caller of this host: a relying party may keep it.
	resp.Headers["Cache-Control"] = "public, max-age=300"
	return resp, nil
}

// Limits of an authorization request's values: what the sealed request the
// waiting page carries in its URL can hold.
const (
	maxState = 1024
	maxNonce = 512
)

// pkceChallenge is an S256 code challenge: base64url of a SHA-256, 43
// characters (RFC 7636 §4.2).
var pkceChallenge = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// query parses a request's query (or form), refusing a parameter given twice
// (RFC 6749 §3.1): which one the sender meant is not known.
func query(raw string) (url.Values, bool) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, false
	}
	for _, vs := range q {
		if len(vs) > 1 {
			return nil, false
		}
	}
	return q, true
}

// authorize is GET /oidc/{room}/authorize, or POST with the parameters as a
// form (OpenID Connect Core §3.1.2.1).
// Before the redirect URI is known to be one of the room's, every error is a
// page for the visitor, never a redirect (RFC 6749 §4.1.2.1): a missing or
// wrong client_id, an unknown room, a redirect URI the room does not list.
// After it, errors go back to the relying party as error=… with its state.
// A valid request is sealed (token.AuthRequest) and the visitor sent to the
// waiting page of the room with it: /?room=<room>&oidc=<sealed>, on this
// host.
func (h *API) authorize(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.OIDC == nil {
		return none, pageError(errNoProvider)
	}
	raw := r.Event.RawQueryString
	if r.Event.RequestContext.HTTP.Method == http.MethodPost {
		raw = string(r.Body)
	}
	q, ok := query(raw)
	if !ok {
		return none, pageError(errBadRequest)
	}
	if q.Get("client_id") != r.Room {
		return none, pageError(errUnknownClient)
	}
	cfg, err := h.o.Queue.GetConfig(ctx, r.Room)
	if err != nil {
		return none, pageError(httpapi.ToError(err, roomhttp.Answers))
	}
	redirect := q.Get("redirect_uri")
	if !cfg.AllowsRedirect(redirect) {
		return none, pageError(errBadRedirect)
	}
	state := q.Get("state")
	back := func(code, description string) (events.APIGatewayV2HTTPResponse, error) {
		return redirectTo(redirect, url.Values{"error": {code}, "error_description": {description}}, state), nil
	}
	if len(state) > maxState {
		// The state cannot go back as it came; without it the relying party
		// can tie the error to nothing, so the visitor sees the page.
		return none, pageError(errBadRequest)
	}
	switch {
	case q.Get("response_type") != "code":
		return back("unsupported_response_type", "only the authorization code flow (response_type=code) is supported")
	case !slices.Contains(strings.Fields(q.Get("scope")), "openid"):
		return back("invalid_scope", "the scope must include openid")
	case q.Has("request") || q.Has("request_uri"):
		return back("request_not_supported", "request objects are not supported")
	case q.Has("response_mode") && q.Get("response_mode") != "query":
		return back("invalid_request", "only response_mode=query is supported")
	case slices.Contains(strings.Fields(q.Get("prompt")), "none"):
		// Admission is a visible wait: it cannot happen without the page.
		return back("login_required", "the visitor must wait in the room")
	case len(q.Get("nonce")) > maxNonce:
		return back("invalid_request", "nonce too long")
	case q.Has("code_challenge_method") && q.Get("code_challenge_method") != "S256":
		return back("invalid_request", "code_challenge_method must be S256")
	case q.Has("code_challenge") && !pkceChallenge.MatchString(q.Get("code_challenge")):
		return back("invalid_request", "code_challenge must be an S256 challenge (43 characters of base64url)")
	case q.Has("code_challenge_method") && !q.Has("code_challenge"):
		return back("invalid_request", "code_challenge_method without code_challenge")
	}
	sealed, err := h.o.OIDC.SealRequest(token.AuthRequest{
		Room: r.Room, RedirectURI: redirect, State: state, Nonce: q.Get("nonce"),
		Challenge: q.Get("code_challenge"), Expires: r.Now.Add(RequestTTL),
	})
	if err != nil {
		return back("invalid_request", "the request is too large")
	}
	resp := httpapi.NewResponse(http.StatusFound, "text/plain; charset=utf-8")
	resp.Headers["Location"] = "/?" + url.Values{"room": {r.Room}, "oidc": {sealed}}.Encode()
	resp.Headers["Referrer-Policy"] = "no-referrer"
	return resp, nil
}

// redirectTo is a 303 to the relying party's redirect URI with params and
// state added to its query (RFC 6749 §4.1.2: the URI's own query is kept).
func redirectTo(redirect string, params url.Values, state string) events.APIGatewayV2HTTPResponse {
	u, _ := url.Parse(redirect) // one of the room's: it parses
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	if state != "" {
		q.Set("state", state)
	}
	u.RawQuery = q.Encode()
	resp := httpapi.NewResponse(http.StatusSeeOther, "text/plain; charset=utf-8")
	resp.Headers["Location"] = u.String()
	resp.Headers["Referrer-Policy"] = "no-referrer"
	return resp
}

// continueFlow is POST /oidc/{room}/continue, the form the waiting page posts
// when a visitor who came through authorize is admitted: token (the entry
// token) and request (the sealed request). It checks the token as consume
// does (signature, issuer, key, time; its room the path's) without redeeming
// it, and answers 303 to the redirect URI with a code (token.Code: the grant,
// the request, CodeTTL) and the state. A request that is not valid any more
// (sealed for another room, past RequestTTL, or its redirect URI no longer
// the room's) is a page; an entry token that is not valid goes back to the
// relying party as access_denied.
func (h *API) continueFlow(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.OIDC == nil {
		return none, pageError(errNoProvider)
	}
	form, ok := query(string(r.Body))
	if !ok {
		return none, pageError(errBadRequest)
	}
	req, err := h.o.OIDC.OpenRequest(form.Get("request"), r.Room, r.Now)
	if err != nil {
		return none, pageError(errStaleRequest)
	}
	cfg, err := h.o.Queue.GetConfig(ctx, r.Room)
	if err != nil {
		return none, pageError(httpapi.ToError(err, roomhttp.Answers))
	}
	if !cfg.AllowsRedirect(req.RedirectURI) {
		return none, pageError(errBadRedirect)
	}
	c, err := roomhttp.VerifyEntry(h.o.Entries, r, form.Get("token"), false)
	switch {
	case errors.Is(err, httpapi.ErrTokenExpired):
		return redirectTo(req.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the visitor's turn expired before it was used"}}, req.State), nil
	case err != nil || c.Room != r.Room:
		return redirectTo(req.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the visitor was not admitted"}}, req.State), nil
	}
	code, err := h.o.OIDC.SealCode(token.Code{
		Room: r.Room, Seq: c.Seq, Visitor: c.Visitor, Audience: c.Audience,
		RedirectURI: req.RedirectURI, Nonce: req.Nonce, Challenge: req.Challenge,
		AuthTime: r.Now, Expires: r.Now.Add(CodeTTL),
	})
	if err != nil {
		return none, pageError(httpapi.InternalError(err))
	}
	return redirectTo(req.RedirectURI, url.Values{"code": {code}}, req.State), nil
}
