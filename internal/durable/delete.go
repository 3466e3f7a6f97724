package durable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// StoreDeleter is a Store that can forget a room and keep its tombstone
// (Disk and S3 do; a store that cannot makes Queue.Delete refuse, since the
// room would come back at the next restore, or its tickets with a room
// created again under its id after a total loss of Redis).
type StoreDeleter interface {
	// Delete forgets the room's settings and head; a room it never had is
	// no error. The tombstone stays.
	Delete(ctx context.Context, room string) error
	// PutTombstone records the room's tombstone (roomdb.Engine.Bury): the
	// highest sequence of the incarnation being deleted.
	PutTombstone(ctx context.Context, room string, dead int64) error
	// Tombstone returns the room's tombstone: ErrNotFound for a room never
	// deleted, ErrBadHead for a record that is not a sequence.
	Tombstone(ctx context.Context, room string) (int64, error)
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

// PutTombstone writes <dir>/<room>.dead.
func (d Disk) PutTombstone(_ context.Context, id string, dead int64) error {
	return d.write(id, ".dead", []byte(strconv.FormatInt(dead, 10)))
}

// Tombstone reads <dir>/<room>.dead.
func (d Disk) Tombstone(_ context.Context, id string) (int64, error) {
	b, err := d.read(id, ".dead")
	if err != nil {
		return 0, err
	}
	return parseTombstone(b)
}

// parseTombstone reads a tombstone record: a sequence (parseHead's), in
// decimal.
func parseTombstone(b []byte) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < SeqMin || n >= SeqMax {
		return 0, fmt.Errorf("%w: tombstone %.40q", ErrBadHead, b)
	}
	return n, nil
}

// Delete removes a room for good. With a store: the room's tombstone first,
// in Redis (Engine.Bury: every sequence it issued) and then in the store, so
// that no ticket of this incarnation comes back even in a room created again
// under the id after a total loss of Redis; then its settings and head from
// the store (so no restore brings it back); then the room from Redis, which
// keeps the tombstone too. ErrUnknownRoom when neither had it.
func (q *Queue) Delete(ctx context.Context, id string) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	stored := false
	if q.o.Store != nil {
		sd, ok := q.o.Store.(StoreDeleter)
		if !ok {
			return room.ErrCannotDelete
		}
		_, err := q.o.Store.Settings(ctx, id)
		stored = err == nil
		dead, err := q.eng.Bury(ctx, id, 0)
		if err != nil {
			return err
		}
		if err := sd.PutTombstone(ctx, id, dead); err != nil {
			return errors.Join(room.ErrUnavailable, err)
		}
		if err := sd.Delete(ctx, id); err != nil {
			return errors.Join(room.ErrUnavailable, err)
		}
	}
	if err := q.dropSchedule(ctx, id); err != nil { // schedule.go
		return err
	}
	q.mu.Lock()
	q.listed = slices.DeleteFunc(q.listed, func(s string) bool { return s == id })
	delete(q.recorded, id)
	q.mu.Unlock()
	err := q.eng.Delete(ctx, id)
	if errors.Is(err, room.ErrUnknownRoom) && stored {
		return nil
	}
	return err
}

// buryFromStore gives the room the tombstone the store kept of an
// incarnation deleted before (Engine.Bury), before its settings are stored in
// Redis by a restore or a PUT: after a total loss of Redis only the store
// remembers it. A store without tombstones, or none for the room, is nothing
// to do; a store that cannot be read is an error (room.ErrUnavailable): a
// room is never created without its tombstone.
func (q *Queue) buryFromStore(ctx context.Context, id string) error {
	sd, ok := q.o.Store.(StoreDeleter)
	if !ok {
		return nil
	}
	dead, err := sd.Tombstone(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case errors.Is(err, ErrBadHead):
		// Not a sequence: the safest tombstone is now (every ticket so far).
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "tombstone record unreadable: burying every ticket so far",
			slog.String("room", id), slog.String("error", err.Error()))
		dead = 0
	case err != nil:
		return fmt.Errorf("%w: tombstone %s: %w", room.ErrUnavailable, id, err)
	}
	_, err = q.eng.Bury(ctx, id, dead)
	return err
}

// AppendAudit passes the entry on to the engine.
func (q *Queue) AppendAudit(ctx context.Context, id string, a room.AuditEntry) error {
	return q.eng.AppendAudit(ctx, id, a)
}

// Audit reads the engine's audit log of the room.
func (q *Queue) Audit(ctx context.Context, id string) ([]room.AuditEntry, error) {
	return q.eng.Audit(ctx, id)
}
