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

// AppendAudit passes the entry on to the engine.
func (e *Emitter) AppendAudit(ctx context.Context, id string, a room.AuditEntry) error {
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
