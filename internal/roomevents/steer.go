package roomevents

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The detail-types of the room's own steering (docs/ENGINE.md, "Steering").
const (
	TypeNet  = eventbus.TypeNet  // an auto room's safety net switched on or off
	TypePace = eventbus.TypePace // the pace that follows the origin stepped (a back-off, or a new why)
)

// SteeredBy is the Who of the audit entries the room makes itself.
const SteeredBy = "the room itself"

// NetEvent is the detail of admission.net. Consumers dedupe on (room, at).
type NetEvent struct {
	Room string    `json:"room"`
	At   time.Time `json:"at"`
	On   bool      `json:"on"`
	// Why: room.NetChange.Why.
	Why string `json:"why"`
}

// PaceEvent is the detail of admission.pace. Consumers dedupe on (room, at).
type PaceEvent struct {
	Room          string    `json:"room"`
	At            time.Time `json:"at"`
	FromPerMinute float64   `json:"fromPerMinute"`
	ToPerMinute   float64   `json:"toPerMinute"`
	// Why: room.PaceChange.Why.
	Why string `json:"why"`
}

// steered publishes the tick's switch of the net and step of the pace, and
// records each in the room's audit log as made by the room itself.
func (e *Emitter) steered(ctx context.Context, id string, at time.Time, r room.TickResult) {
	at = at.UTC().Truncate(time.Millisecond)
	if n := r.Net; n != nil {
		e.publish(ctx, TypeNet, NetEvent{Room: id, At: at, On: n.On, Why: n.Why})
		old, now, action := "off", "on", "net on"
		if !n.On {
			old, now, action = "on", "off", "net off"
		}
		e.audit(ctx, id, room.AuditEntry{At: at, Who: SteeredBy, Action: action, Why: n.Why,
			Changes: []room.AuditChange{{Setting: "net", Old: jsonOf(old), New: jsonOf(now)}}})
	}
	if p := r.Pace; p != nil {
		e.publish(ctx, TypePace, PaceEvent{Room: id, At: at, FromPerMinute: p.From, ToPerMinute: p.To, Why: p.Why})
		e.audit(ctx, id, room.AuditEntry{At: at, Who: SteeredBy, Action: "pace", Why: p.Why,
			Changes: []room.AuditChange{{Setting: "pace", Old: jsonOf(p.From), New: jsonOf(p.To)}}})
	}
}

// audit appends the entry to the engine's audit log; a failure is logged,
// the tick stands.
func (e *Emitter) audit(ctx context.Context, id string, a room.AuditEntry) {
	if err := e.Engine.AppendAudit(context.WithoutCancel(ctx), id, a); err != nil {
		e.log.LogAttrs(ctx, slog.LevelError, "steering audit", slog.String("room", id), slog.String("error", err.Error()))
	}
}

func jsonOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
