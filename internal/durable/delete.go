package durable

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// StoreDeleter is a Store that can forget a room (Disk does; a store that
// cannot makes Queue.Delete refuse, since the room would come back at the
// next restore).
type StoreDeleter interface {
	Delete(ctx context.Context, room string) error
}

var _ StoreDeleter = Disk{}

// Delete removes a room's settings and head files; a room it never had is
// no error.
func (d Disk) Delete(_ context.Context, id string) error {
	for _, ext := range []string{".json", ".head"} {
		p, err := d.path(id, ext)
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// deleter is an engine that can remove a room for good (*roomdb.Engine).
type deleter interface {
	Delete(ctx context.Context, room string) error
}

var (
	_ deleter = (*Queue)(nil)
	_ deleter = (*roomdb.Engine)(nil)
)

// Delete removes a room for good: from the store first (so no restore brings
// it back), then from Redis. ErrUnknownRoom when neither had it.
func (q *Queue) Delete(ctx context.Context, id string) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	eng, ok := q.eng.(deleter)
	if !ok {
		return room.ErrCannotDelete
	}
	stored := false
	if q.o.Store != nil {
		sd, ok := q.o.Store.(StoreDeleter)
		if !ok {
			return room.ErrCannotDelete
		}
		_, err := q.o.Store.Settings(ctx, id)
		stored = err == nil
		if err := sd.Delete(ctx, id); err != nil {
			return errors.Join(room.ErrUnavailable, err)
		}
	}
	q.mu.Lock()
	q.listed = slices.DeleteFunc(q.listed, func(s string) bool { return s == id })
	delete(q.recorded, id)
	q.mu.Unlock()
	err := eng.Delete(ctx, id)
	if errors.Is(err, room.ErrUnknownRoom) && stored {
		return nil
	}
	return err
}

// auditor is an engine that keeps each room's audit log (*roomdb.Engine).
type auditor interface {
	AppendAudit(ctx context.Context, room string, e room.AuditEntry) error
	Audit(ctx context.Context, room string) ([]room.AuditEntry, error)
}

var (
	_ auditor = (*Queue)(nil)
	_ auditor = (*roomdb.Engine)(nil)
)

// AppendAudit passes the entry on to the engine.
func (q *Queue) AppendAudit(ctx context.Context, id string, a room.AuditEntry) error {
	au, ok := q.eng.(auditor)
	if !ok {
		return nil
	}
	return au.AppendAudit(ctx, id, a)
}

// Audit reads the engine's audit log of the room.
func (q *Queue) Audit(ctx context.Context, id string) ([]room.AuditEntry, error) {
	au, ok := q.eng.(auditor)
	if !ok {
		return nil, nil
	}
	return au.Audit(ctx, id)
}
