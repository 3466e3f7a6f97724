package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/config"
)

// ViewerAddressHeader is the header in which CloudFront tells the origin the
// viewer's address and source port ("198.51.100.10:46532", or for IPv6 the
// address without brackets followed by ":port"). The /api/* behaviour's origin
// request policy forwards it; a viewer can send one too, so it is believed
// only on a request that carries the origin secret (EdgeGuard).
const ViewerAddressHeader = "CloudFront-Viewer-Address"

// EdgeReloadInterval is the least time between two reloads of the origin
// secret by one EdgeGuard.
const EdgeReloadInterval = time.Minute

// errForbidden answers a public route reached without CloudFront's origin header.
var errForbidden = &apiError{status: http.StatusForbidden, code: "forbidden",
	message: "call this API through the waiting room's CloudFront address"}

// EdgeGuard checks the origin header that CloudFront adds to every request it
// sends to the API (config.OriginHeader), so the public routes answer only
// requests that came through CloudFront (its WAF and its cache) and the
// viewer's address header can be believed.
//
// It accepts any of its values, the current and the previous value of the
// secret, so the secret rotates without a refused request: CloudFront keeps
// sending the old value, which stays accepted, until it is deployed with the
// new one. A value it does not know makes it reload the values (at most once
// per EdgeReloadInterval), so an instance started before a rotation learns the
// new value when CloudFront starts sending it.
type EdgeGuard struct {
	reload func(context.Context) ([]string, error)
	clock  func() time.Time

	mu         sync.RWMutex
	sums       [][32]byte
	lastReload time.Time
}

// NewEdgeGuard returns a guard accepting values (empty ones are ignored).
// reload, if not nil, fetches the values again when a request carries one the
// guard does not know. clock nil is time.Now.
func NewEdgeGuard(values []string, reload func(context.Context) ([]string, error), clock func() time.Time) *EdgeGuard {
	if clock == nil {
		clock = time.Now
	}
	g := &EdgeGuard{reload: reload, clock: clock}
	g.set(values)
	return g
}

func (g *EdgeGuard) set(values []string) {
	var sums [][32]byte
	for _, v := range values {
		if v != "" {
			sums = append(sums, sha256.Sum256([]byte(v)))
		}
	}
	g.mu.Lock()
	g.sums = sums
	g.mu.Unlock()
}

// known compares digests, in constant time for each accepted value.
func (g *EdgeGuard) known(got string) bool {
	sum := sha256.Sum256([]byte(got))
	g.mu.RLock()
	defer g.mu.RUnlock()
	ok := 0
	for _, s := range g.sums {
		ok |= subtle.ConstantTimeCompare(sum[:], s[:])
	}
	return ok == 1
}

// Verify reports whether got is one of the accepted values. An empty value
// is never accepted and never causes a reload: only a request that carries
// the header at all (CloudFront after a rotation, or someone guessing, at
// most once a minute) costs a Secrets Manager call.
func (g *EdgeGuard) Verify(ctx context.Context, got string) bool {
	if got == "" {
		return false
	}
	if g.known(got) {
		return true
	}
	if g.reload == nil {
		return false
	}
	g.mu.Lock()
	due := g.clock().Sub(g.lastReload) >= EdgeReloadInterval
	if due {
		g.lastReload = g.clock()
	}
	g.mu.Unlock()
	if !due {
		return false
	}
	values, err := g.reload(ctx)
	if err != nil {
		// Keep the values we have: a failed reload must not lock CloudFront out.
		return false
	}
	g.set(values)
	return g.known(got)
}

// checkEdge refuses a public route without the origin header when the handler
// has an EdgeGuard, and records whether the request provably came through
// CloudFront.
func (h *Handler) checkEdge(ctx context.Context, r *request) *apiError {
	if h.o.Edge == nil {
		return nil
	}
	if !h.o.Edge.Verify(ctx, r.header(strings.ToLower(config.OriginHeader))) {
		return errForbidden
	}
	r.viaEdge = true
	return nil
}

// clientAddress is the address the per-client enqueue limit keys on: the
// viewer's address from CloudFront-Viewer-Address when the request carries the
// origin secret, so it provably came through CloudFront, which sets that
// header itself; otherwise (no EdgeGuard, as locally, or an unparseable
// header) the address API Gateway saw. Behind CloudFront that is an edge
// server shared by many visitors, which is why the header matters.
func (r *request) clientAddress() string {
	if r.viaEdge {
		if a, ok := ParseViewerAddress(r.header(strings.ToLower(ViewerAddressHeader))); ok {
			return a.String()
		}
	}
	return r.ev.RequestContext.HTTP.SourceIP
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
