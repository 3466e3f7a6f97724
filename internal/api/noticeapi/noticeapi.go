// Package noticeapi is the HTTP API of notices (docs/API.md, "Notices"): a
// waiting visitor signs up for a notice of their turn or withdraws it, and
// the notify function takes the due notices and acks them (admin routes).
// The address a visitor gives is checked (notice.Policy), sealed to the
// notify function's key (notice.Sealer) and kept with the place; this
// function can seal, never open it.
package noticeapi

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Engine is what the notices' routes need of the room engine (durable.Queue).
type Engine interface {
	RegisterNotice(ctx context.Context, t room.Ticket, s room.NoticeSignup) error
	WithdrawNotice(ctx context.Context, t room.Ticket) error
	TakeNotices(ctx context.Context, room string, most int, lease time.Duration) ([]room.DueNotice, error)
	AckNotice(ctx context.Context, room string, seq int64, o room.NoticeOutcome, retryAt time.Time) error
	GetConfig(ctx context.Context, room string) (room.Config, error)
}

// Options are the routes' dependencies.
type Options struct {
	Queue   Engine
	Tickets *token.Tickets
	// Sealer seals addresses to the notify function's key; nil: the
	// deployment sends no notices, and a sign-up is 409 notices_off.
	Sealer *notice.Sealer
	// Policy is what addresses the deployment takes (its channels, its push services).
	Policy notice.Policy
	// Hasher names an address for the per-address sign-up limit.
	Hasher notice.Hasher
}

// API serves the notices' routes.
type API struct{ o Options }

// New returns the notices' API over o.
func New(o Options) *API { return &API{o: o} }

// Handlers binds the notices' routes to their handlers: the poll
// function's (PollHandlers) and the admin function's (AdminHandlers).
func (h *API) Handlers() map[routes.Route]httpapi.HandlerFunc {
	all := h.PollHandlers()
	maps.Copy(all, h.AdminHandlers())
	return all
}

// PollHandlers binds a visitor's sign-up and withdrawal, which API Gateway
// sends to the poll function; bound apart from the admin routes so that each
// function links only its own.
func (h *API) PollHandlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.RoomNotify:   h.signup,
		routes.RoomWithdraw: h.withdraw,
	}, answers, roomhttp.Answers)
}

// AdminHandlers binds the notify function's take and ack (admin routes).
func (h *API) AdminHandlers() map[routes.Route]httpapi.HandlerFunc {
	return httpapi.Answering(map[routes.Route]httpapi.HandlerFunc{
		routes.AdminTakeNotice: h.take,
		routes.AdminAckNotice:  h.ack,
	}, answers, roomhttp.Answers)
}

// Errors of the notices' routes.
var (
	errMissingTicket = &httpapi.Error{Status: http.StatusUnauthorized, Code: "missing_ticket", Message: "Authorization: Bearer <ticket> required"}
	errInvalidTicket = &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_ticket", Message: "ticket invalid, expired or for another room"}
	errNoticesOff    = &httpapi.Error{Status: http.StatusConflict, Code: "notices_off", Message: "this waiting room sends no notices"}
	errBadRequest    = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: `body must be {"most": 1–100, "leaseMs": 1000–300000}`}
	errBadAck        = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: `body must be {"seq": N, "outcome": "sent"|"gone"|"retry", "retryAt": time with retry}`}
)

// answers are the notices' answers to the engine's errors.
var answers = httpapi.Answers{
	{Err: room.ErrNoticesOff, Status: http.StatusConflict, Code: "notices_off", Message: "this waiting room sends no notices"},
	{Err: room.ErrNoPlace, Status: http.StatusConflict, Code: "no_place", Message: "no place in the line to be told of: admitted already, gone, or not in the line yet"},
	{Err: room.ErrNoNotice, Status: http.StatusNotFound, Code: "unknown_notice", Message: "no such notice due"},
	{Err: notice.ErrAddress, Status: http.StatusBadRequest, Code: "invalid_notice"},
}

