package roomdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A join follows four rules, one function each:
//
//   - the settings it goes by (joinSettings): the cached ones, read again
//     first when they lapsed and decide where it joins;
//   - spread (onShard, arrive): a room that spreads its joins takes one on the
//     arrival shard it picks (room.ShardOf), not on the room's own;
//   - the fence (joinSpread): an arrival shard fenced by a change of the
//     settings after the ones the join was sent with turns it away, and the
//     engine reads them again and tries once more as they say;
//   - proof spending (spendProof): a proof is spent where its nonce says
//     (room.NonceShards), which may be an arrival shard while the join goes
//     to the room's shard (joinRoomShard, the plain join).

// Join is Enqueue with a join challenge's proof and the per-client limit. A
// room whose joinChallengeBits is more than the proof's refuses with a
// *ChallengeError; a client over the room's clientEnqueuePerMinute gets a
// *RetryError (ErrRateLimited); a proof already used refuses with
// ErrChallengeSpent. The checks, the spend and the join are one script, one
// round trip (AllowEnqueue is the limit alone), but for a proof of a spread
// room that joins on the room's shard, spent on its arrival shard first.
func (e *Engine) Join(ctx context.Context, roomID, visitor string, proof room.JoinProof) (room.Place, error) {
	if proof.Invitation != nil {
		return e.joinInvited(ctx, roomID, visitor, proof) // invite.go
	}
	return e.join(ctx, roomID, visitor, proof)
}

// join is Join once the invitation, if any, is counted: an inviteOnly room
// refuses a join without one (here by the settings held, and by enqueue.lua).
func (e *Engine) join(ctx context.Context, roomID, visitor string, proof room.JoinProof) (room.Place, error) {
	have := e.joinSettings(ctx, roomID, proof)
	if have.cfg.InviteOnly && proof.Invitation == nil {
		return room.Place{}, room.ErrInvitationRequired
	}
	if proof.Client != "" {
		proof.Client = room.ClientNetwork(proof.Client, have.cfg)
	}
	p, joined, err := e.joinSpread(ctx, roomID, visitor, proof, &have)
	if joined {
		return p, err
	}
	return e.joinRoomShard(ctx, roomID, visitor, proof, have)
}

// joinSettings is the settings a join goes by. A proof is spent where its
// nonce says (room.NonceShards): one issued while the room spread its joins
// over k shards on the shard it picks of those k, any other on the room's
// shard, wherever it joins, so it joins once across an opening, a pause, a
// closing or a change of joinShards. A client's joins are counted in one
// place: on its arrival shard while the room spreads its joins (room.ShardOf), so
// a join the engine would send to the room's shard only to confirm old
// settings reads them first; and under the room's own network prefixes
// (room.ClientNetwork), which an engine that holds no settings of the room reads
// first too. So the engine reads settings that lapsed first when the join
// counts for a client, or its proof may join on its shard or must be spent
// there.
func (e *Engine) joinSettings(ctx context.Context, roomID string, proof room.JoinProof) versioned {
	have := e.cached(roomID)
	counted := proof.Client != "" && (have.ver == "" || e.wouldSpread(have))
	proved := proof.Nonce != "" && (e.wouldSpread(have) || room.NonceShards(proof.Nonce) > 0)
	if !e.fresh(have) && (counted || proved) {
		have = e.reconfirm(ctx, roomID, have)
	}
	return have
}

// onShard reports whether a join goes to an arrival shard as the settings
// held say: the room spreads its joins (spreads), and a proof's nonce was
// issued for as many shards as it spreads over now.
func (e *Engine) onShard(have versioned, proof room.JoinProof) bool {
	return e.spreads(have) && (proof.Nonce == "" || room.NonceShards(proof.Nonce) == have.cfg.JoinShards)
}

// fencedTries is how many times a join goes to an arrival shard: a second
// time after a fenced shard turned it away and the settings were read again.
const fencedTries = 2

// joinSpread joins through an arrival shard when the settings say so
// (onShard); joined is false when the join belongs on the room's shard. A
// shard fenced after the settings the join was sent with (errFenced) means
// they changed since the engine confirmed them: it reads them (have is
// updated) and joins as they say now. Fenced again, a change is under way
// (fenced, not stored yet), or failed after it fenced: the room's shard
// decides.
func (e *Engine) joinSpread(ctx context.Context, roomID, visitor string, proof room.JoinProof, have *versioned) (p room.Place, joined bool, err error) {
	for try := 1; e.onShard(*have, proof); try++ {
		p, err := e.arrive(ctx, roomID, visitor, proof, *have)
		if !errors.Is(err, errFenced) {
			return p, true, err
		}
		if try == fencedTries {
			break
		}
		*have = e.reconfirm(ctx, roomID, *have)
	}
	return room.Place{}, false, nil
}

