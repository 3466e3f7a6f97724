package roomdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Arrival shards (docs/ENGINE.md, "Arrival shards"): a room with joinShards =
// k > 0 takes the joins of its open queue on k more hash slots, {room~a<n>} and
// on, which a cluster spreads over its nodes, so a burst of joins is not
// bound by the one shard that holds the room. Each shard keeps its joins in
// order in a list, with sequences of its own residue (lib.lua next_seq); every
// tick merges them into the queue up to a watermark below which every shard
// has handed over all it took (merge.lua), so visitors are queued, and
// admitted, in ticket order (I3).

// confirmFor is how long a join trusts the settings the room's shard last
// confirmed before it goes there again: arrival shards do not know the
// room's settings, so a change (a pause, a closing, the challenge) reaches
// them through the engines that route to them within that time. A change
// fences the shards first (PutConfig), so a join sent with the settings from
// before it is turned away there and made again as the new ones say.
const confirmFor = time.Second

// arrivingPoll is the budget a join on an arrival shard, and a poll before
// the merge, are told (poll.lua's ARRIVING): the next tick merges the join, so
// the visitor comes back after it, to the exact place.
const arrivingPoll = 2 * time.Second

// arrivalBatch is the most arrivals a tick reads from one shard: 15 shards
// make a merge of at most 30,000, in calls of mergeChunk (WithMergeChunk). A
// second of a million-a-minute burst is about 1,100 a shard, so ticks keep
// up; after a shard was unreachable for a while they catch up 2,000 a shard a
// tick.
const arrivalBatch = 2000

// A tick reads a spread room's arrival shards within shardBudget, well inside
// the client's I/O timeout: a read of 15 shards of at most arrivalBatch each
// takes a few milliseconds. When one cannot be read (its node stopped or
// failing over), nothing can be merged past what it holds (merge.lua's mark),
// so the room's merges are held back: the next mergeHoldFirst, then twice as
// long after each failure, at most mergeHoldMost, until a read succeeds. A
// stopped node then costs a room's ticks one shardBudget now and then, not on
// every tick: the admissions, and the other rooms of the same admission
// loop, keep their cadence (TestMergeHeldAfterShardFailure,
// TestChaosArrivalShardStalled).
const (
	shardBudget    = 250 * time.Millisecond
	mergeHoldFirst = 250 * time.Millisecond
	mergeHoldMost  = 2 * time.Second
)

// mergeHold is a room's hold on merges: none before until, then wait more.
type mergeHold struct {
	until time.Time
	wait  time.Duration
}

// mergeHeld reports whether the room's merges are held back now.
func (e *Engine) mergeHeld(roomID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.holds[roomID]
	return ok && e.clock().Before(h.until)
}

// holdMerges holds the room's merges back after a failed read of its shards,
// twice as long as the last hold (mergeHoldFirst, at most mergeHoldMost).
func (e *Engine) holdMerges(roomID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	wait := mergeHoldFirst
	if h, ok := e.holds[roomID]; ok {
		wait = min(2*h.wait, mergeHoldMost)
	}
	e.holds[roomID] = mergeHold{until: e.clock().Add(wait), wait: wait}
}

// releaseMerges ends the room's hold after a read of every shard succeeded.
func (e *Engine) releaseMerges(roomID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.holds, roomID)
}

// confirm records that the room's shard answered with settings version ver,
// the one the engine holds.
func (e *Engine) confirm(roomID, ver string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.cfgs[roomID]; ok && v.ver == ver {
		v.at = e.clock()
		e.cfgs[roomID] = v
	}
}

// spreads reports whether a join goes to an arrival shard: the room spreads
// its joins, queues them now, and its settings were confirmed within
// confirmFor (otherwise the join goes to the room's shard, which confirms them).
func (e *Engine) spreads(have versioned) bool {
	return e.wouldSpread(have) && e.fresh(have)
}

// fresh reports whether the room's shard confirmed the settings held within
// confirmFor.
func (e *Engine) fresh(have versioned) bool {
	age := e.clock().Sub(have.at)
	return have.ver != "" && age >= 0 && age < confirmFor
}

// wouldSpread reports whether the settings held say the room's joins go to
// its arrival shards now, however old they are.
func (e *Engine) wouldSpread(have versioned) bool {
	c := have.cfg
	if have.ver == "" || c.JoinShards <= 0 || (c.Mode != room.ModeQueue && c.Mode != room.ModeAuto) {
		return false
	}
	return c.OpensAt == nil || !c.OpensAt.After(e.clock())
}

