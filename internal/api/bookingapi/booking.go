package bookingapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// MaxEventBody is the body limit of an event's definition (routes.MaxEventBody).
const MaxEventBody = routes.MaxEventBody

// PublishTimeout bounds how long a confirm or cancel waits for its order
// event to be published before it answers (the event then waits in the outbox).
const PublishTimeout = 2 * time.Second

var (
	errNoBooking      = &httpapi.Error{Status: http.StatusNotFound, Code: "unknown_route", Message: "no such route"}
	errMissingSession = &httpapi.Error{Status: http.StatusUnauthorized, Code: "missing_session", Message: "Authorization: Bearer <booking session> required"}
	errInvalidSession = &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_session", Message: "booking session invalid or for another room"}
	errSessionEnded   = &httpapi.Error{Status: http.StatusUnauthorized, Code: "session_ended", Message: "the entry session ended"}
	errMissingIdemKey = &httpapi.Error{Status: http.StatusBadRequest, Code: "missing_idempotency_key", Message: "Idempotency-Key header required"}
	errBadHoldToken   = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the hold token is a positive decimal integer"}
)

// EndHolds releases at once every hold of the session room:seq that a
// Complete just ended (the origin's complete, the gate's leave and receipts),
// given Complete's error: a session already over (ErrUnknownGrant: it timed
// out) has its holds released too. A failure is logged; the sweep
// (orders.Sweep, EndTimedOut) releases them later. docs/BOOKING.md, "When the
// session ends".
func (h *API) EndHolds(ctx context.Context, roomID string, seq int64, completeErr error) {
	if h.o.Booking == nil || (completeErr != nil && !errors.Is(completeErr, room.ErrUnknownGrant)) {
		return
	}
	if _, err := h.o.Booking.EndSession(ctx, roomID, seq); err != nil {
		h.o.Logger.LogAttrs(ctx, slog.LevelWarn, "holds of an ended session left to the sweep",
			slog.String("room", roomID), slog.Int64("seq", seq), slog.String("error", err.Error()))
	}
}

// event returns the booking engine and checks the {event} parameter.
func (h *API) event(r *httpapi.Request) (Engine, error) {
	if h.o.Booking == nil {
		return nil, errNoBooking
	}
	if !booking.ValidEventID(r.Path.Event) {
		return nil, booking.ErrInvalidEvent
	}
	return h.o.Booking, nil
}

// view is the event's view, for the public and the admin reads of it.
func (h *API) view(ctx context.Context, r *httpapi.Request) (booking.View, error) {
	eng, err := h.event(r)
	if err != nil {
		return booking.View{}, err
	}
	return eng.View(ctx, r.Path.Event)
}

// eventOrigin checks that the caller is the origin of the event's room.
func (h *API) eventOrigin(ctx context.Context, eng Engine, r *httpapi.Request) error {
	roomID, err := eng.Room(ctx, r.Path.Event)
	if err != nil {
		return err
	}
	return roomhttp.FromOrigin(h.o.Origins, r, roomID)
}

// holdToken parses the {token} parameter: a hold's fencing token, in its one
// decimal spelling.
func holdToken(s string) (int64, error) {
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil || t <= 0 || strconv.FormatInt(t, 10) != s {
		return 0, errBadHoldToken
	}
	return t, nil
}

// publish sends a new order event at once and takes it out of the outbox.
// A failure is only logged: the event stays in the outbox, and the sweep
// (orders.Sweep, in the admission loop) publishes it later.
func (h *API) publish(ctx context.Context, eng Engine, o booking.OrderEvent) {
	if o.Replayed || h.o.Orders == nil {
		return
	}
	// The order is made whatever happens here; a slow bus must not hold the answer long.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PublishTimeout)
	defer cancel()
	err := h.o.Orders.Publish(ctx, []booking.OrderEvent{o})
	if err == nil {
		err = eng.Ack(ctx, o.Event, booking.OutboxID(o))
	}
	if err != nil {
		h.o.Logger.LogAttrs(ctx, slog.LevelWarn, "order event left in the outbox",
			slog.String("event", o.Event), slog.String("order", o.Order), slog.String("type", o.Type), slog.String("error", err.Error()))
	}
}

