package roomdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// ScheduleLeaseTTL bounds how long a lease on a scheduled change is held: a
// process that stopped while applying one leaves it to the next round after
// this. A holder slower than this (a durable write that hangs) is fenced, not
// trusted to be done: the change's settings are stored, and the change
// removed, only by the lease's holder in one script (ApplyScheduled), a
// refused change is kept only by it (RefuseScheduled), and a lease is given
// back only by its holder (ReleaseScheduled).
const ScheduleLeaseTTL = 10 * time.Second

// lease names a scheduled change's lease and its holder's token; the zero
// lease is none (a change of settings not from the schedule).
type lease struct{ change, token string }

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
// of the schedule, in its transaction (the scripts bump it as they write).
func bump(ctx context.Context, p redis.Pipeliner, k Keys) {
	p.HIncrBy(ctx, k.ScheduleVersion(), "v", 1)
}

// PutScheduled adds a change to the room's schedule, or replaces the one of
// the same id; room.ErrScheduleFull when the room holds ScheduleKeep already.
// The cap is checked in the script that writes, so planners at once cannot
// pass it together.
func (e *Engine) PutScheduled(ctx context.Context, roomID string, c room.ScheduledChange) error {
	return e.writeChange(ctx, roomID, c, schedputCmd, func(k Keys) []string { return []string{k.Schedule(), k.ScheduleVersion()} },
		room.ScheduleKeep, map[string]error{wordFull: room.ErrScheduleFull})
}

// writeChange runs s, a script that writes the change c into the room's
// schedule, with the keys keys names and ARGV c's id, c's JSON, then last:
// nil for its 'ok', else the error errs gives its reply word.
func (e *Engine) writeChange(ctx context.Context, roomID string, c room.ScheduledChange, s script, keys func(Keys) []string, last any, errs map[string]error) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	reply, err := s.Reply(ctx, e.rdb, keys(KeysFor(roomID)), c.ID, b, last)
	if err != nil {
		return fmt.Errorf("%w: schedule %s: %w", room.ErrUnavailable, roomID, err)
	}
	w := word(reply)
	if w == wordOK {
		return nil
	}
	if err, ok := errs[w]; ok {
		return err
	}
	return unexpected(s, reply)
}

// LeaseScheduled takes the lease on the change id for ScheduleLeaseTTL and
// reads it, returning the lease's token, which every step under the lease
// passes: "" when another process holds the lease (it is being applied or
// cancelled), room.ErrUnknownChange when the change is not (or no longer) in
// the schedule, then with the lease given back.
func (e *Engine) LeaseScheduled(ctx context.Context, roomID, id string) (room.ScheduledChange, string, error) {
	if !room.ValidRoomID(roomID) {
		return room.ScheduledChange{}, "", room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go ≥ 1.24)
	token := hex.EncodeToString(b)
	ok, err := e.rdb.SetNX(ctx, k.ScheduleLease(id), token, ScheduleLeaseTTL).Result()
	if err != nil {
		return room.ScheduledChange{}, "", fmt.Errorf("%w: schedule lease %s: %w", room.ErrUnavailable, roomID, err)
	}
	if !ok {
		return room.ScheduledChange{}, "", nil
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
		_ = e.ReleaseScheduled(ctx, roomID, id, token) // else it expires
		return room.ScheduledChange{}, "", err
	}
	return c, token, nil
}

// ReleaseScheduled gives the lease on the change id back, if token still
// holds it; room.ErrLeaseLost (nothing done) when it ran out or another
// process took it since.
func (e *Engine) ReleaseScheduled(ctx context.Context, roomID, id, token string) error {
	return e.freeScheduled(ctx, roomID, id, token, "")
}

// RemoveScheduled removes the change id from the schedule (cancelled) and
// gives its lease back, if token still holds the lease; room.ErrLeaseLost
// (nothing done) when it ran out or another process took it since.
func (e *Engine) RemoveScheduled(ctx context.Context, roomID, id, token string) error {
	return e.freeScheduled(ctx, roomID, id, token, id)
}

// freeScheduled runs schedfree.lua: the lease on id given back by its
// holder, and the change remove taken out of the schedule ("" for none).
func (e *Engine) freeScheduled(ctx context.Context, roomID, id, token, remove string) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	reply, err := schedfreeCmd.Reply(ctx, e.rdb, []string{k.ScheduleLease(id), k.Schedule(), k.ScheduleVersion()}, token, remove)
	if err != nil {
		return fmt.Errorf("%w: schedule lease %s: %w", room.ErrUnavailable, roomID, err)
	}
	switch word(reply) {
	case wordOK:
		return nil
	case wordLost:
		return fmt.Errorf("%w: %s", room.ErrLeaseLost, id)
	}
	return unexpected(schedfreeCmd, reply)
}

// RefuseScheduled keeps c, a leased change that is not valid at its time
// (c.Refused and c.RefusedAt say why and when), in the schedule in place of
// the one of its id, if token still holds the change's lease, and in the same
// script gives the lease back: a process whose lease ran out writes nothing
// (room.ErrLeaseLost), so its late refusal cannot undo what the lease's next
// holder did with the change (applied, refused or cancelled it);
// room.ErrUnknownChange (the lease given back, nothing stored) when the
// change left the schedule (the room was deleted).
func (e *Engine) RefuseScheduled(ctx context.Context, roomID string, c room.ScheduledChange, token string) error {
	return e.writeChange(ctx, roomID, c, schedrefuseCmd,
		func(k Keys) []string { return []string{k.ScheduleLease(c.ID), k.Schedule(), k.ScheduleVersion()} }, token,
		map[string]error{wordLost: fmt.Errorf("%w: %s", room.ErrLeaseLost, c.ID), wordGone: fmt.Errorf("%w: %s", room.ErrUnknownChange, c.ID)})
}

// ApplyScheduled stores cfg, a scheduled change's settings, as PutConfig
// does, if token still holds the change's lease, and in the same script
// removes the change from the schedule and gives the lease back: a process
// whose lease ran out stores nothing (room.ErrLeaseLost), and one that takes
// the lease after this finds no change to apply again.
func (e *Engine) ApplyScheduled(ctx context.Context, roomID, id, token string, cfg room.Config) (room.Config, error) {
	if token == "" {
		return room.Config{}, fmt.Errorf("%w: %s: no token", room.ErrLeaseLost, id)
	}
	return e.storeConfig(ctx, roomID, cfg, lease{change: id, token: token})
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
