package roomdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Schedule is the key of the room's scheduled changes (HASH: field = the
// change's id, value = its room.ScheduledChange JSON), in the room's slot.
func (k Keys) Schedule() string {
	return k.Config[:len(k.Config)-len("cfg")] + "sched"
}

// ScheduleVersion is the key of the version of the room's schedule (HASH:
// v, bumped by every change of the schedule in the same transaction;
// stored, the highest v the durable store was seen to hold), so that a copy
// of the schedule can say which version it is and the admission loop can
// tell a store that fell behind (durable.Queue.SyncSchedule).
func (k Keys) ScheduleVersion() string {
	return k.Config[:len(k.Config)-len("cfg")] + "schedv"
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
	return changesOf(m), nil
}

// changesOf reads a schedule hash, by time; a value that is not a change is skipped.
func changesOf(m map[string]string) []room.ScheduledChange {
	out := make([]room.ScheduledChange, 0, len(m))
	for _, v := range m {
		var c room.ScheduledChange
		if json.Unmarshal([]byte(v), &c) == nil && c.ID != "" {
			out = append(out, c)
		}
	}
	room.SortSchedule(out)
	return out
}

// ScheduleCopy reads the room's schedule with its version, both at one
// instant (a transaction), and the version the store was last seen to hold.
func (e *Engine) ScheduleCopy(ctx context.Context, roomID string) (cs []room.ScheduledChange, version, stored int64, err error) {
	if !room.ValidRoomID(roomID) {
		return nil, 0, 0, room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	var all *redis.MapStringStringCmd
	var vs *redis.SliceCmd
	p := e.rdb.TxPipeline()
	all = p.HGetAll(ctx, k.Schedule())
	vs = p.HMGet(ctx, k.ScheduleVersion(), "v", "stored")
	if _, err = p.Exec(ctx); err != nil {
		return nil, 0, 0, fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	version, stored = versionOf(vs.Val(), 0), versionOf(vs.Val(), 1)
	return changesOf(all.Val()), version, stored, nil
}

// versionOf reads field i of an HMGET of numbers (0 when absent).
func versionOf(v []any, i int) int64 {
	if i >= len(v) {
		return 0
	}
	s, _ := v[i].(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// ScheduleStored records that the store holds the room's schedule at
// version (or later): ScheduleCopy's stored. It never lowers it, but for a
// race of two writers, which costs one more write of the store.
func (e *Engine) ScheduleStored(ctx context.Context, roomID string, version int64) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	k := KeysFor(roomID).ScheduleVersion()
	cur, err := e.rdb.HGet(ctx, k, "stored").Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	if cur >= version {
		return nil
	}
	p := e.rdb.Pipeline()
	p.HSet(ctx, k, "stored", version)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}

// bump is the change of the schedule's version that goes with each change
// of the schedule, in its transaction.
func bump(ctx context.Context, p redis.Pipeliner, k Keys) {
	p.HIncrBy(ctx, k.ScheduleVersion(), "v", 1)
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
	keys := KeysFor(roomID)
	k := keys.Schedule()
	p := e.rdb.Pipeline()
	n := p.HLen(ctx, k)
	has := p.HExists(ctx, k, c.ID)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	if !has.Val() && n.Val() >= room.ScheduleKeep {
		return room.ErrScheduleFull
	}
	p = e.rdb.TxPipeline()
	p.HSet(ctx, k, c.ID, b)
	bump(ctx, p, keys)
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
	p := e.rdb.TxPipeline()
	p.HDel(ctx, k.Schedule(), id)
	bump(ctx, p, k)
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
	keys := KeysFor(roomID)
	p := e.rdb.TxPipeline()
	for _, c := range cs {
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		p.HSetNX(ctx, keys.Schedule(), c.ID, b)
	}
	bump(ctx, p, keys)
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
	k := KeysFor(roomID)
	if err := e.rdb.Del(ctx, k.Schedule(), k.ScheduleVersion()).Err(); err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}
