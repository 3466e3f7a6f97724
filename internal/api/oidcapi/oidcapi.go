// Package oidcapi is the room as an OpenID Connect provider (docs/GATE.md,
// "OpenID Connect"): the authorization-code flow, so that a relying party
// that speaks OIDC (an ALB listener rule's authenticate-oidc action,
// oauth2-proxy, a site's own OIDC library) sends an unauthenticated visitor
// through the waiting room and takes the admission as the sign-in.
//
// The issuer of room R is <waiting room>/oidc/R; the client is the room
// (client_id R, client_secret its origin credential); the subject is the
// visitor. authorize validates the request and shows the waiting page with it
// sealed; on admission the page posts the entry token and the request to
// continue, which sends the visitor to the redirect URI with a one-time code;
// token redeems the code by consuming the grant (so the code is one-time as
// the grant is, I2) and answers an ID token that ends with the session. The
// provider keeps no state of its own: what it hands out is sealed
// (token.OIDC).
package oidcapi

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Engine is what the provider needs of the room engine.
type Engine interface {
	GetConfig(ctx context.Context, room string) (room.Config, error)
	Consume(ctx context.Context, room string, seq int64, audience string) (room.Session, error)
}

// Options are the provider's dependencies.
type Options struct {
	Queue   Engine
	Entries *token.Entries // verifies the entry token the waiting page posts
	Origins *token.Origins // the client secrets: the rooms' origin credentials
	// OIDC seals requests, codes and access tokens and signs ID tokens; nil:
	// every route of the provider answers 404.
	OIDC *token.OIDC
}

// API serves the provider's routes.
type API struct{ o Options }

// New returns the provider's routes over o.
func New(o Options) *API { return &API{o: o} }

// How long what the provider hands out lives.
const (
	// RequestTTL bounds the wait between authorize and admission: a place's
	// ticket lives as long (24 h); the relying party's own state (its
	// cookie) usually expires sooner, and its own error then says so.
	RequestTTL = 24 * time.Hour
	// CodeTTL is an authorization code's life (RFC 6749 §4.1.2: short, at
	// most 10 minutes); a relying party redeems it at once.
	CodeTTL = 60 * time.Second
)

// Handlers binds the provider's routes (internal/routes) to their handlers.
func (h *API) Handlers() map[routes.Route]httpapi.HandlerFunc {
	return map[routes.Route]httpapi.HandlerFunc{
		routes.OIDCDiscovery:     h.discovery,
		routes.OIDCAuthorize:     h.authorize,
		routes.OIDCAuthorizePost: h.authorize,
		routes.OIDCContinue:      h.continueFlow,
		routes.OIDCToken:         h.token,
		routes.OIDCUserinfo:      h.userinfo,
		routes.OIDCUserinfoPost:  h.userinfo,
	}
}

// siteHeader is the header that names the waiting room's host when the
// request comes through CloudFront, which sends the API its own Host: the
// distribution's /oidc/* behaviour copies the viewer's Host into it
// (infra/stack). It is believed only on a request that carries CloudFront's
// origin secret (httpapi.Request.ViaEdge).
const siteHeader = "x-forwarded-host"

// Base is the waiting room's URL as the request reached it, without a final
// "/": https://<the viewer's host> behind CloudFront; without it (make dev,
// tests) the Host header, over plain http on a loopback host.
func Base(r *httpapi.Request) string {
	host := r.Header("host")
	if h := r.Header(siteHeader); h != "" && r.ViaEdge {
		first, _, _ := strings.Cut(h, ",")
		host = strings.TrimSpace(first)
	}
	scheme := "https"
	if !r.ViaEdge && loopbackHost(host) {
		scheme = "http"
	}
	return scheme + "://" + host
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	h := hostport
	if name, _, err := net.SplitHostPort(hostport); err == nil {
		h = name
	}
	return room.Loopback(strings.Trim(h, "[]"))
}

// Issuer is the issuer of the request's room: <Base>/oidc/<room>.
func Issuer(r *httpapi.Request) string {
	return Base(r) + strings.TrimSuffix(routes.OIDCPrefix, "/") + "/" + r.Room
}

// Path reports whether path is under the provider's prefix.
func Path(path string) bool { return strings.HasPrefix(path, routes.OIDCPrefix) }