// orderResponse is an order event as a route answers it: 201 when the call
// made it, 200 with Idempotent-Replayed when it was already so.
func orderResponse(o booking.OrderEvent, created int) events.APIGatewayV2HTTPResponse {
	if o.Replayed {
		resp := httpapi.JSON(http.StatusOK, o)
		resp.Headers["Idempotent-Replayed"] = "true"
		return resp
	}
	return httpapi.JSON(created, o)
}

type eventViewResponse struct {
	Event string                       `json:"event"`
	Seats map[string]booking.SeatState `json:"seats"`
	Stock map[string]int64             `json:"stock"`
	// Recovering: the event came back from a data loss closed to holds
	// (a hold answers 503 event_recovering) until its sales are restored.
	Recovering bool `json:"recovering,omitempty"`
}

// eventView is GET /api/events/{event}: what is left, for everyone.
func (h *API) eventView(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	v, err := h.view(ctx, r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	resp := httpapi.JSON(http.StatusOK, eventViewResponse{Event: r.Path.Event, Seats: v.Seats, Stock: v.Stock, Recovering: v.Restore.Recovering})
	// Public and the same for everyone: CloudFront can absorb the crowd.
	resp.Headers["Cache-Control"] = "public, max-age=1"
	return resp, nil
}

type holdResponse struct {
	Event     string           `json:"event"`
	Session   string           `json:"session"`
	Token     string           `json:"token"` // a string: JavaScript reads it exactly whatever its size
	Seats     []string         `json:"seats,omitempty"`
	Units     map[string]int64 `json:"units,omitempty"`
	ExpiresAt time.Time        `json:"expiresAt"`
}

// holdSeats is POST /api/events/{event}/holds: a visitor with a consumed
// entry session of the event's room holds seats and units.
func (h *API) holdSeats(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	eng, err := h.event(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	s, ok := r.Bearer()
	if !ok {
		return events.APIGatewayV2HTTPResponse{}, errMissingSession
	}
	if h.o.Sessions == nil {
		return events.APIGatewayV2HTTPResponse{}, errInvalidSession
	}
	bs, err := h.o.Sessions.Verify(s, r.Now)
	if errors.Is(err, token.ErrExpired) {
		return events.APIGatewayV2HTTPResponse{}, errSessionEnded
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, errInvalidSession
	}
	var req booking.Request
	if err := httpapi.DecodeJSON(r.Body, &req); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	hold, err := eng.HoldSession(ctx, r.Path.Event, booking.RoomSession{Room: bs.Room, Seq: bs.Seq, Ends: bs.Ends}, req)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusCreated, holdResponse{
		Event: hold.Event, Session: hold.Session, Token: strconv.FormatInt(hold.Token, 10),
		Seats: hold.Seats, Units: hold.Units, ExpiresAt: hold.ExpiresAt.UTC(),
	}), nil
}

// holdCall is what the origin's confirm, extend and release of a hold carry.
type holdCall struct {
	eng       Engine
	token     int64  // the {token} parameter
	key       string // the Idempotency-Key (confirm only)
	session   string // the session the body names
	extension int64  // the extension's number the body names (extend only)
}

// readHoldCall reads and checks a confirm's (withKey), an extend's (extend:
// the body names the extension) or a release's call, in this order: the
// {event}, the {token}, the Idempotency-Key when withKey, that the caller is
// the origin of the event's room, the body.
func (h *API) readHoldCall(ctx context.Context, r *httpapi.Request, withKey, extend bool) (holdCall, error) {
	var c holdCall
	var err error
	if c.eng, err = h.event(r); err != nil {
		return holdCall{}, err
	}
	if c.token, err = holdToken(r.Path.Token); err != nil {
		return holdCall{}, err
	}
	if withKey {
		if c.key = r.Header(routes.IdempotencyHeader); c.key == "" {
			return holdCall{}, errMissingIdemKey
		}
	}
	if err := h.eventOrigin(ctx, c.eng, r); err != nil {
		return holdCall{}, err
	}
	var b struct {
		Session   string `json:"session"`
		Extension *int64 `json:"extension,omitempty"`
	}
	if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
		return holdCall{}, err
	}
	if (b.Extension != nil) != extend {
		return holdCall{}, &httpapi.Error{Status: http.StatusBadRequest, Code: "bad_json", Message: "extension: only, and always, in an extend"}
	}
	c.session = b.Session
	if b.Extension != nil {
		c.extension = *b.Extension
	}
	return c, nil
}

