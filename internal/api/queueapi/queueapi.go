// Package queueapi is the waiting room's HTTP API: a visitor's enqueue, poll,
// leave and status; the origin's consume and complete of an entry token and
// the token keys (jwks); and the admin routes of rooms, with their audit trail
// (docs/API.md). internal/api routes requests here; httpapi answers errors.
package queueapi

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// TicketTTL is how long a ticket stays valid: longer than any sensible wait,
// short enough that a leaked one goes stale by the next on-sale.
const TicketTTL = 24 * time.Hour

// Engine is what the queue API needs of the room engine (durable.Queue, over
// room.Engine): every route's call, so no handler asks whether the engine can
// do one.
type Engine interface {
	Join(ctx context.Context, room, visitor string, proof room.JoinProof) (room.Place, error)
	Poll(ctx context.Context, t room.Ticket) (room.Place, error)
	Leave(ctx context.Context, t room.Ticket) error
	Status(ctx context.Context, room string) (room.Config, room.Stats, error)
	Consume(ctx context.Context, room string, seq int64, audience string) (room.Session, error)
	Complete(ctx context.Context, room string, seq int64, audience string) error
	GetConfig(ctx context.Context, room string) (room.Config, error)
	PutConfig(ctx context.Context, room string, cfg room.Config) (room.Config, error)
	Rooms(ctx context.Context) ([]string, error)
	Drain(ctx context.Context, room string) (int64, error)
	// ClaimRegion gives the room to this deployment's region at a failover
	// (vestibule region failover).
	ClaimRegion(ctx context.Context, room string) (room.RegionClaim, error)
	History(ctx context.Context, room string) ([]room.HistoryPoint, error)
	// Delete removes a room for good (DELETE /api/admin/rooms/{room});
	// room.ErrCannotDelete when the settings store cannot (501).
	Delete(ctx context.Context, room string) error
	// The room's audit log of admin changes (audit.go).
	AppendAudit(ctx context.Context, room string, e room.AuditEntry) error
	Audit(ctx context.Context, room string) ([]room.AuditEntry, error)
	// Scheduled changes (schedule.go): the admission ticks apply them at
	// their time (docs/OPERATING.md, "Scheduled changes").
	Schedule(ctx context.Context, room string) ([]room.ScheduledChange, error)
	PutScheduled(ctx context.Context, room string, c room.ScheduledChange) error
	LeaseScheduled(ctx context.Context, room, id string) (room.ScheduledChange, string, error)
	ReleaseScheduled(ctx context.Context, room, id, token string) error
	RemoveScheduled(ctx context.Context, room, id, token string) error
	// Invitations and the support's lookups (invitations.go).
	Invitation(ctx context.Context, room, id string) (room.InvitationState, error)
	RevokeInvitation(ctx context.Context, room, id string) (time.Time, error)
	Visitor(ctx context.Context, room, visitor string) (room.VisitorState, error)
	RestorePlace(ctx context.Context, room, visitor string) (room.VisitorState, error)
	// ReportLoad records the origin's load (load.go).
	ReportLoad(ctx context.Context, room string, load float64) error
}

// Options are the queue API's dependencies; every field but EndHolds is set
// (internal/api fills in the defaults).
type Options struct {
	Queue      Engine
	Tickets    *token.Tickets
	Entries    *token.Entries
	Challenges *challenge.Challenges
	// Origins checks the per-room origin credential that consume and complete
	// require; nil: no caller is the origin.
	Origins *token.Origins
	// Sessions issues the booking session that consume hands the origin; nil: none.
	Sessions *token.BookingSessions
	// EndHolds releases the holds of a session that complete ended, given
	// Complete's error (bookingapi.API.EndHolds); nil: nothing to release.
	EndHolds func(ctx context.Context, roomID string, seq int64, completeErr error)
	// Orders counts the orders of a room's booking events for its report;
	// nil: the report has none.
	Orders OrderCounter

	// Notices is the deployment's offer of notices (push, email), which an
	// enqueue answer carries in a room that offers them; nil: none.
	Notices *notice.Offer

	AdminAuth    config.AdminAuth // names the caller in the audit trail
	DefaultRoom  room.Config      // the base of an admin PUT of a new room
	TickInterval time.Duration
	Clock        func() time.Time
	Logger       *slog.Logger
	Jitter       func() float64
}

