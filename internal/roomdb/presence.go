package roomdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Heartbeats on the arrival shards (docs/ENGINE.md): in a room whose joins
// spread, a visitor who joined on arrival shard i (sequence residue i + 1)
// polls that shard while far from the front: the heartbeat is the shard's,
// the position an estimate from the progress each tick publishes there
// (spoll.lua), and nothing of the room's slot is touched. Near the front (the
// zone, merge.lua) the shard sends the poll to the room's shard, exact as
// before. Each tick sweeps the shards' heartbeats and evicts from the queue
// whoever is stale on the shard and has no live heartbeat on the room's
// (ssweep.lua, sevict.lua).

// shardOf is the arrival shard a ticket joined on (its sequence's residue less
// one), and whether it joined on one at all: a pre-queue draw or a join on the
// room's own shard polls the room's shard.
func shardOf(t room.Ticket) (int, bool) {
	r := int(t.Seq % room.SeqResidues)
	if t.Draw > 0 || r < 1 || r > room.MaxJoinShards {
		return 0, false
	}
	return r - 1, true
}

// spoll's reply when it answers the place, by position.
const (
	spollState    = iota // waiting, paused or prequeue
	spollPosition        // the estimated position
	spollWaiting         // the room's count at the last tick (at least the position)
	spollPace            // the pace × 1000
	spollWithin          // the budget of the next poll (ms)
	spollLen
)

// pollOnShard polls a ticket of an arrival shard there (spoll.lua). ok is
// false when the room's shard must answer instead (spoll's 'room', or a shard
// that cannot be reached: the room's shard answers every poll it can). A
// ticket of a shard needs the room's settings: an engine that holds none reads
// them first. A shard fenced by a change of the settings after the ones held
// has them read again, once.
func (e *Engine) pollOnShard(ctx context.Context, t room.Ticket, minInterval time.Duration) (room.Place, bool, error) {
	i, ok := shardOf(t)
	if !ok {
		return room.Place{}, false, nil
	}
	have := e.cached(t.Room)
	if have.ver == "" {
		if have = e.reconfirm(ctx, t.Room, have); have.ver == "" {
			return room.Place{}, false, nil
		}
	}
	for try := 0; try < 2; try++ {
		p, w, err := e.spoll(ctx, t, i, have, minInterval, 0)
		switch {
		case err != nil:
			return room.Place{}, false, nil
		case w == wordStale && try == 0:
			have = e.reconfirm(ctx, t.Room, have)
		case w == "":
			return p, true, nil
		case w == wordSlow:
			return room.Place{}, true, &room.RetryError{After: p.PollWithin}
		default:
			return room.Place{}, false, nil
		}
	}
	return room.Place{}, false, nil
}

// adopt starts the heartbeat of a far visitor of an arrival shard on the
// shard when the room's shard found none there nor on itself (poll.lua's
// negative budget: a loss, a restore, a merge whose heartbeats the shard could
// not take). ok is false when the shard could not take it.
func (e *Engine) adopt(ctx context.Context, t room.Ticket, pos int64) (room.Place, bool) {
	i, ok := shardOf(t)
	have := e.cached(t.Room)
	if !ok || have.ver == "" {
		return room.Place{}, false
	}
	p, w, err := e.spoll(ctx, t, i, have, 0, pos)
	return p, err == nil && w == ""
}

// spoll runs spoll.lua on arrival shard i with the settings held. word is ""
// for a place, else spoll's word (a 'slow' carries the wait in PollWithin).
// adopt is the room's exact position of a visitor whose heartbeat starts on
// the shard (poll.lua's negative budget), 0 for a poll.
func (e *Engine) spoll(ctx context.Context, t room.Ticket, i int, have versioned, minInterval time.Duration, adopt int64) (room.Place, string, error) {
	k := ArrivalKeysFor(t.Room, i)
	c := have.cfg
	var opens int64
	if c.OpensAt != nil {
		opens = c.OpensAt.UnixMilli()
	}
	reply, err := spollCmd.Reply(ctx, e.rdb, []string{k.State, k.Heartbeats(), k.Progress()}, e.nowMS(),
		strconv.FormatInt(t.Seq, 10), fenceOf(have.ver), string(c.Mode), opens, c.AdmitPerMinute, minInterval.Milliseconds(), adopt)
	if err != nil {
		return room.Place{}, "", err
	}
	if len(reply) == slowWait+1 && str(reply[0]) == wordSlow {
		return room.Place{PollWithin: time.Duration(num(reply[slowWait])) * time.Millisecond}, wordSlow, nil
	}
	if w := word(reply); w != "" {
		return room.Place{}, w, nil
	}
	if len(reply) != spollLen {
		return room.Place{}, "", unexpected(spollCmd, reply)
	}
	p := room.Place{Ticket: t, Config: c, State: room.State(str(reply[spollState])),
		Position: num(reply[spollPosition]), Waiting: num(reply[spollWaiting]),
		RatePerMinute: float64(num(reply[spollPace])) / 1000,
		PollWithin:    time.Duration(num(reply[spollWithin])) * time.Millisecond}
	if p.RatePerMinute <= 0 {
		p.RatePerMinute = float64(c.AdmitPerMinute)
	}
	if p.State == room.StatePrequeue {
		p.OpeningRank, p.Position = p.Position, 0
	}
	return p, "", nil
}

