package roomdb

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// AppendAudit records an entry in the room's audit log.
func (e *Engine) AppendAudit(ctx context.Context, roomID string, a room.AuditEntry) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	k := KeysFor(roomID).Audit()
	p := e.rdb.Pipeline()
	p.LPush(ctx, k, b)
	p.LTrim(ctx, k, 0, room.AuditKeep-1)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: audit %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}

// Audit reads the room's audit log, oldest first.
func (e *Engine) Audit(ctx context.Context, roomID string) ([]room.AuditEntry, error) {
	if !room.ValidRoomID(roomID) {
		return nil, room.ErrInvalidRoom
	}
	p := e.rdb.Pipeline()
	lr := p.LRange(ctx, KeysFor(roomID).Audit(), 0, room.AuditKeep-1)
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("%w: audit %s: %w", room.ErrUnavailable, roomID, err)
	}
	vals := lr.Val()
	out := make([]room.AuditEntry, 0, len(vals))
	for i := len(vals) - 1; i >= 0; i-- {
		var a room.AuditEntry
		if json.Unmarshal([]byte(vals[i]), &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}
