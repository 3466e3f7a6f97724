package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/netip"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
)

// EdgeReloadInterval is the least time between two reloads of the origin
// secret by one EdgeGuard.
const EdgeReloadInterval = time.Minute

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

// ViewerAddressHeader is the header in which CloudFront tells the origin the
// viewer's address (httpapi.ViewerAddressHeader).
const ViewerAddressHeader = httpapi.ViewerAddressHeader

// ParseViewerAddress returns the address part of a CloudFront-Viewer-Address
// value (httpapi.ParseViewerAddress).
func ParseViewerAddress(v string) (netip.Addr, bool) { return httpapi.ParseViewerAddress(v) }
