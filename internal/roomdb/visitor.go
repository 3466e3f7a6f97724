package roomdb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

// Support lookup (docs/OPERATING.md, "Support lookup"): the waiting page
// shows a visitor their visitor id as the reference; every join records it
// against its sequence in the reference hash of its day (lib.lua remember:
// the room's, or the arrival shard's that took the join), kept until the end
// of the next day; a bypass invitation's join records its sequence after
// a "b". From the sequence the room's keys say the rest, with the served
// records (Keys.Served), which outlive the references.

var (
	visitorCmd = lua.NewScript("visitor", lua.Visitor)
	restoreCmd = lua.NewScript("restore", lua.Restore)
)

// refDays is how many days back a lookup reads: today's hash and the one
// before it, which is as long as they live.
const refDays = 2

// servedDays is how many days of served records a lookup and a restore read:
// one more than refDays, since a grant is served on the day of its join or
// later, by a clock that may differ from the join's by a little (lib.lua
// serve keeps each a day longer than the references of its day).
const servedDays = refDays + 1

// servedKeys are the room's served records a lookup at nowMS reads: today's
// and those of the servedDays - 1 days before.
func servedKeys(roomID string, nowMS int64) []string {
	k := KeysFor(roomID)
	out := make([]string, servedDays)
	for d := range int64(servedDays) {
		out[d] = k.Served(nowMS - d*86_400_000)
	}
	return out
}

var visitorRef = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// seqOf finds the sequence of a visitor's join in the reference hashes, and
// whether it was a bypass invitation's (bypass.lua).
func (e *Engine) seqOf(ctx context.Context, roomID, visitor string) (seq int64, bypass bool, err error) {
	if !room.ValidRoomID(roomID) {
		return 0, false, room.ErrInvalidRoom
	}
	if !visitorRef.MatchString(visitor) {
		return 0, false, room.ErrUnknownVisitor
	}
	now := e.nowMS()
	p := e.rdb.Pipeline()
	var cmds []*redis.StringCmd
	for d := range int64(refDays) {
		at := now - d*86_400_000
		cmds = append(cmds, p.HGet(ctx, KeysFor(roomID).Refs(at), visitor))
		for i := range room.MaxJoinShards {
			cmds = append(cmds, p.HGet(ctx, ArrivalKeysFor(roomID, i).Refs(at), visitor))
		}
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, false, fmt.Errorf("%w: look up %s: %w", room.ErrUnavailable, roomID, err)
	}
	for _, c := range cmds {
		v, bypass := strings.CutPrefix(c.Val(), "b")
		if seq, err := strconv.ParseInt(v, 10, 64); err == nil && seq > 0 {
			return seq, bypass, nil
		}
	}
	return 0, false, room.ErrUnknownVisitor
}

// Visitor is where the visitor whose reference (visitor id) is given stands
// in the room, with the times the engine holds; room.ErrUnknownVisitor when
// no join of today or yesterday has that reference.
func (e *Engine) Visitor(ctx context.Context, roomID, visitor string) (room.VisitorState, error) {
	seq, _, err := e.seqOf(ctx, roomID, visitor)
	if err != nil {
		return room.VisitorState{}, err
	}
	m := strconv.FormatInt(seq, 10)
	now := e.nowMS()
	reply, err := e.runKeys(ctx, visitorCmd, roomID, servedKeys(roomID, now), m, now)
	if err != nil {
		return room.VisitorState{}, err
	}
	if word(reply) == wordNoRoom {
		return room.VisitorState{}, room.ErrUnknownRoom
	}
	if len(reply) != visitorLen || str(reply[0]) != wordOK {
		return room.VisitorState{}, unexpected(visitorCmd, reply)
	}
	v := room.VisitorState{Room: roomID, Visitor: visitor, Seq: seq,
		// The sequence is the Redis server's time of the join in µs (lib.lua next_seq).
		JoinedAt: time.UnixMicro(seq).UTC().Truncate(time.Millisecond)}
	readVisitor(&v, reply, e.clock())
	last, admitted, err := e.trailOf(ctx, roomID, seq) // trail.go
	if err != nil {
		return room.VisitorState{}, err
	}
	addTrail(&v, last, admitted)
	return v, nil
}

// addTrail adds to v what the trail kept of its place: the last poll when it
// is later than the heartbeat's (a place admitted or evicted has none), and
// the admission's time, exact where readVisitor could only count back from
// the grant's deadline.
func addTrail(v *room.VisitorState, last, admitted *time.Time) {
	if last != nil && (v.LastPoll == nil || last.After(*v.LastPoll)) {
		v.LastPoll = last
	}
	if admitted != nil {
		v.AdmittedAt = admitted
	}
}

