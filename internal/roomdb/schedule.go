package roomdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Schedule is the key of the room's scheduled changes (HASH: field = the
// change's id, value = its room.ScheduledChange JSON), in the room's slot.
func (k Keys) Schedule() string {
	return k.Config[:len(k.Config)-len("cfg")] + "sched"
}

// ScheduleLease is the key that one process holds while it applies or
// cancels the change id (STRING, expiring after ScheduleLeaseTTL).
func (k Keys) ScheduleLease(id string) string {
	return k.Config[:len(k.Config)-len("cfg")] + "schedlease:" + id
}

// ScheduleLeaseTTL bounds how long a lease on a scheduled change is held: a
// process that stopped while applying one leaves it to the next tick after
// this. Every call under the lease is bounded by the client's 400 ms.
const ScheduleLeaseTTL = 10 * time.Second

// Schedule reads the room's scheduled changes, by time. A value that is not
// a change is skipped.
func (e *Engine) Schedule(ctx context.Context, roomID string) ([]room.ScheduledChange, error) {
	if !room.ValidRoomID(roomID) {
		return nil, room.ErrInvalidRoom
	}
	m, err := e.rdb.HGetAll(ctx, KeysFor(roomID).Schedule()).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	out := make([]room.ScheduledChange, 0, len(m))
	for _, v := range m {
		var c room.ScheduledChange
		if json.Unmarshal([]byte(v), &c) == nil && c.ID != "" {
			out = append(out, c)
		}
	}
	room.SortSchedule(out)
	return out, nil
}

// PutScheduled adds a change to the room's schedule, or replaces the one of
// the same id; room.ErrScheduleFull when the room holds ScheduleKeep already.
func (e *Engine) PutScheduled(ctx context.Context, roomID string, c room.ScheduledChange) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	k := KeysFor(roomID).Schedule()
	p := e.rdb.Pipeline()
	n := p.HLen(ctx, k)
	has := p.HExists(ctx, k, c.ID)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	if !has.Val() && n.Val() >= room.ScheduleKeep {
		return room.ErrScheduleFull
	}
	p = e.rdb.Pipeline()
	p.HSet(ctx, k, c.ID, b)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}

// LeaseScheduled takes the lease on the change id for ScheduleLeaseTTL and
// reads it: false when another process holds the lease (it is being
// applied or cancelled), room.ErrUnknownChange when it is not (or no longer)
// in the schedule, then with the lease released.
func (e *Engine) LeaseScheduled(ctx context.Context, roomID, id string) (room.ScheduledChange, bool, error) {
	if !room.ValidRoomID(roomID) {
		return room.ScheduledChange{}, false, room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	ok, err := e.rdb.SetNX(ctx, k.ScheduleLease(id), "1", ScheduleLeaseTTL).Result()
	if err != nil {
		return room.ScheduledChange{}, false, fmt.Errorf("%w: schedule lease %s: %w", room.ErrUnavailable, roomID, err)
	}
	if !ok {
		return room.ScheduledChange{}, false, nil
	}
	v, err := e.rdb.HGet(ctx, k.Schedule(), id).Result()
	var c room.ScheduledChange
	switch {
	case errors.Is(err, redis.Nil):
		err = room.ErrUnknownChange
	case err != nil:
		err = fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	case json.Unmarshal([]byte(v), &c) != nil:
		err = room.ErrUnknownChange
	}
	if err != nil {
		_ = e.ReleaseScheduled(ctx, roomID, id) // else it expires
		return room.ScheduledChange{}, false, err
	}
	return c, true, nil
}

// ReleaseScheduled gives the lease on the change id back.
func (e *Engine) ReleaseScheduled(ctx context.Context, roomID, id string) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	if err := e.rdb.Del(ctx, KeysFor(roomID).ScheduleLease(id)).Err(); err != nil {
		return fmt.Errorf("%w: schedule lease %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}

// RemoveScheduled removes the change id from the schedule (applied or
// cancelled), under its lease, and releases the lease.
func (e *Engine) RemoveScheduled(ctx context.Context, roomID, id string) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	p := e.rdb.Pipeline()
	p.HDel(ctx, k.Schedule(), id)
	p.Del(ctx, k.ScheduleLease(id))
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}

// RestoreSchedule puts back a room's schedule after a loss of Redis: each
// change the room does not hold (HSETNX: one planned meanwhile stays).
func (e *Engine) RestoreSchedule(ctx context.Context, roomID string, cs []room.ScheduledChange) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	if len(cs) == 0 {
		return nil
	}
	k := KeysFor(roomID).Schedule()
	p := e.rdb.Pipeline()
	for _, c := range cs {
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		p.HSetNX(ctx, k, c.ID, b)
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: restore schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}

// DropSchedule removes the room's schedule (the room is being deleted).
func (e *Engine) DropSchedule(ctx context.Context, roomID string) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	if err := e.rdb.Del(ctx, KeysFor(roomID).Schedule()).Err(); err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}
