package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// ScheduleStore is a Store that keeps each room's scheduled changes (Disk
// and S3 do): the JSON array of room.ScheduledChange, so that a total loss
// of Redis gives the schedule back with the room (Queue.Restore). Redis
// holds the schedule; after each change the store's copy is rewritten from
// it by compare-and-swap (Queue.storeSchedule), and a copy that fell behind
// (a write that failed) is rewritten by the admission loop
// (Queue.SyncSchedule).
type ScheduleStore interface {
	// PutSchedule writes the room's schedule over the copy read with tag
	// ("" : over none), else ErrStale.
	PutSchedule(ctx context.Context, room string, b []byte, tag string) error
	// Schedule returns the stored schedule and its tag, ErrNotFound for a
	// room whose schedule was never put.
	Schedule(ctx context.Context, room string) ([]byte, string, error)
}

var (
	_ ScheduleStore = Disk{}
	_ ScheduleStore = (*S3)(nil)
)

// PutSchedule writes <dir>/<room>.schedule over the copy of tag.
func (d Disk) PutSchedule(_ context.Context, id string, b []byte, tag string) error {
	return d.swap(id, ".schedule", b, tag)
}

// Schedule reads <dir>/<room>.schedule with its tag.
func (d Disk) Schedule(_ context.Context, id string) ([]byte, string, error) {
	return d.readTagged(id, ".schedule")
}

func (s *S3) scheduleKey(id string) string { return s.Prefix + "rooms/" + id + ".schedule" }

// PutSchedule writes <prefix>rooms/<room>.schedule over the copy of tag (its ETag).
func (s *S3) PutSchedule(ctx context.Context, id string, b []byte, tag string) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	return s.putIf(ctx, s.scheduleKey(id), b, tag)
}

// Schedule reads <prefix>rooms/<room>.schedule with its ETag.
func (s *S3) Schedule(ctx context.Context, id string) ([]byte, string, error) {
	if !room.ValidRoomID(id) {
		return nil, "", room.ErrInvalidRoom
	}
	return s.getTagged(ctx, s.scheduleKey(id))
}

// Now is the queue's clock: the time scheduled changes fall due by.
func (q *Queue) Now() time.Time { return q.o.Clock() }

// Schedule reads the room's scheduled changes, by time, restoring a lost
// room (and with it its schedule).
func (q *Queue) Schedule(ctx context.Context, id string) ([]room.ScheduledChange, error) {
	if _, err := q.GetConfig(ctx, id); err != nil {
		return nil, err
	}
	return q.eng.Schedule(ctx, id)
}

// PutScheduled adds a change to an existing room's schedule (or replaces
// the one of its id) in Redis, then in the store. When the store write fails
// the change stays planned in Redis and the error wraps ErrNotDurable and
// room.ErrUnavailable (a 503: plan it again).
func (q *Queue) PutScheduled(ctx context.Context, id string, c room.ScheduledChange) error {
	if _, err := q.GetConfig(ctx, id); err != nil {
		return err
	}
	if err := q.eng.PutScheduled(ctx, id, c); err != nil {
		return err
	}
	return q.storeSchedule(ctx, id)
}

// LeaseScheduled takes the lease on a change (roomdb.Engine.LeaseScheduled).
func (q *Queue) LeaseScheduled(ctx context.Context, id, change string) (room.ScheduledChange, string, error) {
	return q.eng.LeaseScheduled(ctx, id, change)
}

// ReleaseScheduled gives a change's lease back, if token still holds it.
func (q *Queue) ReleaseScheduled(ctx context.Context, id, change, token string) error {
	return q.eng.ReleaseScheduled(ctx, id, change, token)
}

// RemoveScheduled removes a leased change (cancelled) from the schedule in
// Redis, if token still holds its lease, then from the store's copy
// (ErrNotDurable as PutScheduled).
func (q *Queue) RemoveScheduled(ctx context.Context, id, change, token string) error {
	if err := q.eng.RemoveScheduled(ctx, id, change, token); err != nil {
		return err
	}
	return q.storeSchedule(ctx, id)
}

// RefuseScheduled keeps a leased change that is not valid at its time in the
// schedule, refused, in Redis, if token still holds its lease
// (roomdb.Engine.RefuseScheduled: room.ErrLeaseLost, nothing stored, when
// it does not), then in the store's copy (ErrNotDurable as PutScheduled).
func (q *Queue) RefuseScheduled(ctx context.Context, id string, c room.ScheduledChange, token string) error {
	if err := q.eng.RefuseScheduled(ctx, id, c, token); err != nil {
		return err
	}
	return q.storeSchedule(ctx, id)
}