type extendResponse struct {
	Event      string    `json:"event"`
	Session    string    `json:"session"`
	Token      string    `json:"token"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Extensions int64     `json:"extensions"`
}

// extendHold is POST /api/events/{event}/holds/{token}/extend: the origin
// gives a hold more time while a payment runs, within the event's bounds;
// the extension's number makes a retry harmless.
func (h *API) extendHold(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.readHoldCall(ctx, r, false, true)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	x, err := c.eng.Extend(ctx, r.Path.Event, c.session, c.token, c.extension)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	resp := httpapi.JSON(http.StatusOK, extendResponse{Event: r.Path.Event, Session: c.session, Token: r.Path.Token,
		ExpiresAt: x.ExpiresAt.UTC(), Extensions: x.Extensions})
	if x.Replayed {
		resp.Headers["Idempotent-Replayed"] = "true"
	}
	return resp, nil
}

// confirmHold is POST /api/events/{event}/holds/{token}/confirm: the origin
// turns a hold into an order once payment succeeded, once per Idempotency-Key.
func (h *API) confirmHold(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.readHoldCall(ctx, r, true, false)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	o, err := c.eng.Confirm(ctx, r.Path.Event, c.session, c.token, c.key)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	h.publish(ctx, c.eng, o)
	return orderResponse(o, http.StatusCreated), nil
}

// releaseHold is POST /api/events/{event}/holds/{token}/release: the origin
// gives a hold up (the visitor left, the payment was declined before confirm).
func (h *API) releaseHold(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.readHoldCall(ctx, r, false, false)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err := c.eng.Release(ctx, r.Path.Event, c.session, c.token); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, map[string]any{"event": r.Path.Event, "token": r.Path.Token, "released": true}), nil
}

// cancelBody is the optional body of a cancel.
type cancelBody struct {
	Reason string `json:"reason"`
}

// cancelOrder is POST /api/events/{event}/orders/{order}/cancel: compensation
// for a payment that failed after confirm; the order's seats and units return, once.
func (h *API) cancelOrder(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	eng, err := h.event(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err := h.eventOrigin(ctx, eng, r); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var b cancelBody
	if len(r.Body) > 0 {
		if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	o, err := eng.Cancel(ctx, r.Path.Event, r.Path.Order, b.Reason)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	h.publish(ctx, eng, o)
	return orderResponse(o, http.StatusOK), nil
}

// eventDefinition is the body of PUT /api/admin/events/{event}.
type eventDefinition struct {
	Room           string           `json:"room,omitempty"`
	Seats          []string         `json:"seats,omitempty"`
	Stock          map[string]int64 `json:"stock,omitempty"`
	HoldTTLSeconds *int64           `json:"holdTTLSeconds,omitempty"` // absent: the default; 0 is refused like any value outside 1–3600
	SessionLimit   int64            `json:"sessionLimit"`
	// MaxHoldExtensions (0–100, default 0) and MaxHoldSeconds (from the hold
	// TTL to 7200; default the TTL × (1 + extensions), at most 7200) bound extend.
	MaxHoldExtensions int64 `json:"maxHoldExtensions,omitempty"`
	MaxHoldSeconds    int64 `json:"maxHoldSeconds,omitempty"`
}

// putEvent is PUT /api/admin/events/{event}: define or replace an event's inventory.
func (h *API) putEvent(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	eng, err := h.event(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var d eventDefinition
	if err := httpapi.DecodeJSON(r.Body, &d); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	// The definition before, for the audit log: none for a new event (or one
	// whose stored definition is unreadable: nothing before it can be read).
	var before *booking.View
	if v, err := eng.View(ctx, r.Path.Event); err == nil {
		before = &v
	} else if !errors.Is(err, booking.ErrUnknownEvent) && !errors.Is(err, booking.ErrNotRestorable) {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	ttl := int64(booking.DefaultHoldTTL / time.Second)
	if d.HoldTTLSeconds != nil {
		ttl = *d.HoldTTLSeconds
		if ttl < int64(booking.MinHoldTTL/time.Second) || ttl > int64(booking.MaxHoldTTL/time.Second) {
			return events.APIGatewayV2HTTPResponse{}, &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_inventory",
				Message: "holdTTLSeconds: want 1 to 3600 (leave it out for 300)"}
		}
	}
	if d.MaxHoldSeconds < 0 || d.MaxHoldSeconds > int64(booking.MaxHoldLife/time.Second) {
		return events.APIGatewayV2HTTPResponse{}, &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_inventory",
			Message: "maxHoldSeconds: want the hold TTL to 7200"}
	}
	inv := booking.Inventory{Room: d.Room, Seats: d.Seats, Stock: d.Stock,
		HoldTTL: time.Duration(ttl) * time.Second, SessionLimit: d.SessionLimit,
		MaxHoldExtensions: d.MaxHoldExtensions, MaxHold: time.Duration(d.MaxHoldSeconds) * time.Second}
	if err := eng.Define(ctx, r.Path.Event, inv); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if d.Room == "" {
		d.Room = r.Path.Event
	}
	after, err := eng.View(ctx, r.Path.Event)
	if err != nil {
		// Defined and stored: only the answer's detail is missing. Define again to see it.
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if ch := changes(definitionFields(before), definitionFields(&after)); before == nil || len(ch) > 0 {
		a := room.AuditEntry{Action: "define event", Changes: ch}
		h.audit(ctx, r, d.Room, a)
		if before != nil && before.Room != "" && before.Room != d.Room {
			h.audit(ctx, r, before.Room, a) // the room it leaves keeps the record too
		}
	}
	return httpapi.JSON(http.StatusOK, map[string]any{
		"event": r.Path.Event, "room": d.Room, "seats": len(d.Seats), "stock": d.Stock,
		"holdTTLSeconds": ttl, "sessionLimit": d.SessionLimit, "maxHoldExtensions": d.MaxHoldExtensions,
		"maxHoldSeconds": int64(holdLife(inv) / time.Second), "recovering": after.Restore.Recovering,
	}), nil
}

// getEvent is GET /api/admin/events/{event}: the view and the counters.
func (h *API) getEvent(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	v, err := h.view(ctx, r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if v.Room == "" {
		v.Room = r.Path.Event
	}
	return httpapi.JSON(http.StatusOK, booking.EventView{
		Event: r.Path.Event, Room: v.Room, HoldTTLSeconds: int64(v.HoldTTL / time.Second), SessionLimit: v.SessionLimit,
		MaxHoldExtensions: v.MaxHoldExtensions, MaxHoldSeconds: int64(v.MaxHold / time.Second), Seats: v.Seats, Stock: v.Stock, Fence: strconv.FormatInt(v.Fence, 10),
		Counters: v.Counters(), Restore: restoreOf(v.Restore),
	}), nil
}

// holdLife is the longest a hold of inv lasts, extensions included.
func holdLife(inv booking.Inventory) time.Duration {
	_, life := inv.HoldBounds()
	return life
}

type ordersResponse struct {
	Event  string               `json:"event"`
	Orders []booking.OrderEvent `json:"orders"`
	Next   string               `json:"next"` // "0": the last page
}

// eventOrders is GET /api/admin/events/{event}/orders[?cursor=N]: a page of
// the event's orders, confirmed and cancelled, for reconciliation with the
// origin's record (vestibule booking reconcile).
func (h *API) eventOrders(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	eng, err := h.event(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	cursor := r.Event.QueryStringParameters["cursor"]
	if q, err := url.ParseQuery(r.Event.RawQueryString); cursor == "" && err == nil {
		cursor = q.Get("cursor")
	}
	os, next, err := eng.Orders(ctx, r.Path.Event, cursor)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, ordersResponse{Event: r.Path.Event, Orders: os, Next: next}), nil
}
