package room

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEntry is one admin change of a room: who made it, when, and each
// setting's value before and after (JSON values; null for none).
type AuditEntry struct {
	At time.Time `json:"at"`
	// Who is the caller: the IAM principal's ARN in AWS, "admin key" on a
	// local stack (with " via the console" when the console made it).
	Who string `json:"who"`
	// Action is create, change, drain or delete.
	Action  string        `json:"action"`
	Changes []AuditChange `json:"changes,omitempty"`
	// Removed is how many visitors a drain or delete removed.
	Removed int64 `json:"removed,omitempty"`
}

// AuditChange is one setting's change.
type AuditChange struct {
	Setting string          `json:"setting"`
	Old     json.RawMessage `json:"old"`
	New     json.RawMessage `json:"new"`
}

// AuditKeep is how many entries a room's audit log keeps (the newest).
const AuditKeep = 500

// Auditor keeps each room's audit log (room.Engine, and the wrappers over
// it that pass the calls on).
type Auditor interface {
	AppendAudit(ctx context.Context, room string, e AuditEntry) error
	// Audit returns the room's entries, oldest first; none for a room
	// without any (or that never existed).
	Audit(ctx context.Context, room string) ([]AuditEntry, error)
}

var _ Auditor = (*Engine)(nil)

// Audit is the key of the room's audit log (LIST of AuditEntry JSON, newest
// first, capped at AuditKeep). Delete leaves it: who deleted a room stays
// on record.
func (k Keys) Audit() string {
	return k.Config[:len(k.Config)-len("cfg")] + "audit"
}

// AppendAudit records an entry in the room's audit log.
func (e *Engine) AppendAudit(ctx context.Context, room string, a AuditEntry) error {
	if !ValidRoomID(room) {
		return ErrInvalidRoom
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	k := KeysFor(room).Audit()
	p := e.rdb.Pipeline()
	p.LPush(ctx, k, b)
	p.LTrim(ctx, k, 0, AuditKeep-1)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: audit %s: %w", ErrUnavailable, room, err)
	}
	return nil
}

// Audit reads the room's audit log, oldest first.
func (e *Engine) Audit(ctx context.Context, room string) ([]AuditEntry, error) {
	if !ValidRoomID(room) {
		return nil, ErrInvalidRoom
	}
	p := e.rdb.Pipeline()
	lr := p.LRange(ctx, KeysFor(room).Audit(), 0, AuditKeep-1)
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("%w: audit %s: %w", ErrUnavailable, room, err)
	}
	vals := lr.Val()
	out := make([]AuditEntry, 0, len(vals))
	for i := len(vals) - 1; i >= 0; i-- {
		var a AuditEntry
		if json.Unmarshal([]byte(vals[i]), &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}