// reconfirm reads a room's settings from its shard and caches them, confirmed
// now; on an error, or for an unknown room, it returns have. Join calls it for
// a proof whose engine's settings say the room spreads its joins now but were
// confirmed more than confirmFor ago, or whose nonce is spent on an arrival
// shard (room.NonceShards): where the proof joins, and whether the room's shard
// must find it spent there first, follow the settings of now. It reads them
// again for a join turned away by a fenced shard, and for a join refused for
// its challenge by an engine that holds no settings of the room, so the
// challenge's nonce fits the room's arrival shards (room.ChallengeError.Accepts).
func (e *Engine) reconfirm(ctx context.Context, roomID string, have versioned) versioned {
	m, err := e.rdb.HGetAll(ctx, KeysFor(roomID).Config).Result()
	if err != nil || m["ver"] == "" {
		return have
	}
	v := versioned{m["ver"], DecodeConfig(m), e.clock()}
	e.keep(roomID, v)
	return v
}

// errFenced is arrive's answer when a change of the room's settings fenced
// the shard after the settings the join was sent with (arrive.lua's 'stale').
var errFenced = errors.New("room: arrival shard fenced by a change of settings")

// fenceOf is the fence of a settings version, '<fence>.<random>' (PutConfig;
// lib.lua's fence_of): 0 for a version from before fences.
func fenceOf(ver string) int64 {
	f, _, ok := strings.Cut(ver, ".")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(f, 10, 64)
	return n
}

// spreadOver is how many arrival shards a room's joins ever spread over (the
// settings hash's arrk, written by a PUT and never lowered); 0 for a room that
// never spread. A drain reads it; a tick has it in its reply.
func (e *Engine) spreadOver(ctx context.Context, roomID string) (int, error) {
	v, err := e.rdb.HGet(ctx, KeysFor(roomID).Config, "arrk").Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("%w: %w", room.ErrUnavailable, err)
	}
	n, _ := strconv.Atoi(v)
	return min(max(n, 0), room.MaxJoinShards), nil
}

// merge is a tick's last step in a room whose joins are or were spread: it
// reads every arrival shard the room ever used (shards, the tick's reply of
// arrk), merges what they handed over into the queue, and drops it from them.
// A shard that cannot be read holds the merge back (nothing below its mark may
// be skipped), not the tick.
func (e *Engine) merge(ctx context.Context, roomID string, shards int) (added, evicted int64, err error) {
	if shards == 0 {
		return 0, 0, nil
	}
	if e.mergeHeld(roomID) {
		return 0, 0, room.ErrMergeHeld
	}
	// Every shard at once (one pipeline; a cluster's nodes in parallel), and
	// every shard's trim below: a spread room's tick costs two round trips
	// more, not two per shard.
	keys := make([][]string, shards)
	for i := range shards {
		k := ArrivalKeysFor(roomID, i)
		keys[i] = []string{k.State, k.Arrivals}
	}
	mark, got, err := e.readArrivals(ctx, roomID, keys)
	if err != nil {
		return 0, 0, err
	}
	take, err := below(mark, got)
	if err != nil {
		return 0, 0, err
	}
	added, reply, err := e.mergeChunks(ctx, roomID, mark, take)
	if err != nil {
		return added, 0, err
	}
	evicted, err = e.trimArrivals(ctx, roomID, keys, reply)
	return added, evicted, err
}

// readArrivals reads every arrival shard of keys (arrivals.lua, within
// shardBudget): mark is the lowest of their marks, got what they hold. A
// shard that cannot be read holds the room's merges back (holdMerges).
func (e *Engine) readArrivals(ctx context.Context, roomID string, keys [][]string) (mark int64, got []any, err error) {
	mark = -1
	rctx, cancel := context.WithTimeout(ctx, shardBudget)
	replies, errs := arrivalsCmd.Each(rctx, e.rdb, keys, arrivalBatch)
	cancel()
	for i, v := range replies {
		reply, ok := v.([]any)
		if errs[i] != nil || !ok || len(reply) < 1 {
			if ctx.Err() == nil {
				e.holdMerges(roomID)
			}
			return 0, nil, fmt.Errorf("%w: arrival shard %d: %v", room.ErrUnavailable, i, errs[i])
		}
		if m := num(reply[0]); mark < 0 || m < mark {
			mark = m
		}
		got = append(got, reply[1:]...)
	}
	e.releaseMerges(roomID)
	return mark, got, nil
}

// below is the arrivals of got at or below the mark, in sequence order: what
// goes into the queue.
func below(mark int64, got []any) ([]arrival, error) {
	take := make([]arrival, 0, len(got))
	for _, x := range got {
		s, _ := x.(string)
		a, b, _ := strings.Cut(s, ":")
		seq, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return nil, unexpected(arrivalsCmd, []any{x})
		}
		if seq <= mark {
			take = append(take, arrival{seq, a, b})
		}
	}
	slices.SortFunc(take, func(a, b arrival) int { return cmp.Compare(a.seq, b.seq) })
	return take, nil
}