// ticket verifies the request's ticket for its room.
func (h *API) ticket(r *httpapi.Request) (token.Verified, error) {
	s, ok := r.Bearer()
	if !ok {
		return token.Verified{}, errMissingTicket
	}
	v, err := h.o.Tickets.Check(s, r.Room, r.Now)
	if err != nil {
		return token.Verified{}, errInvalidTicket
	}
	return v, nil
}

// signup is POST /api/rooms/{room}/notify: {"push": <PushSubscription>,
// "vapid": id, "lang": tag} or {"email": address, "lang": tag}.
func (h *API) signup(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	v, err := h.ticket(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if h.o.Sealer == nil {
		return events.APIGatewayV2HTTPResponse{}, errNoticesOff
	}
	var a notice.Address
	if err := httpapi.DecodeJSON(r.Body, &a); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err := h.o.Policy.Check(&a); err != nil {
		return events.APIGatewayV2HTTPResponse{}, &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_notice",
			Message: err.Error()}
	}
	if a.Push == nil {
		a.VAPID = ""
	}
	sealed, err := h.o.Sealer.Seal(r.Room, v.Seq, a)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, httpapi.InternalError(err)
	}
	err = h.o.Queue.RegisterNotice(ctx, v.Ticket, room.NoticeSignup{Sealed: sealed, Network: r.ClientAddress(),
		Address: h.o.Hasher.Of(a), Expires: v.Expiry})
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	kind := "email"
	if a.Push != nil {
		kind = "push"
	}
	return httpapi.JSON(http.StatusOK, map[string]any{"room": r.Room, "notify": kind}), nil
}

// withdraw is DELETE /api/rooms/{room}/notify.
func (h *API) withdraw(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	v, err := h.ticket(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err := h.o.Queue.WithdrawNotice(ctx, v.Ticket); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, map[string]any{"room": r.Room, "notify": nil}), nil
}

// takeResponse is the take route's answer (send.Batch, with the room).
type takeResponse struct {
	Room    string           `json:"room"`
	Notices []room.DueNotice `json:"notices"`
	Page    *room.Page       `json:"page,omitempty"`
}

// take is POST /api/admin/rooms/{room}/notices/take (the notify function).
func (h *API) take(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	var in notice.TakeRequest
	if err := httpapi.DecodeJSON(r.Body, &in); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if in.Most < 1 || in.Most > 100 || in.LeaseMs < 1000 || in.LeaseMs > 300_000 {
		return events.APIGatewayV2HTTPResponse{}, errBadRequest
	}
	cfg, err := h.o.Queue.GetConfig(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	ns, err := h.o.Queue.TakeNotices(ctx, r.Room, in.Most, time.Duration(in.LeaseMs)*time.Millisecond)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if ns == nil {
		ns = []room.DueNotice{}
	}
	for i := range ns {
		ns[i].Deadline = ns[i].Deadline.UTC()
	}
	out := takeResponse{Room: r.Room, Notices: ns, Page: cfg.Page}
	resp := httpapi.JSON(http.StatusOK, out)
	resp.Headers["Cache-Control"] = "no-store"
	return resp, nil
}

// ack is POST /api/admin/rooms/{room}/notices/ack (the notify function).
func (h *API) ack(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	var in notice.AckRequest
	if err := httpapi.DecodeJSON(r.Body, &in); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var retryAt time.Time
	switch in.Outcome {
	case room.NoticeSent, room.NoticeGone:
	case room.NoticeRetry:
		if in.RetryAt == nil {
			return events.APIGatewayV2HTTPResponse{}, errBadAck
		}
		retryAt = *in.RetryAt
	default:
		return events.APIGatewayV2HTTPResponse{}, errBadAck
	}
	if in.Seq <= 0 {
		return events.APIGatewayV2HTTPResponse{}, errBadAck
	}
	if err := h.o.Queue.AckNotice(ctx, r.Room, in.Seq, in.Outcome, retryAt); err != nil {
		if errors.Is(err, room.ErrNoNotice) {
			return events.APIGatewayV2HTTPResponse{}, httpapi.ToError(err, answers)
		}
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, map[string]any{"room": r.Room, "seq": in.Seq, "outcome": in.Outcome}), nil
}