// msTime is a reply's time in ms, nil for none.
func msTime(x any) *time.Time {
	f, err := strconv.ParseFloat(str(x), 64)
	if err != nil {
		return nil
	}
	t := time.UnixMilli(int64(f)).UTC()
	return &t
}

// rankSecret is visitor.lua's rank of a place in a room before its
// opening: the pre-queue's order is its draw, which nobody may learn before
// the opening (the lookup's caller included).
const rankSecret = -2

// readVisitor fills v from visitor.lua's reply.
func readVisitor(v *room.VisitorState, reply []any, now time.Time) {
	score, rank, hb := str(reply[visitorScore]), num(reply[visitorRank]), str(reply[visitorHeartbeat])
	deadline, ends := msTime(reply[visitorDeadline]), msTime(reply[visitorEnds])
	used, left, served := str(reply[visitorUsed]), str(reply[visitorLeft]), str(reply[visitorServed])
	claimTTL, _ := strconv.ParseInt(str(reply[visitorClaimTTL]), 10, 64)
	if seen, _, ok := ParseHeartbeat(hb); ok {
		t := time.UnixMilli(seen).UTC()
		v.LastPoll = &t
	}
	v.State = room.StandingLost
	if f, err := strconv.ParseFloat(score, 64); err == nil {
		v.Bypass = f < 0 // ahead of the line, in the pre-queue too
	}
	switch {
	case rank == rankSecret:
		v.State = room.StandingPrequeue // no place before the opening: the draw is secret
	case rank >= 0:
		v.State, v.Position = room.StandingWaiting, rank+1
	case deadline != nil:
		v.ClaimDeadline = deadline
		admitted := deadline.Add(-time.Duration(claimTTL) * time.Second)
		v.AdmittedAt = &admitted
		if deadline.After(now) {
			v.State = room.StandingAdmitted
		}
	case ends != nil:
		v.State, v.Consumed, v.SessionEnd = room.StandingActive, true, ends
	case used != "":
		v.State, v.Consumed = room.StandingServed, true
	case served == "1":
		v.State, v.Consumed = room.StandingServed, true // after used let it go
	case served == "floor":
		// Admitted or passed over before a loss of Redis (at or below the
		// floor): served, or not, nobody can tell; never restored.
		v.State = room.StandingServed
	case left != "":
		v.State = room.StandingLeft
	default:
		if mark, err := strconv.ParseInt(str(reply[visitorMark]), 10, 64); err == nil && v.Seq > mark {
			v.State = room.StandingArriving // on an arrival shard, not merged yet
		}
	}
}

// RestorePlace gives the visitor back a lost place (evicted, left, an
// unclaimed grant that expired, a place the head passed): at its sequence,
// or ahead of the line for a bypass invitation's join, so below the head it
// is the next admitted, within maxActive (I1). A visitor still waiting,
// admitted, active or served (for as long as a lookup finds them:
// Keys.Served), or whose ticket a loss of Redis left at or below the room's
// floor, gets room.ErrPlaceStands. The caller audits it (who, why).
func (e *Engine) RestorePlace(ctx context.Context, roomID, visitor string) (room.VisitorState, error) {
	seq, bypass, err := e.seqOf(ctx, roomID, visitor)
	if err != nil {
		return room.VisitorState{}, err
	}
	now := e.nowMS()
	flag := ""
	if bypass {
		flag = "1"
	}
	reply, err := e.runKeys(ctx, restoreCmd, roomID, servedKeys(roomID, now), now, strconv.FormatInt(seq, 10), flag)
	if err != nil {
		return room.VisitorState{}, err
	}
	switch str(reply[0]) {
	case wordNoRoom:
		return room.VisitorState{}, room.ErrUnknownRoom
	case wordStands:
		return room.VisitorState{}, room.ErrPlaceStands
	case wordOK:
		return e.Visitor(ctx, roomID, visitor)
	}
	return room.VisitorState{}, unexpected(restoreCmd, reply)
}

// dropRefs deletes the room's reference hashes and served records
// (Delete): no lookup finds a visitor of a deleted room. Its invitations'
// uses and revocations stay: an invitation is signed under a key of the
// room's id, so it would verify for a room created again under it.
func (e *Engine) dropRefs(ctx context.Context, roomID string) error {
	now := e.nowMS()
	p := e.rdb.Pipeline()
	for _, k := range servedKeys(roomID, now) {
		p.Del(ctx, k)
	}
	for d := range int64(refDays) {
		at := now - d*86_400_000
		p.Del(ctx, KeysFor(roomID).Refs(at))
		for i := range room.MaxJoinShards {
			p.Del(ctx, ArrivalKeysFor(roomID, i).Refs(at))
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: delete %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}