// leaveShard marks a leave on the arrival shard the ticket joined on
// (sleave.lua), so its next poll asks the room's shard, which recorded the
// leave. A ticket of the room's own shard has nothing there.
func (e *Engine) leaveShard(ctx context.Context, t room.Ticket) error {
	i, ok := shardOf(t)
	if !ok {
		return nil
	}
	k := ArrivalKeysFor(t.Room, i)
	if err := sleaveCmd.Run(ctx, e.rdb, []string{k.State, k.Heartbeats()}, e.nowMS(), strconv.FormatInt(t.Seq, 10)).Err(); err != nil {
		return fmt.Errorf("%w: %w", room.ErrUnavailable, err)
	}
	return nil
}

// sweepShards is a tick's sweep of a spread room's arrival shards' heartbeats
// (ssweep.lua, e.batch of each shard, all at once) and the eviction from the
// room's queue of whoever they found stale (sevict.lua). graceMS is the
// room's heartbeatTTLSeconds in ms.
func (e *Engine) sweepShards(ctx context.Context, roomID string, shards int, graceMS int64) (int64, error) {
	keys := make([][]string, shards)
	for i := range keys {
		k := ArrivalKeysFor(roomID, i)
		keys[i] = []string{k.State, k.Heartbeats()}
	}
	now := e.nowMS()
	sctx, cancel := context.WithTimeout(ctx, shardBudget)
	replies, errs := ssweepCmd.Each(sctx, e.rdb, keys, now, graceMS, e.batch)
	cancel()
	args := []any{now}
	var failed []error
	for i, v := range replies {
		if errs[i] != nil {
			// As a failed read does (readArrivals): the shard's node is slow
			// or gone, so the room's merges wait a while.
			if ctx.Err() == nil && len(failed) == 0 {
				e.holdMerges(roomID)
			}
			failed = append(failed, fmt.Errorf("%w: arrival shard %d: %w", room.ErrUnavailable, i, errs[i]))
			continue
		}
		stale, _ := v.([]any)
		for _, s := range stale {
			args = append(args, shardSeq(str(s), i))
		}
	}
	if len(args) == 1 {
		return 0, errors.Join(failed...)
	}
	reply, err := e.runKeys(ctx, sevictCmd, roomID, noticeKeys(roomID)[:1], args...)
	if err != nil {
		return 0, errors.Join(append(failed, err)...)
	}
	if word(reply) == wordNoRoom {
		return 0, errors.Join(append(failed, room.ErrUnknownRoom)...)
	}
	return num(reply[0]), errors.Join(failed...)
}

// ShardHeartbeatField is a visitor's field in an arrival shard's heartbeats
// (lib.lua's shf): the sequence over 16 as a 6-byte big-endian integer. The
// shard's sequences all have its residue, so the quotient names one there,
// and 6 bytes take one 8-byte allocation in Redis where HeartbeatField's 7
// take 16. Exported for tools that fill a spread room directly.
func ShardHeartbeatField(seq int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq/room.SeqResidues))
	return string(b[2:])
}

// shardSeq is the sequence of a stale heartbeat of arrival shard i as
// ssweep.lua answers it: less the shard's residue (a multiple of 16, shf's
// field), or whole (hbf's field, written before shf).
func shardSeq(s string, i int) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n%room.SeqResidues != 0 {
		return s
	}
	return strconv.FormatInt(n+int64(i)+1, 10)
}

// dropShardHeartbeats deletes the heartbeats of a spread room's arrival
// shards: a drain took everyone who waited, so none of them is of a place.
func (e *Engine) dropShardHeartbeats(ctx context.Context, roomID string) error {
	shards, err := e.spreadOver(ctx, roomID)
	if err != nil || shards == 0 {
		return err
	}
	for i := range shards {
		if err := e.rdb.Del(ctx, ArrivalKeysFor(roomID, i).Heartbeats()).Err(); err != nil {
			return fmt.Errorf("%w: %w", room.ErrUnavailable, err)
		}
	}
	return nil
}
