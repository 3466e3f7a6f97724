// Package bookingapi is the booking kit's HTTP API (docs/BOOKING.md): a
// visitor with a consumed entry session holds seats and units; the room's
// origin confirms, extends, releases and cancels server to server; the admin
// defines an event's inventory and reads its orders. internal/api routes
// requests here; httpapi answers errors.
package bookingapi

import (
	"context"
	"log/slog"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Engine is what the booking API needs of the booking engine.
type Engine interface {
	Define(ctx context.Context, event string, inv booking.Inventory) error
	View(ctx context.Context, event string) (booking.View, error)
	Room(ctx context.Context, event string) (string, error)
	HoldSession(ctx context.Context, event string, s booking.RoomSession, req booking.Request) (booking.Hold, error)
	Extend(ctx context.Context, event, session string, token, n int64) (booking.Extension, error)
	Confirm(ctx context.Context, event, session string, token int64, idempotencyKey string) (booking.OrderEvent, error)
	Release(ctx context.Context, event, session string, token int64) error
	Cancel(ctx context.Context, event, order, reason string) (booking.OrderEvent, error)
	Orders(ctx context.Context, event, cursor string) ([]booking.OrderEvent, string, error)
	Ack(ctx context.Context, event string, ids ...string) error
	EndSession(ctx context.Context, roomID string, seq int64) (int64, error)
	Rebuild(ctx context.Context, event string, orders []booking.SoldOrder, reopen bool) (booking.Rebuilt, error)
	Close(ctx context.Context, event string) (booking.Closed, error)
	Events(ctx context.Context) ([]string, error)
	// OrdersByMinute is for the rooms' reports (queueapi.OrderCounter).
	OrdersByMinute(ctx context.Context, roomID string) ([]room.OrderMinute, error)
}

// Options are the booking API's dependencies.
type Options struct {
	// Booking is the engine; nil: every booking route answers 404.
	Booking Engine
	// Sessions checks the booking session a hold carries; nil: none is valid.
	Sessions *token.BookingSessions
	// Orders publishes order events; nil: they wait in the outbox for the sweep.
	Orders booking.Publisher
	// Origins checks the origin credential of confirm, extend, release and cancel.
	Origins *token.Origins
	Logger  *slog.Logger
	// Audit keeps an admin write of an event (define, rebuild, close) in the audit
	// log of the event's room, naming the caller of the request
	// (queueapi.API.Record); nil: not kept.
	Audit func(ctx context.Context, r *httpapi.Request, roomID string, a room.AuditEntry)
}

// API serves the booking routes.
type API struct {
	o Options
}

// New returns the booking API over o.
func New(o Options) *API { return &API{o: o} }

// Handlers binds the booking routes (internal/routes) to their handlers,
// which answer the booking engine's errors (Answers) and the room's
// (roomhttp.Answers).
func (h *API) Handlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.EventView:         h.eventView,
		routes.EventHold:         h.holdSeats,
		routes.HoldConfirm:       h.confirmHold,
		routes.HoldExtend:        h.extendHold,
		routes.HoldRelease:       h.releaseHold,
		routes.OrderCancel:       h.cancelOrder,
		routes.AdminPutEvent:     h.putEvent,
		routes.AdminGetEvent:     h.getEvent,
		routes.AdminEventOrders:  h.eventOrders,
		routes.AdminRebuildEvent: h.rebuildEvent, // recovery.go
		routes.AdminCloseEvent:   h.closeEvent,   // recovery.go
		routes.AdminListEvents:   h.listEvents,   // recovery.go
	}, Answers, roomhttp.Answers)
}
