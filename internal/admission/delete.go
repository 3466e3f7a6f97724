package admission

import (
	"context"

	"github.com/vestibule-dev/vestibule/internal/room"
)

var _ room.Deleter = (*Emitter)(nil)

// Delete passes the deletion of a room on to the engine.
func (e *Emitter) Delete(ctx context.Context, id string) error {
	d, ok := e.Engine.(room.Deleter)
	if !ok {
		return room.ErrCannotDelete
	}
	return d.Delete(ctx, id)
}

var _ room.Auditor = (*Emitter)(nil)

// TypeRoomChanged is the event of an admin change of a room (a PUT of its
// settings, a drain, a delete), its detail a RoomChangedEvent.
const TypeRoomChanged = "admission.room.changed"

// RoomChangedEvent is an audit entry (room.AuditEntry) with its room.
type RoomChangedEvent struct {
	Room string `json:"room"`
	room.AuditEntry
}

// AppendAudit passes the entry on to the engine and publishes it as an
// admission.room.changed event.
func (e *Emitter) AppendAudit(ctx context.Context, id string, a room.AuditEntry) error {
	e.publish(ctx, TypeRoomChanged, RoomChangedEvent{Room: id, AuditEntry: a})
	au, ok := e.Engine.(room.Auditor)
	if !ok {
		return nil
	}
	return au.AppendAudit(ctx, id, a)
}

// Audit reads the engine's audit log of the room.
func (e *Emitter) Audit(ctx context.Context, id string) ([]room.AuditEntry, error) {
	au, ok := e.Engine.(room.Auditor)
	if !ok {
		return nil, nil
	}
	return au.Audit(ctx, id)
}
