package queueapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// ScheduleAhead is how far ahead a change may be planned.
const ScheduleAhead = 366 * 24 * time.Hour

var (
	errScheduleAt = &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_schedule",
		Message: `body must be {"at": "<RFC 3339 time, in the future, within a year>", "settings": {<settings>}}`}
	errUnknownChange = &httpapi.Error{Status: http.StatusNotFound, Code: "unknown_change",
		Message: "the room has no scheduled change of that id"}
	errScheduleFull = &httpapi.Error{Status: http.StatusConflict, Code: "schedule_full",
		Message: "the room's schedule is full: cancel a change first"}
	errChangeBusy = &httpapi.Error{Status: http.StatusConflict, Code: "change_busy", RetryAfter: 1,
		Message: "the change is being applied at this instant: read the schedule again"}
)

// schedule answers the room's scheduled changes, by time (refused ones
// with their reason).
func (h *API) schedule(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	cs, err := h.o.Queue.Schedule(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, struct {
		Room    string                 `json:"room"`
		Changes []room.ScheduledChange `json:"changes"`
	}{r.Room, cs}), nil
}

// plan adds a change to the room's schedule. Its settings are checked now
// as a PUT's would be, over the room's settings now (400 invalid_config);
// at its time they are checked again over the settings then.
func (h *API) plan(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	var in struct {
		At       *time.Time      `json:"at"`
		Settings json.RawMessage `json:"settings"`
	}
	if err := httpapi.DecodeJSON(r.Body, &in); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if in.At == nil || !in.At.After(r.Now) || in.At.Sub(r.Now) > ScheduleAhead || len(in.Settings) == 0 || in.Settings[0] != '{' {
		return events.APIGatewayV2HTTPResponse{}, errScheduleAt
	}
	before, err := h.o.Queue.GetConfig(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	after := before
	if before.Page != nil {
		page := *before.Page
		after.Page = &page
	}
	if err := httpapi.DecodeJSON(in.Settings, &after); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err := after.Validate(); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	c := room.ScheduledChange{ID: newChangeID(), At: in.At.UTC(), Settings: in.Settings, CreatedBy: h.caller(r), CreatedAt: r.Now.UTC()}
	if err := h.o.Queue.PutScheduled(ctx, r.Room, c); err != nil {
		if errors.Is(err, room.ErrScheduleFull) {
			return events.APIGatewayV2HTTPResponse{}, errScheduleFull
		}
		return events.APIGatewayV2HTTPResponse{}, err
	}
	h.record(ctx, r, room.AuditEntry{Action: room.ActionSchedule, Schedule: c.ID, Changes: room.PlannedChanges(&before, &after, in.Settings)})
	return httpapi.JSON(http.StatusOK, struct {
		Room   string               `json:"room"`
		Change room.ScheduledChange `json:"change"`
	}{r.Room, c}), nil
}

// unplan cancels a scheduled change, planned or refused.
func (h *API) unplan(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := httpapi.DecodeJSON(r.Body, &in); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if !validChangeID(in.ID) {
		return events.APIGatewayV2HTTPResponse{}, errUnknownChange
	}
	if _, err := h.o.Queue.GetConfig(ctx, r.Room); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	c, token, err := h.o.Queue.LeaseScheduled(ctx, r.Room, in.ID)
	switch {
	case errors.Is(err, room.ErrUnknownChange):
		return events.APIGatewayV2HTTPResponse{}, h.goneChange(ctx, r.Room, in.ID)
	case err != nil:
		return events.APIGatewayV2HTTPResponse{}, err
	case token == "":
		return events.APIGatewayV2HTTPResponse{}, errChangeBusy
	}
	switch err := h.o.Queue.RemoveScheduled(ctx, r.Room, in.ID, token); {
	case errors.Is(err, room.ErrLeaseLost):
		return events.APIGatewayV2HTTPResponse{}, errChangeBusy // it ran out: another process may be applying it
	case err != nil:
		_ = h.o.Queue.ReleaseScheduled(context.WithoutCancel(ctx), r.Room, in.ID, token) // else it expires
		return events.APIGatewayV2HTTPResponse{}, err
	}
	h.record(ctx, r, room.AuditEntry{Action: room.ActionUnschedule, Schedule: c.ID})
	return httpapi.JSON(http.StatusOK, struct {
		Room      string               `json:"room"`
		Cancelled room.ScheduledChange `json:"cancelled"`
	}{r.Room, c}), nil
}

// goneChange is why the room's schedule no longer holds the change id, as
// its audit log tells: 409 change_applied with the time it was applied, a
// cancel's time and who made it, or the plain 404 unknown_change. A console
// that listed the change before its time may ask to cancel it after.
func (h *API) goneChange(ctx context.Context, roomID, id string) error {
	entries, err := h.o.Queue.Audit(ctx, roomID)
	if err != nil {
		return errUnknownChange // the answer stands without its detail
	}
	for _, e := range slices.Backward(entries) {
		if e.Schedule != id {
			continue
		}
		at := e.At.UTC().Format(time.RFC3339)
		switch e.Action {
		case room.ActionScheduleApplied:
			return &httpapi.Error{Status: http.StatusConflict, Code: "change_applied",
				Message: "the change was applied at " + at + ": the room's settings are its own now (the room's log shows what it set)"}
		case room.ActionUnschedule:
			return &httpapi.Error{Status: http.StatusNotFound, Code: "unknown_change",
				Message: "the change was cancelled at " + at + " by " + e.Who}
		}
	}
	return errUnknownChange
}

// newChangeID is 16 random hex digits.
func newChangeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// validChangeID reports whether id is what newChangeID makes.
func validChangeID(id string) bool {
	if len(id) != 16 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}