// enqueue.lua's ways of treating a join's proof (its ARGV[5]).
const (
	proofNone       = "none"        // the join shows no proof
	proofSpend      = "spend"       // spend it here, in the key after the arrivals list
	proofShardFirst = "shard-first" // spent on its arrival shard now, for this join
	proofShardAgain = "shard-again" // found spent on its arrival shard: used before
)

// proofSpent is how the room's shard treats a join's proof (enqueue.lua's
// ARGV[5] and ARGV[7]).
type proofSpent struct {
	how    string
	key    string // proofSpend: the key that spends it
	leftMS int64  // proofSpend: the challenge's time left, how long the key lasts
	shards int64  // proofShardFirst: the arrival shards its nonce was issued for
}

// spendProof decides where a proof joining on the room's shard is spent. One
// issued while the room spread (room.NonceShards) is spent on its arrival
// shard first, and never on the room's shard, which decides, as the settings
// are now, whether the join needed a proof; any other is spent by the join
// itself.
func (e *Engine) spendProof(ctx context.Context, roomID string, proof room.JoinProof) (proofSpent, error) {
	if proof.Nonce == "" {
		return proofSpent{how: proofNone}, nil
	}
	shards := room.NonceShards(proof.Nonce)
	if shards == 0 {
		left := max(1, proof.Until.Sub(e.clock()).Milliseconds())
		return proofSpent{how: proofSpend, key: KeysFor(roomID).Proof(proof.Nonce), leftMS: left}, nil
	}
	first, err := e.spendOnShard(ctx, roomID, proof, shards)
	switch {
	case err != nil:
		return proofSpent{}, err
	case first:
		return proofSpent{how: proofShardFirst, shards: shards}, nil
	}
	return proofSpent{how: proofShardAgain}, nil
}

// joinRoomShard is the plain join: on the room's own shard, by enqueue.lua,
// with the client's limiter when the join counts for one. A refusal spends
// nothing: a proof spent on its arrival shard for this join is given back
// (best effort; a failure only wastes it).
func (e *Engine) joinRoomShard(ctx context.Context, roomID, visitor string, proof room.JoinProof, have versioned) (room.Place, error) {
	spent, err := e.spendProof(ctx, roomID, proof)
	if err != nil {
		return room.Place{}, err
	}
	k := KeysFor(roomID)
	keys, counted := []string{k.Arrivals()}, 0
	if spent.key != "" {
		keys = append(keys, spent.key)
	}
	if proof.Client != "" {
		keys, counted = append(keys, k.Limiter(clientHash(proof.Client))), 1
	}
	now := e.nowMS()
	keys = append(keys, k.Refs(now), k.Trail(now))
	reply, err := e.runKeys(ctx, enqueueCmd, roomID, keys, now, visitor, have.ver, proof.Bits, spent.how, counted, spent.leftMS,
		invitedArg(proof), 1, 1)
	if err != nil {
		return room.Place{}, err
	}
	refused, rerr := joinRefusal(enqueueCmd, reply)
	if w := word(reply); spent.how == proofShardFirst && (refused || w == wordClosed || w == wordNoRoom) {
		e.unspendOnShard(ctx, roomID, proof, spent.shards)
	}
	if refused {
		return room.Place{}, e.fitRefusal(ctx, roomID, have, proof.Client, rerr)
	}
	return e.place(enqueueCmd, room.Ticket{Room: roomID, Visitor: visitor}, have, reply)
}

// fitRefusal gives a refused join's challenge the arrival shards the room
// spreads its joins over (room.FitChallenge); an engine that holds no
// settings of the room reads them first, for the challenge to fit the
// client's shard (room.ChallengeError.Accepts).
func (e *Engine) fitRefusal(ctx context.Context, roomID string, have versioned, client string, err error) error {
	if have.ver == "" && errors.Is(err, room.ErrChallengeRequired) {
		have = e.reconfirm(ctx, roomID, have)
	}
	spread := int64(0)
	if e.wouldSpread(have) {
		spread = have.cfg.JoinShards
	}
	return room.FitChallenge(err, spread, client)
}

