package admission

import (
	"context"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// deleter is an engine that can remove a room for good (*roomdb.Engine,
// durable.Queue).
type deleter interface {
	Delete(ctx context.Context, room string) error
}

var _ deleter = (*Emitter)(nil)

// Delete passes the deletion of a room on to the engine.
func (e *Emitter) Delete(ctx context.Context, id string) error {
	d, ok := e.Engine.(deleter)
	if !ok {
		return room.ErrCannotDelete
	}
	return d.Delete(ctx, id)
}

// auditor is an engine that keeps each room's audit log (*roomdb.Engine,
// durable.Queue).
type auditor interface {
	AppendAudit(ctx context.Context, room string, e room.AuditEntry) error
	Audit(ctx context.Context, room string) ([]room.AuditEntry, error)
}

var _ auditor = (*Emitter)(nil)

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
	au, ok := e.Engine.(auditor)
	if !ok {
		return nil
	}
	return au.AppendAudit(ctx, id, a)
}

// Audit reads the engine's audit log of the room.
func (e *Emitter) Audit(ctx context.Context, id string) ([]room.AuditEntry, error) {
	au, ok := e.Engine.(auditor)
	if !ok {
		return nil, nil
	}
	return au.Audit(ctx, id)
}
