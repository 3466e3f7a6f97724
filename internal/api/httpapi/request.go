// Package httpapi is what every product of the HTTP API shares: the request a
// route handler sees, the JSON answers, the one table that turns errors into
// statuses (ToError), and the checks of entry tokens and origin credentials
// that more than one product makes. The products (queueapi, bookingapi,
// gateapi) build on it; internal/api composes them behind one router.
package httpapi

import (
	"context"
	"net/netip"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// HandlerFunc answers one route. An error is answered by ToError.
type HandlerFunc func(ctx context.Context, r *Request) (events.APIGatewayV2HTTPResponse, error)

// Request is what a route handler sees of an API Gateway event.
type Request struct {
	Event *events.APIGatewayV2HTTPRequest
	Room  string     // the {room} path parameter, when the route has one
	Path  PathParams // every path parameter
	Body  []byte     // decoded, within the route's limit
	Now   time.Time
	// ViaEdge is true when the request carried CloudFront's origin header.
	ViaEdge bool
}

// PathParams are the path's captured segments; each is "" when the route has
// no such parameter.
type PathParams struct {
	Room, Event, Token, Order string
	// Rest is what a route's last segment "{path+}" captured: the rest of
	// the path as sent.
	Rest string
}

// Header returns a request header. API Gateway lower-cases header names in
// payload 2.0; the lookup tolerates other casings from hand-made events.
func (r *Request) Header(name string) string {
	if v, ok := r.Event.Headers[name]; ok {
		return v
	}
	for k, v := range r.Event.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Bearer returns the token of an "Authorization: Bearer <token>" header.
func (r *Request) Bearer() (string, bool) {
	h := strings.TrimSpace(r.Header("authorization"))
	const p = "bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	t := strings.TrimSpace(h[len(p):])
	return t, t != ""
}

// ViewerAddressHeader is the header in which CloudFront tells the origin the
// viewer's address and source port ("198.51.100.10:46532", or for IPv6 the
// address without brackets followed by ":port"). The /api/* behaviour's origin
// request policy forwards it; a viewer can send one too, so it is believed
// only on a request that carries the origin secret (Request.ViaEdge).
const ViewerAddressHeader = "CloudFront-Viewer-Address"

// ClientAddress is the address the per-client enqueue limit keys on: the
// viewer's address from CloudFront-Viewer-Address when the request carries the
// origin secret, so it provably came through CloudFront, which sets that
// header itself; otherwise (no edge guard, as locally, or an unparseable
// header) the address API Gateway saw. Behind CloudFront that is an edge
// server shared by many visitors, which is why the header matters.
func (r *Request) ClientAddress() string {
	if r.ViaEdge {
		if a, ok := ParseViewerAddress(r.Header(strings.ToLower(ViewerAddressHeader))); ok {
			return a.String()
		}
	}
	return r.Event.RequestContext.HTTP.SourceIP
}

// ParseViewerAddress returns the address part of a CloudFront-Viewer-Address
// value: "198.51.100.10:46532", "2001:db8::1:46532" (IPv6 without brackets,
// then the port) or "[2001:db8::1]:46532". The port is always present in what
// CloudFront sends, so the text after the last colon is taken as the port.
func ParseViewerAddress(v string) (netip.Addr, bool) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") {
		ap, err := netip.ParseAddrPort(v)
		if err != nil {
			return netip.Addr{}, false
		}
		return ap.Addr().Unmap(), true
	}
	i := strings.LastIndexByte(v, ':')
	if i <= 0 || i == len(v)-1 || len(v)-i-1 > 5 {
		return netip.Addr{}, false
	}
	for _, c := range v[i+1:] {
		if c < '0' || c > '9' {
			return netip.Addr{}, false
		}
	}
	a, err := netip.ParseAddr(v[:i])
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
