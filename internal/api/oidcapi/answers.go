package oidcapi

import (
	"html"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
)

// The provider's own errors. Those a person sees (authorize, continue) are
// pages; those a relying party reads (token, userinfo) are OAuth's JSON.
var (
	errNoProvider    = &httpapi.Error{Status: http.StatusNotFound, Code: "unknown_route", Message: "this deployment has no OpenID Connect provider"}
	errBadRequest    = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the sign-in request is malformed"}
	errUnknownClient = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_client", Message: "client_id must be the room's id"}
	errBadRedirect   = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_redirect_uri", Message: "redirect_uri is not one of the room's oidcRedirectUris"}
	errStaleRequest  = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the sign-in request is not valid any more"}
)

func errInvalidRequest(msg string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: msg}
}

func errInvalidGrant(msg string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_grant", Message: msg}
}

// oauthBody is an OAuth error answer (RFC 6749 §5.2).
type oauthBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// renderOAuth answers e as OAuth's JSON: its code is the error. A 503 (Redis
// down) says temporarily_unavailable, a 500 server_error.
func renderOAuth(e *httpapi.Error) events.APIGatewayV2HTTPResponse {
	code := e.Code
	switch {
	case e.Status == http.StatusServiceUnavailable:
		code = "temporarily_unavailable"
	case e.Status >= 500:
		code = "server_error"
	case e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed || e.Status == http.StatusForbidden:
		// the router's refusals: not a request this route could take
	case !strings.Contains(oauthCodes, " "+code+" "):
		code = "invalid_request"
	}
	resp := httpapi.JSON(e.Status, oauthBody{Error: code, Description: e.Message})
	resp.Headers["Pragma"] = "no-cache"
	return resp
}

// oauthCodes are the error codes of RFC 6749 §5.2 and RFC 6750 §3.1 that an
// error keeps as it is.
const oauthCodes = " invalid_request invalid_client invalid_grant unauthorized_client unsupported_grant_type invalid_scope invalid_token unknown_route method_not_allowed forbidden body_too_large invalid_room "

// oauthError is e answered as OAuth's JSON.
func oauthError(e *httpapi.Error) error {
	c := *e // a copy: the package's errors are shared values
	c.Render = renderOAuth
	return &c
}

// clientError is invalid_client, 401 (RFC 6749 §5.2), with the challenge of
// the scheme the client used.
func clientError(basic bool) error {
	e := &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_client", Message: "client_id must be the room's id and client_secret its origin credential"}
	e.Render = func(e *httpapi.Error) events.APIGatewayV2HTTPResponse {
		resp := renderOAuth(e)
		if basic {
			resp.Headers["WWW-Authenticate"] = `Basic realm="vestibule"`
		}
		return resp
	}
	return e
}

// bearerError is userinfo's 401 (RFC 6750 §3): without a token, the
// challenge alone; with a bad one, error=invalid_token.
func bearerError(code string) error {
	e := &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_token", Message: "the access token is invalid or expired"}
	e.Render = func(e *httpapi.Error) events.APIGatewayV2HTTPResponse {
		resp := renderOAuth(e)
		challenge := `Bearer realm="vestibule"`
		if code != "" {
			challenge += `, error="` + code + `"`
		}
		resp.Headers["WWW-Authenticate"] = challenge
		return resp
	}
	return e
}

// ErrorAnswer is how the router answers its own errors (a method not
// allowed, a body too large, CloudFront's secret missing) on path: OAuth's
// JSON for token and userinfo, a page for the others that a person sees,
// nil (the API's JSON) off the provider's paths.
func ErrorAnswer(path string) func(*httpapi.Error) events.APIGatewayV2HTTPResponse {
	if !Path(path) {
		return nil
	}
	var as func(*httpapi.Error) error
	switch {
	case strings.HasSuffix(path, "/token") || strings.HasSuffix(path, "/userinfo"):
		as = oauthError
	case strings.HasSuffix(path, "/authorize") || strings.HasSuffix(path, "/continue"):
		as = pageError
	default:
		return nil
	}
	return func(e *httpapi.Error) events.APIGatewayV2HTTPResponse {
		if e.Render == nil { // the handlers' errors render themselves; the router's do not
			e = as(e).(*httpapi.Error)
		}
		return httpapi.ErrorResponse(e)
	}
}

// pageError is e shown to the visitor as a page.
func pageError(e *httpapi.Error) error {
	c := *e
	c.Render = renderPage
	return &c
}

// pageTexts are the pages' titles and sentences, by code (then by status).
var pageTexts = map[string][2]string{
	"invalid_redirect_uri": {"This sign-in link is not valid", "The site that sent you here is not set up for this waiting room. Go back to the site and try again, or tell its owner."},
	"invalid_client":       {"This sign-in link is not valid", "The site that sent you here named a waiting room it does not belong to. Go back to the site and try again."},
	"invalid_request":      {"This sign-in link is not valid", "Go back to the site and try again: it will send you to the waiting room afresh."},
	"unknown_room":         {"No such waiting room", "The site that sent you here names a waiting room that does not exist."},
	"unavailable":          {"Please try again in a moment", "We are briefly unable to let you in. Go back and try again in a few seconds."},
}

// renderPage is the provider's error page: escaped text, no script, no link
// to anywhere it was not told (the relying party's address is exactly what is
// in doubt).
func renderPage(e *httpapi.Error) events.APIGatewayV2HTTPResponse {
	txt, ok := pageTexts[e.Code]
	if !ok {
		txt = [2]string{"Something went wrong", "Go back to the site and try again."}
	}
	resp := httpapi.NewResponse(e.Status, "text/html; charset=utf-8")
	resp.Headers["Referrer-Policy"] = "no-referrer"
	resp.Headers["X-Frame-Options"] = "DENY"
	resp.Headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
	esc := html.EscapeString
	resp.Body = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>` + esc(txt[0]) + `</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}.code{color:#555;font-size:.875rem}</style>
</head>
<body>
<main>
<h1>` + esc(txt[0]) + `</h1>
<p>` + esc(txt[1]) + `</p>
<p class="code" id="code">` + esc(e.Code) + `</p>
</main>
</body>
</html>
`
	return resp
}
