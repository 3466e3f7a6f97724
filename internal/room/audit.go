package room

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Deleter is a queue that can remove a room for good (roomdb.Engine, and the
// wrappers over it that pass the call on).
type Deleter interface {
	// Delete removes the room's settings, queue, grants, sessions, history
	// and arrival shards, and takes it off the registry. ErrUnknownRoom
	// when there is no such room.
	Delete(ctx context.Context, room string) error
}

// ErrCannotDelete is returned by a wrapper whose queue or store cannot
// delete rooms.
var ErrCannotDelete = errors.New("room: this deployment cannot delete rooms")

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

// Auditor keeps each room's audit log (roomdb.Engine, and the wrappers over
// it that pass the calls on).
type Auditor interface {
	AppendAudit(ctx context.Context, room string, e AuditEntry) error
	// Audit returns the room's entries, oldest first; none for a room
	// without any (or that never existed).
	Audit(ctx context.Context, room string) ([]AuditEntry, error)
}