// arrive is Join through an arrival shard: arrive.lua with the proof's key
// and the client's limiter when the join has them, each named by a flag.
func (e *Engine) arrive(ctx context.Context, roomID, visitor string, proof room.JoinProof, have versioned) (room.Place, error) {
	c := have.cfg
	i := room.ShardOf(proof, visitor, c.JoinShards)
	k := ArrivalKeysFor(roomID, i)
	keys := []string{k.State, k.Arrivals}
	leftMS, proved, limit, counted := int64(0), 0, int64(0), 0
	if proof.Nonce != "" {
		keys, proved = append(keys, k.Proof(proof.Nonce)), 1
		leftMS = max(1, proof.Until.Sub(e.clock()).Milliseconds())
	}
	if proof.Client != "" {
		keys, counted = append(keys, k.Limiter(clientHash(proof.Client))), 1
		limit = c.ClientEnqueuePerMinute
	}
	now := e.nowMS()
	keys = append(keys, k.Refs(now))
	reply, err := arriveCmd.Reply(ctx, e.rdb, keys, now, i+1, c.JoinChallengeBits, proof.Bits, leftMS, limit,
		c.JoinShards, fenceOf(have.ver), proved, counted, visitor)
	if err != nil {
		return room.Place{}, fmt.Errorf("%w: %w", room.ErrUnavailable, err)
	}
	if str(reply[0]) == wordStale {
		return room.Place{}, errFenced
	}
	if refused, err := joinRefusal(arriveCmd, reply); refused {
		return room.Place{}, room.FitChallenge(err, c.JoinShards, proof.Client)
	}
	if str(reply[0]) != wordArrived || len(reply) != arrivedLen {
		return room.Place{}, unexpected(arriveCmd, reply)
	}
	pos := max(1, num(reply[arrivedPosition]))
	p := room.Place{Ticket: room.Ticket{Room: roomID, Visitor: visitor, Seq: num(reply[arrivedSeq])}, Config: c,
		State: room.StateWaiting, Position: pos, Waiting: pos, RatePerMinute: float64(c.AdmitPerMinute),
		PollWithin: arrivingPoll}
	return p, nil
}

// proofOnShard is the key that spends a proof on the arrival shard its nonce
// picks of shards.
func proofOnShard(roomID string, proof room.JoinProof, shards int64) string {
	return ArrivalKeysFor(roomID, room.ShardOf(proof, "", shards)).Proof(proof.Nonce)
}

// unspendOnShard gives back a proof spendOnShard spent for a join the room's
// shard refused.
func (e *Engine) unspendOnShard(ctx context.Context, roomID string, proof room.JoinProof, shards int64) {
	e.rdb.Del(ctx, proofOnShard(roomID, proof, shards))
}

// spendOnShard spends a proof on the arrival shard its nonce picks of shards,
// for a join on the room's shard (Join); first is false when it was spent
// there before.
func (e *Engine) spendOnShard(ctx context.Context, roomID string, proof room.JoinProof, shards int64) (first bool, err error) {
	first, err = e.rdb.SetNX(ctx, proofOnShard(roomID, proof, shards), "1", max(time.Millisecond, proof.Until.Sub(e.clock()))).Result()
	if err != nil {
		return false, fmt.Errorf("%w: spend the proof on its arrival shard: %w", room.ErrUnavailable, err)
	}
	return first, nil
}

// joinRefusal reads a join script's refusals (enqueue.lua, arrive.lua): a
// challenge of more work, a spent proof, the client's limit. refused is false
// for any other reply.
func joinRefusal(s script, reply []any) (refused bool, err error) {
	switch str(reply[0]) {
	case wordChallenge:
		if len(reply) < 2 {
			return true, unexpected(s, reply)
		}
		return true, &room.ChallengeError{Bits: int(num(reply[1]))}
	case wordSpent:
		return true, room.ErrChallengeSpent
	case wordUninvited:
		return true, room.ErrInvitationRequired
	case wordLimited:
		if len(reply) != 2 || num(reply[1]) <= 0 {
			return true, unexpected(s, reply)
		}
		return true, &room.RetryError{After: time.Duration(num(reply[1])) * time.Millisecond}
	}
	return false, nil
}
