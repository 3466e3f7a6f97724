package roomdb

import (
	"context"
	"fmt"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Delete removes a room for good: the keys of its slot in one DEL (a tick or
// a join running meanwhile finds no settings and answers unknown room), then
// its arrival shards', then its entry in the registry. Join limiters and
// spent challenge nonces expire on their own. Visitors still holding a
// ticket, grant or session of the room are refused from then on.
func (e *Engine) Delete(ctx context.Context, roomID string) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	n, err := e.rdb.Del(ctx, append(k.List(), k.Arrivals(), k.Fence(), k.History())...).Result()
	if err != nil {
		return fmt.Errorf("%w: delete %s: %w", room.ErrUnavailable, roomID, err)
	}
	for i := range room.MaxJoinShards {
		a := ArrivalKeysFor(roomID, i)
		if err := e.rdb.Del(ctx, a.State, a.Arrivals).Err(); err != nil {
			return fmt.Errorf("%w: delete %s: %w", room.ErrUnavailable, roomID, err)
		}
	}
	p := e.rdb.Pipeline()
	srem := p.SRem(ctx, RegistryKey, roomID)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: delete %s: %w", room.ErrUnavailable, roomID, err)
	}
	e.mu.Lock()
	delete(e.cfgs, roomID)
	e.mu.Unlock()
	if n == 0 && srem.Val() == 0 {
		return room.ErrUnknownRoom
	}
	return nil
}
