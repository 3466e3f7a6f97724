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
// and S3 do): the JSON array of room.ScheduledChange, rewritten whole after
// each change of the schedule, so that a total loss of Redis gives the
// schedule back with the room (Queue.Restore).
type ScheduleStore interface {
	PutSchedule(ctx context.Context, room string, b []byte) error
	// Schedule returns ErrNotFound for a room whose schedule was never put.
	Schedule(ctx context.Context, room string) ([]byte, error)
}

var (
	_ ScheduleStore = Disk{}
	_ ScheduleStore = (*S3)(nil)
)

// PutSchedule writes <dir>/<room>.schedule.
func (d Disk) PutSchedule(_ context.Context, id string, b []byte) error {
	return d.write(id, ".schedule", b)
}

// Schedule reads <dir>/<room>.schedule.
func (d Disk) Schedule(_ context.Context, id string) ([]byte, error) { return d.read(id, ".schedule") }

func (s *S3) scheduleKey(id string) string { return s.Prefix + "rooms/" + id + ".schedule" }

// PutSchedule writes <prefix>rooms/<room>.schedule.
func (s *S3) PutSchedule(ctx context.Context, id string, b []byte) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	return s.put(ctx, s.scheduleKey(id), b, "application/json")
}

// Schedule reads <prefix>rooms/<room>.schedule.
func (s *S3) Schedule(ctx context.Context, id string) ([]byte, error) {
	if !room.ValidRoomID(id) {
		return nil, room.ErrInvalidRoom
	}
	return s.get(ctx, s.scheduleKey(id))
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
func (q *Queue) LeaseScheduled(ctx context.Context, id, change string) (room.ScheduledChange, bool, error) {
	return q.eng.LeaseScheduled(ctx, id, change)
}

// ReleaseScheduled gives a change's lease back.
func (q *Queue) ReleaseScheduled(ctx context.Context, id, change string) error {
	return q.eng.ReleaseScheduled(ctx, id, change)
}

// RemoveScheduled removes a leased change (applied or cancelled) from the
// schedule in Redis, then from the store's copy (ErrNotDurable as
// PutScheduled).
func (q *Queue) RemoveScheduled(ctx context.Context, id, change string) error {
	if err := q.eng.RemoveScheduled(ctx, id, change); err != nil {
		return err
	}
	return q.storeSchedule(ctx, id)
}

// storeSchedule writes the room's schedule, as Redis holds it, to the store.
func (q *Queue) storeSchedule(ctx context.Context, id string) error {
	st, ok := q.o.Store.(ScheduleStore)
	if !ok {
		return nil
	}
	cs, err := q.eng.Schedule(ctx, id)
	if err != nil {
		return err
	}
	b, err := json.Marshal(cs)
	if err == nil {
		err = st.PutSchedule(ctx, id, b)
	}
	if err != nil {
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "store room schedule", slog.String("room", id), slog.String("error", err.Error()))
		return fmt.Errorf("%w: %w: %w", room.ErrUnavailable, ErrNotDurable, err)
	}
	return nil
}

// restoreSchedule puts the store's copy of a restored room's schedule back
// into Redis. A copy that cannot be read is logged: the room comes back
// without it (an operator plans again), as its settings need no schedule.
func (q *Queue) restoreSchedule(ctx context.Context, id string) {
	st, ok := q.o.Store.(ScheduleStore)
	if !ok {
		return
	}
	b, err := st.Schedule(ctx, id)
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
	if st, ok := q.o.Store.(ScheduleStore); ok {
		if err := st.PutSchedule(ctx, id, []byte("[]")); err != nil {
			return errors.Join(room.ErrUnavailable, err)
		}
	}
	return nil
}
