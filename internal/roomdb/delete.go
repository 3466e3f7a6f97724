package roomdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

var (
	buryCmd = lua.NewScript("bury", lua.Bury)
	dropCmd = lua.NewScript("drop", lua.Drop)
)

// Delete removes a room for good: the keys of its slot in one script that
// leaves only its tombstone (drop.lua: a tick or a join running meanwhile
// finds no settings and answers unknown room), then its arrival shards',
// then its entry in the registry. Join limiters and spent challenge nonces
// expire on their own. Visitors still holding a ticket, grant or session of
// the room are refused from then on, and stay refused if the room is created
// again under its id: every sequence the room issued is at or below the
// tombstone, and no such ticket is ever restored (lib.lua buried). Deleting a
// room that only a tombstone remains of is room.ErrUnknownRoom.
func (e *Engine) Delete(ctx context.Context, roomID string) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	shards, err := e.shardsLast(ctx, roomID)
	if err != nil {
		return fmt.Errorf("%w: delete %s: %w", room.ErrUnavailable, roomID, err)
	}
	k := KeysFor(roomID)
	reply, err := e.runKeys(ctx, dropCmd, roomID, append([]string{k.Arrivals(), k.Fence(), k.History()}, k.NoticeKeys()...), shards)
	if err != nil {
		return err
	}
	if len(reply) != 2 {
		return unexpected(dropCmd, reply)
	}
	existed := num(reply[0]) == 1
	if err := e.dropRefs(ctx, roomID); err != nil { // visitor.go
		return err
	}
	if err := e.dropTrail(ctx, roomID); err != nil { // trail.go
		return err
	}
	for i := range room.MaxJoinShards {
		a := ArrivalKeysFor(roomID, i)
		if err := e.rdb.Del(ctx, a.State, a.Arrivals, a.Heartbeats(), a.Progress()).Err(); err != nil {
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
	if !existed && srem.Val() == 0 {
		return room.ErrUnknownRoom
	}
	return nil
}

// Bury raises the room's tombstone and returns it: with dead ≤ 0, to every
// sequence the room (and its arrival shards) issued so far, as Delete does,
// which the durable store records before the room is deleted; with dead > 0,
// to dead when higher, the tombstone the store gives back to a room restored
// or created again after a total loss, before its settings are stored. No
// ticket at or below the tombstone is ever restored (lib.lua buried); the
// room's next sequences are above it. It needs no settings (ErrUnknownRoom
// never). It returns 0 when the room has no tombstone.
func (e *Engine) Bury(ctx context.Context, roomID string, dead int64) (int64, error) {
	if !room.ValidRoomID(roomID) {
		return 0, room.ErrInvalidRoom
	}
	args := []any{strconv.FormatInt(dead, 10), ""}
	if dead <= 0 {
		shards, err := e.shardsLast(ctx, roomID)
		if err != nil {
			return 0, fmt.Errorf("%w: bury %s: %w", room.ErrUnavailable, roomID, err)
		}
		args = []any{"now", shards}
	}
	reply, err := e.run(ctx, buryCmd, roomID, args...)
	if err != nil {
		return 0, err
	}
	if len(reply) != 1 {
		return 0, unexpected(buryCmd, reply)
	}
	return num(reply[0]), nil
}

// shardsLast is the highest sequence the room's arrival shards issued, as
// the decimal the scripts take ("" for none).
func (e *Engine) shardsLast(ctx context.Context, roomID string) (string, error) {
	p := e.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, room.MaxJoinShards)
	for i := range room.MaxJoinShards {
		cmds[i] = p.HGet(ctx, ArrivalKeysFor(roomID, i).State, "seq")
	}
	_, _ = p.Exec(ctx) // each command's own error is read below
	var top int64
	for _, c := range cmds {
		v, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return "", err
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > top {
			top = n
		}
	}
	if top == 0 {
		return "", nil
	}
	return strconv.FormatInt(top, 10), nil
}
