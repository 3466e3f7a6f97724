// Package gateapi is the edge gate's routes on a protected site (docs/GATE.md).
// CloudFront sends /.vestibule/* to the API, so these routes answer the
// visitor's browser on the site's own host: POST /.vestibule/enter turns an
// entry token into the session cookie the gate checks, POST /.vestibule/leave
// ends the session, GET /.vestibule/renew extends an active visitor's session.
// A person sees the answers, so they are HTML pages, not JSON; the statuses
// are httpapi.ToError's, as everywhere. internal/api routes requests here.
package gateapi

import (
	"context"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Engine is what the gate's routes need of the room engine.
type Engine interface {
	GetConfig(ctx context.Context, room string) (room.Config, error)
	Consume(ctx context.Context, room string, seq int64, audience string) (room.Session, error)
	Renew(ctx context.Context, room string, seq int64, audience string, start time.Time) (room.Session, error)
	Complete(ctx context.Context, room string, seq int64, audience string) error
}

// Options are the gate routes' dependencies.
type Options struct {
	// Cookies signs and reads the session cookies; nil: every gate route
	// answers 404 (a page).
	Cookies *Cookies
	Queue   Engine
	Entries *token.Entries
	// EndHolds releases the holds of a session that leave ended, given
	// Complete's error (bookingapi.API.EndHolds); nil: nothing to release.
	EndHolds func(ctx context.Context, roomID string, seq int64, completeErr error)
}

// API serves the gate's routes.
type API struct {
	o Options
}

// New returns the gate's routes over o.
func New(o Options) *API { return &API{o: o} }

// Handlers binds the gate's routes (internal/routes) to their handlers,
// which answer the room engine's errors (roomhttp.Answers).
func (h *API) Handlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.GateEnter:     h.gateEnter,
		routes.GateLeave:     h.gateLeave,
		routes.GateLeavePage: h.gateLeavePage,
		routes.GateRenew:     h.gateRenew,
		routes.GateCheck:     h.gateCheck,
	}, roomhttp.Answers)
}

// endHolds calls Options.EndHolds, when set.
func (h *API) endHolds(ctx context.Context, roomID string, seq int64, completeErr error) {
	if h.o.EndHolds != nil {
		h.o.EndHolds(ctx, roomID, seq, completeErr)
	}
}
