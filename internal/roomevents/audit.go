package roomevents

import (
	"context"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// TypeRoomChanged is the event of an admin change of a room (a PUT of its
// settings, a drain, a delete), its detail a RoomChangedEvent.
const TypeRoomChanged = eventbus.TypeRoomChanged

// RoomChangedEvent is an audit entry (room.AuditEntry) with its room.
type RoomChangedEvent struct {
	Room string `json:"room"`
	room.AuditEntry
}

// AppendAudit passes the entry on to the engine and publishes it as an
// admission.room.changed event.
func (e *Emitter) AppendAudit(ctx context.Context, id string, a room.AuditEntry) error {
	e.publish(ctx, TypeRoomChanged, RoomChangedEvent{Room: id, AuditEntry: a})
	return e.Engine.AppendAudit(ctx, id, a)
}