// ApplyScheduled stores a leased change's settings as PutConfig does, the
// change leaving the schedule in the same step in Redis
// (roomdb.Engine.ApplyScheduled: room.ErrLeaseLost, nothing stored, when
// token no longer holds the lease). The store's copy of the schedule follows;
// a failure to write it is logged and left to SyncSchedule, as the change
// is made.
func (q *Queue) ApplyScheduled(ctx context.Context, id, change, token string, cfg room.Config) (room.Config, error) {
	stored, err := q.putConfig(ctx, id, func() (room.Config, error) { return q.eng.ApplyScheduled(ctx, id, change, token, cfg) })
	if err == nil || errors.Is(err, ErrNotDurable) {
		_ = q.storeSchedule(ctx, id)
	}
	return stored, err
}

// swapTries bounds how often a writer of a record written by
// compare-and-swap reads it again after another writer's write came between.
const swapTries = 8

// storeSchedule writes the room's schedule, as Redis holds it now, to the
// store, and records in Redis the version it wrote. It reads the store's
// copy before Redis's, and writes over that copy only: when another writer
// wrote between, it reads both again. So the last write to land is a copy
// read after every change whose writer saw its own write land or fail:
// neither of two writers at once loses the other's change, as two whole
// rewrites did (the second wrote its older copy over the first's).
func (q *Queue) storeSchedule(ctx context.Context, id string) error {
	st, ok := q.o.Store.(ScheduleStore)
	if !ok {
		return nil
	}
	err := ErrStale
	for try := 0; try < swapTries && errors.Is(err, ErrStale); try++ {
		err = q.swapSchedule(ctx, st, id)
	}
	if err != nil {
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "store room schedule", slog.String("room", id), slog.String("error", err.Error()))
		return fmt.Errorf("%w: %w: %w", room.ErrUnavailable, ErrNotDurable, err)
	}
	return nil
}

// swapSchedule is one try of storeSchedule.
func (q *Queue) swapSchedule(ctx context.Context, st ScheduleStore, id string) error {
	_, tag, err := st.Schedule(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	cs, version, _, err := q.eng.ScheduleCopy(ctx, id)
	if err != nil {
		return err
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	if err := st.PutSchedule(ctx, id, b, tag); err != nil {
		return err
	}
	// Stored: a failure to note it costs one write more, by SyncSchedule.
	_ = q.eng.ScheduleStored(ctx, id, version)
	return nil
}

// SyncSchedule writes the room's schedule to the store when the store's copy
// is behind Redis's (a write after a change failed: the change stood in
// Redis, and its caller got ErrNotDurable). The admission loop calls it
// every round, so the copy a total loss would restore catches up within a
// second of the store's return; a room whose copy is current costs one read
// of Redis.
func (q *Queue) SyncSchedule(ctx context.Context, id string) error {
	if _, ok := q.o.Store.(ScheduleStore); !ok {
		return nil
	}
	_, version, stored, err := q.eng.ScheduleCopy(ctx, id)
	if err != nil || version <= stored {
		return err
	}
	return q.storeSchedule(ctx, id)
}

// restoreSchedule puts the store's copy of a restored room's schedule back
// into Redis (a new version there, which SyncSchedule then writes back: the
// same schedule, with any change planned meanwhile). A copy that cannot be
// read is logged: the room comes back without it (an operator plans again),
// as its settings need no schedule.
func (q *Queue) restoreSchedule(ctx context.Context, id string) {
	st, ok := q.o.Store.(ScheduleStore)
	if !ok {
		return
	}
	b, _, err := st.Schedule(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return
	}
	var cs []room.ScheduledChange
	if err == nil {
		err = json.Unmarshal(b, &cs)
	}
	if err == nil {
		err = q.eng.RestoreSchedule(ctx, id, cs)
	}
	if err != nil {
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "room schedule not restored", slog.String("room", id), slog.String("error", err.Error()))
		return
	}
	if len(cs) > 0 {
		q.o.Logger.LogAttrs(ctx, slog.LevelWarn, "room schedule restored from the durable store", slog.String("room", id), slog.Int("changes", len(cs)))
	}
}

// dropSchedule removes a room's schedule from Redis and the store before the
// room is deleted, so that a room created again under the id starts with
// none.
func (q *Queue) dropSchedule(ctx context.Context, id string) error {
	if err := q.eng.DropSchedule(ctx, id); err != nil {
		return err
	}
	st, ok := q.o.Store.(ScheduleStore)
	if !ok {
		return nil
	}
	err := ErrStale
	for try := 0; try < swapTries && errors.Is(err, ErrStale); try++ {
		var tag string
		if _, tag, err = st.Schedule(ctx, id); err == nil || errors.Is(err, ErrNotFound) {
			err = st.PutSchedule(ctx, id, []byte("[]"), tag)
		}
	}
	if err != nil {
		return errors.Join(room.ErrUnavailable, err)
	}
	return nil
}
