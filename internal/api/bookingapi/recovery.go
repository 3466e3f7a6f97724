package bookingapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// After a total loss of Redis an event comes back closed to holds, so that
// nothing it sold before is sold again, until the admin puts back what the
// origin recorded (POST /api/admin/events/{event}/rebuild, which `vestibule
// booking reconcile --apply` sends) and reopens it. docs/BOOKING.md, "After
// a total loss".

// rebuildBody is the body of POST /api/admin/events/{event}/rebuild.
type rebuildBody struct {
	Orders []booking.SoldOrder `json:"orders"`
	Reopen bool                `json:"reopen"`
}

type rebuildResponse struct {
	Event      string `json:"event"`
	Added      int64  `json:"added"`
	Kept       int64  `json:"kept"`
	Recovering bool   `json:"recovering"`
	// Of an event closed by POST …/close: its holds given up for the
	// origin's orders, and those that became the order recorded for them.
	HoldsReleased  int64 `json:"holdsReleased"`
	HoldsConverted int64 `json:"holdsConverted"`
}

// rebuildEvent is POST /api/admin/events/{event}/rebuild: the origin's orders
// sold again in an event closed after a loss, and with reopen the event
// opened to holds.
func (h *API) rebuildEvent(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	eng, err := h.event(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var b rebuildBody
	if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	roomID, err := eng.Room(ctx, r.Path.Event) // restores the event (closed) if Redis lost it
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	res, err := eng.Rebuild(ctx, r.Path.Event, b.Orders, b.Reopen)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if res.Added > 0 || !res.Recovering {
		h.audit(ctx, r, roomID, room.AuditEntry{Action: "rebuild event", Changes: changes(
			map[string]any{"recovering": true, "ordersAdded": 0},
			map[string]any{"recovering": res.Recovering, "ordersAdded": res.Added})})
	}
	return httpapi.JSON(http.StatusOK, rebuildResponse{Event: r.Path.Event, Added: res.Added, Kept: res.Kept, Recovering: res.Recovering,
		HoldsReleased: res.Released, HoldsConverted: res.Converted}), nil
}

// closeResponse is the answer of POST /api/admin/events/{event}/close.
type closeResponse struct {
	Event      string `json:"event"`
	Recovering bool   `json:"recovering"` // always true: closed to holds
	ClosedNow  bool   `json:"closedNow"`  // false: it was closed already
	Holds      int64  `json:"holds"`      // live holds (they may still be confirmed)
	Live       int64  `json:"live"`       // orders not cancelled
}

// closeEvent is POST /api/admin/events/{event}/close: an open event closed to
// holds until a rebuild puts back the origin's record and reopens it, as
// after a total loss; a region failover closes the standby's events, whose
// copy lost the old region's last writes (docs/BOOKING.md, "After a region
// failover"). The body is empty or {}.
func (h *API) closeEvent(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	eng, err := h.event(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if len(bytes.TrimSpace(r.Body)) > 0 {
		var b struct{}
		if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	roomID, err := eng.Room(ctx, r.Path.Event) // restores the event (closed) if Redis lost it
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	c, err := eng.Close(ctx, r.Path.Event)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if c.Now {
		h.audit(ctx, r, roomID, room.AuditEntry{Action: "close event", Changes: changes(
			map[string]any{"recovering": false}, map[string]any{"recovering": true})})
	}
	return httpapi.JSON(http.StatusOK, closeResponse{Event: r.Path.Event, Recovering: true, ClosedNow: c.Now, Holds: c.Holds, Live: c.Live}), nil
}

// listResponse is the answer of GET /api/admin/events.
type listResponse struct {
	Events []string `json:"events"`
}

// listEvents is GET /api/admin/events: every event ever defined in this
// region's kit (its registry), sorted; what a region failover closes.
func (h *API) listEvents(ctx context.Context, _ *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	if h.o.Booking == nil {
		return events.APIGatewayV2HTTPResponse{}, errNoBooking
	}
	ids, err := h.o.Booking.Events(ctx)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	slices.Sort(ids)
	if ids == nil {
		ids = []string{}
	}
	return httpapi.JSON(http.StatusOK, listResponse{Events: ids}), nil
}

func restoreOf(r booking.Restore) *booking.RestoreView {
	if r.RestoredAt.IsZero() && r.ClosedAt.IsZero() && !r.Recovering {
		return nil
	}
	out := &booking.RestoreView{State: "recovering", RestoredAt: r.RestoredAt, Rebuilt: r.Rebuilt}
	if !r.ClosedAt.IsZero() {
		at := r.ClosedAt
		out.ClosedAt = &at
	}
	if !r.Recovering {
		out.State = "reopened"
		at := r.ReopenedAt
		out.ReopenedAt = &at
	}
	return out
}

// audit keeps an admin write of an event in its room's audit log.
func (h *API) audit(ctx context.Context, r *httpapi.Request, roomID string, a room.AuditEntry) {
	if h.o.Audit == nil {
		return
	}
	if roomID == "" {
		roomID = r.Path.Event
	}
	a.Event = r.Path.Event
	h.o.Audit(ctx, r, roomID, a)
}

// definitionFields are the audit log's view of a definition: its settings,
// the seats as a count (a venue's list would fill the log).
func definitionFields(v *booking.View) map[string]any {
	if v == nil {
		return nil
	}
	// The stock left is the stock defined whenever a definition may change
	// (no live hold, no order: booking.ErrInUse otherwise).
	return map[string]any{"room": v.Room, "seats": len(v.Seats), "stock": v.Stock,
		"holdTTLSeconds": int64(v.HoldTTL / time.Second), "sessionLimit": v.SessionLimit,
		"maxHoldExtensions": v.MaxHoldExtensions, "maxHoldSeconds": int64(v.MaxHold / time.Second)}
}

// changes lists the fields whose JSON differs between before and after (nil:
// none, every value null), by name.
func changes(before, after map[string]any) []room.AuditChange {
	enc := func(m map[string]any, k string) json.RawMessage {
		v, ok := m[k]
		if !ok {
			return json.RawMessage("null")
		}
		b, err := json.Marshal(v)
		if err != nil {
			return json.RawMessage("null")
		}
		return b
	}
	var names []string
	for k := range before {
		names = append(names, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var out []room.AuditChange
	for _, k := range names {
		if o, n := enc(before, k), enc(after, k); !bytes.Equal(o, n) {
			out = append(out, room.AuditChange{Setting: k, Old: o, New: n})
		}
	}
	return out
}