// API serves the queue's routes.
type API struct {
	o Options
}

// New returns the queue API over o.
func New(o Options) *API { return &API{o: o} }

// Handlers binds the queue's routes (internal/routes) to their handlers,
// which answer the room engine's errors (roomhttp.Answers): every function's
// (EnqueueHandlers, PollHandlers, StatusHandlers, ConsumeHandlers,
// AdminHandlers).
func (h *API) Handlers() map[routes.Route]httpapi.HandlerFunc {
	all := h.EnqueueHandlers()
	for _, m := range []map[routes.Route]httpapi.HandlerFunc{h.PollHandlers(), h.StatusHandlers(), h.ConsumeHandlers(), h.AdminHandlers()} {
		maps.Copy(all, m)
	}
	return all
}

// The queue's routes of each function, bound apart so that a function's
// bootstrap links the handlers of its own routes and not the others'.

// EnqueueHandlers binds the enqueue function's route.
func (h *API) EnqueueHandlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.RoomEnqueue: h.enqueue,
	}, roomhttp.Answers)
}

// PollHandlers binds the poll function's queue routes (its notices' are noticeapi's).
func (h *API) PollHandlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.RoomPoll:  h.poll,
		routes.RoomLeave: h.leave,
	}, roomhttp.Answers)
}

// StatusHandlers binds the status function's routes.
func (h *API) StatusHandlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.RoomStatus: h.status,
		routes.JWKS:       h.jwks,
	}, roomhttp.Answers)
}

// ConsumeHandlers binds the consume function's queue routes (its gate's and
// OIDC provider's are gateapi's and oidcapi's).
func (h *API) ConsumeHandlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.EntryConsume:  h.consume,
		routes.EntryComplete: h.complete,
	}, roomhttp.Answers)
}

// AdminHandlers binds the admin function's routes of rooms (its notices'
// are noticeapi's).
func (h *API) AdminHandlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.AdminPutRoom:     h.putRoomAudited, // audit.go
		routes.AdminDeleteRoom:  h.deleteRoom,     // admin_delete.go
		routes.AdminRoomLog:     h.roomLog,        // audit.go
		routes.AdminGetRoom:     h.getRoom,
		routes.AdminListRooms:   h.listRooms,
		routes.AdminDrainRoom:   h.drainRoomAudited, // audit.go
		routes.AdminClaimRegion: h.claimRegion,
		routes.AdminRoomHistory: h.roomHistory,
		routes.AdminSchedule:    h.schedule, // schedule.go
		routes.AdminPlan:        h.plan,
		routes.AdminUnplan:      h.unplan,
		routes.AdminReport:      h.roomReport, // report.go
		// invitations.go
		routes.AdminCreateInvitation: h.createInvitation,
		routes.AdminShowInvitation:   h.showInvitation,
		routes.AdminRevokeInvitation: h.revokeInvitation,
		routes.AdminVisitor:          h.lookupVisitor,
		routes.AdminRestorePlace:     h.restorePlace,
	}, roomhttp.Answers)
}

// endHolds calls Options.EndHolds, when set.
func (h *API) endHolds(ctx context.Context, roomID string, seq int64, completeErr error) {
	if h.o.EndHolds != nil {
		h.o.EndHolds(ctx, roomID, seq, completeErr)
	}
}

// Errors of the queue's routes.
var (
	errMissingTicket    = &httpapi.Error{Status: http.StatusUnauthorized, Code: "missing_ticket", Message: "Authorization: Bearer <ticket> required"}
	errInvalidTicket    = &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_ticket", Message: "ticket invalid, expired or for another room"}
	errMissingToken     = &httpapi.Error{Status: http.StatusBadRequest, Code: "missing_token", Message: `body must be {"token": "<entry token>"}`}
	errChallengeInvalid = &httpapi.Error{Status: http.StatusForbidden, Code: "challenge_invalid", Message: "join challenge invalid, expired or unsolved"}
)