// mergeChunks puts take into the queue (merge.lua), e.mergeChunk at a time,
// each call up to its last arrival, the last up to the mark: a backlog (a
// merge held back, or a tick a second in a burst of a million a minute, about
// 17,000) does not hold the room's shard, and every poll of the room, for the
// whole of it. reply is the last call's.
func (e *Engine) mergeChunks(ctx context.Context, roomID string, mark int64, take []arrival) (added int64, reply []any, err error) {
	arrivals := []string{KeysFor(roomID).Arrivals()}
	for start := 0; ; start += e.mergeChunk {
		end := min(start+e.mergeChunk, len(take))
		upTo := mark
		if end < len(take) {
			upTo = take[end-1].seq
		}
		args := make([]any, 0, 3+2*(end-start))
		last := "0"
		if end == len(take) {
			last = "1" // the last call publishes the progress too
		}
		args = append(args, e.nowMS(), "", last)
		if upTo >= 0 {
			args[1] = strconv.FormatInt(upTo, 10)
		}
		for _, a := range take[start:end] {
			args = append(args, a.member, a.at) // merge.lua parses no entry of the shards'
		}
		reply, err = e.runKeys(ctx, mergeCmd, roomID, arrivals, args...)
		if err != nil {
			return added, nil, err
		}
		if word(reply) == wordNoRoom {
			return added, nil, room.ErrUnknownRoom
		}
		if len(reply) < mergedLen || (end == len(take) && len(reply) <= mergedStride) {
			return added, nil, unexpected(mergeCmd, reply)
		}
		added += num(reply[mergedAdded])
		if end == len(take) {
			return added, reply, nil
		}
	}
}

// trimArrivals drops from every shard of keys what the merge took and
// publishes there what the shard's polls need (arrtrim.lua, from merge.lua's
// last reply): the far arrivals' first heartbeats, the pace and its climb,
// the zone, the head and the progress. Then it sweeps the shards' heartbeats (sweepShards).
func (e *Engine) trimArrivals(ctx context.Context, roomID string, keys [][]string, reply []any) (evicted int64, err error) {
	now := e.nowMS()
	for i := range keys {
		a := ArrivalKeysFor(roomID, i)
		keys[i] = []string{a.Arrivals, a.State, a.Heartbeats(), a.Progress()}
	}
	args := []any{str(reply[mergedMark]), num(reply[mergedWaiting]), str(reply[mergedNear]),
		num(reply[mergedClass]), num(reply[mergedPace]), num(reply[mergedZone]), str(reply[mergedHead]), now,
		str(reply[mergedClimb]), ""}
	if len(reply) > mergedStride {
		args[len(args)-1] = num(reply[mergedStride])
		for _, v := range reply[mergedStride+1:] {
			args = append(args, str(v))
		}
	}
	tctx, cancel := context.WithTimeout(ctx, shardBudget)
	_, errs := arrtrimCmd.Each(tctx, e.rdb, keys, args...)
	cancel()
	var failed []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Errorf("%w: arrival shard %d: %w", room.ErrUnavailable, i, err))
		}
	}
	// A shard that could not be trimmed is not swept either: its node is
	// slow or gone, and the next tick's read holds the merges back.
	if grace := num(reply[mergedGrace]); grace > 0 && len(failed) == 0 {
		evicted, err = e.sweepShards(ctx, roomID, len(keys), grace)
	}
	return evicted, errors.Join(append(failed, err)...)
}

// arrival is an entry of an arrival list ('sequence:join ms'), split: its
// sequence, as a number and as written, and its join time.
type arrival struct {
	seq        int64
	member, at string
}

// dropArrivals empties a room's arrival lists, its own and its shards' (a
// drain: the joins not merged yet lose their places too, recorded in the
// room's left set as drained visitors are, so they poll expired and are never
// restored), and returns how many it dropped.
func (e *Engine) dropArrivals(ctx context.Context, roomID string) (int64, error) {
	kr := KeysFor(roomID)
	shards, err := e.spreadOver(ctx, roomID)
	if err != nil || shards == 0 {
		return 0, err
	}
	lists := []string{kr.Arrivals()}
	for i := range shards {
		lists = append(lists, ArrivalKeysFor(roomID, i).Arrivals)
	}
	var dropped int64
	for _, l := range lists {
		got, err := arrdropCmd.Run(ctx, e.rdb, []string{l}).StringSlice()
		if err != nil {
			return dropped, fmt.Errorf("%w: %s: %w", room.ErrUnavailable, l, err)
		}
		for lo := 0; lo < len(got); lo += 1000 {
			zs := make([]redis.Z, 0, 1000)
			for _, m := range got[lo:min(lo+1000, len(got))] {
				s, _ := strconv.ParseFloat(m, 64)
				zs = append(zs, redis.Z{Score: s, Member: m})
			}
			if err := e.rdb.ZAdd(ctx, kr.Left, zs...).Err(); err != nil {
				return dropped, fmt.Errorf("%w: %w", room.ErrUnavailable, err)
			}
		}
		dropped += int64(len(got))
	}
	return dropped, nil
}
