package queueapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The audit trail of admin changes (docs/OPERATING.md, "Who changed what"):
// every PUT, drain and DELETE of a room records who made it, when, and each
// setting's old and new value, in the room's audit log (Auditor, a
// capped list in Redis) and as an "admin change" log line.

// ViaConsoleClaim follows the caller in an audit entry of a call that says it
// came through the operator's console (docs/SECURITY.md, "The console's
// secret and the audit log").
const ViaConsoleClaim = " (says via the console)"

// caller names who makes an admin call: the IAM principal API Gateway
// authorised (its ARN; else its caller or account id), or "admin key" on a
// local stack. The principal is the only part the API checked. A call that
// carries X-Vestibule-Console gets ViaConsoleClaim after it: the operator's
// console proxy adds the header, but so can anyone holding the same
// credentials, so the log records it as the caller's claim, not as a fact.
func (h *API) caller(r *httpapi.Request) string {
	who := "admin key"
	if h.o.AdminAuth == config.AdminIAM {
		who = "unknown IAM principal"
		if a := r.Event.RequestContext.Authorizer; a != nil && a.IAM != nil {
			switch {
			case a.IAM.UserARN != "":
				who = a.IAM.UserARN
			case a.IAM.CallerID != "":
				who = "caller " + a.IAM.CallerID
			case a.IAM.AccountID != "":
				who = "account " + a.IAM.AccountID
			}
		}
	}
	if r.Header("x-vestibule-console") != "" {
		who += ViaConsoleClaim
	}
	return who
}

// settingChanges lists the settings whose JSON differs between two configs
// (room.SettingChanges).
func settingChanges(before, after *room.Config) []room.AuditChange {
	return room.SettingChanges(before, after)
}

// record keeps an audit entry of the request's room and logs it.
func (h *API) record(ctx context.Context, r *httpapi.Request, a room.AuditEntry) {
	h.Record(ctx, r, r.Room, a)
}

// Record keeps an audit entry in the log of roomID and logs it, naming the
// caller of r: the rooms' admin writes and the booking kit's (an event's
// entries go to its room's log). Failing to keep it does not undo the
// change: it is logged as an error.
func (h *API) Record(ctx context.Context, r *httpapi.Request, roomID string, a room.AuditEntry) {
	a.At, a.Who = r.Now.UTC(), h.caller(r)
	changes, _ := json.Marshal(a.Changes)
	attrs := []slog.Attr{slog.String("room", roomID), slog.String("who", a.Who), slog.String("action", a.Action),
		slog.String("changes", string(changes)), slog.Int64("removed", a.Removed)}
	if a.Event != "" {
		attrs = append(attrs, slog.String("event", a.Event))
	}
	h.o.Logger.LogAttrs(ctx, slog.LevelInfo, "admin change", attrs...)
	if err := h.o.Queue.AppendAudit(context.WithoutCancel(ctx), roomID, a); err != nil {
		h.o.Logger.LogAttrs(ctx, slog.LevelError, "admin change not kept in the audit log",
			append(attrs, slog.String("error", err.Error()))...)
	}
}

// audited records a change of a room's settings from before (nil: created)
// to after (nil: deleted).
func (h *API) audited(ctx context.Context, r *httpapi.Request, before, after *room.Config) {
	a := room.AuditEntry{Action: "change", Changes: settingChanges(before, after)}
	switch {
	case before == nil:
		a.Action = "create"
	case after == nil:
		a.Action, a.Changes = "delete", nil
	}
	h.record(ctx, r, a)
}

// putRoomAudited is putRoom with its audit entry: the settings before (none
// for a new room) and as stored.
func (h *API) putRoomAudited(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	var before *room.Config
	if cfg, err := h.o.Queue.GetConfig(ctx, r.Room); err == nil {
		before = &cfg
	} else if !errors.Is(err, room.ErrUnknownRoom) && !errors.Is(err, room.ErrNotRestorable) {
		// (A room whose stored settings cannot be read is PUT afresh, as
		// putRoom says, and logged as a new room: nothing before it could be read.)
		return events.APIGatewayV2HTTPResponse{}, err
	}
	resp, err := h.putRoom(ctx, r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	var out struct {
		Config room.Config `json:"config"`
	}
	if json.Unmarshal([]byte(resp.Body), &out) == nil {
		if before == nil || len(settingChanges(before, &out.Config)) > 0 {
			h.audited(ctx, r, before, &out.Config)
		}
	}
	return resp, nil
}

// drainRoomAudited is drainRoom with its audit entry.
func (h *API) drainRoomAudited(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	resp, err := h.drainRoom(ctx, r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	var out struct {
		Removed int64 `json:"removed"`
	}
	// The body is drainRoom's own JSON reply; were it unreadable, the entry
	// would still record the drain, with no count.
	_ = json.Unmarshal([]byte(resp.Body), &out)
	h.record(ctx, r, room.AuditEntry{Action: "drain", Removed: out.Removed})
	return resp, nil
}

// roomLog answers the room's audit log, oldest first. A deleted room's log
// stays readable; a room that never had an entry and does not exist is 404.
func (h *API) roomLog(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	entries, err := h.o.Queue.Audit(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if len(entries) == 0 {
		if _, err := h.o.Queue.GetConfig(ctx, r.Room); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	if entries == nil {
		entries = []room.AuditEntry{}
	}
	return httpapi.JSON(http.StatusOK, struct {
		Room    string            `json:"room"`
		Entries []room.AuditEntry `json:"entries"`
	}{r.Room, entries}), nil
}
