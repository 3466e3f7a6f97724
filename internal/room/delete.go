package room

import (
	"context"
	"errors"
	"fmt"
)

// Deleter is a queue that can remove a room for good (room.Engine, and the
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

var _ Deleter = (*Engine)(nil)

// Delete removes a room for good: the keys of its slot in one DEL (a tick or
// a join running meanwhile finds no settings and answers unknown room), then
// its arrival shards', then its entry in the registry. Join limiters and
// spent challenge nonces expire on their own. Visitors still holding a
// ticket, grant or session of the room are refused from then on.
func (e *Engine) Delete(ctx context.Context, room string) error {
	if !ValidRoomID(room) {
		return ErrInvalidRoom
	}
	k := KeysFor(room)
	n, err := e.rdb.Del(ctx, append(k.List(), k.Arrivals(), k.Fence(), k.History())...).Result()
	if err != nil {
		return fmt.Errorf("%w: delete %s: %w", ErrUnavailable, room, err)
	}
	for i := range MaxJoinShards {
		a := ArrivalKeysFor(room, i)
		if err := e.rdb.Del(ctx, a.State, a.Arrivals).Err(); err != nil {
			return fmt.Errorf("%w: delete %s: %w", ErrUnavailable, room, err)
		}
	}
	p := e.rdb.Pipeline()
	srem := p.SRem(ctx, RegistryKey, room)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: delete %s: %w", ErrUnavailable, room, err)
	}
	e.mu.Lock()
	delete(e.cfgs, room)
	e.mu.Unlock()
	if n == 0 && srem.Val() == 0 {
		return ErrUnknownRoom
	}
	return nil
}
