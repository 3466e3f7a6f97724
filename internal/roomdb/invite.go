package roomdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

// Invitations (docs/API.md, "Invitations"): the caller checks an
// invitation's signature; the engine counts its uses (invite.lua), keeps its
// revocation and logs each use, in the room's slot. A bypass invitation's
// holder joins ahead of the line (bypass.lua); any other joins as everyone
// does, past the room's inviteOnly refusal. A use taken for a join that is
// then refused (closed, limited, a challenge) is given back.

var (
	inviteCmd = lua.NewScript("invite", lua.Invite)
	bypassCmd = lua.NewScript("bypass", lua.Bypass)
)

// InvitationLogKeep is how many uses a room's invitation log keeps (the newest).
const InvitationLogKeep = 10_000

// invitedArg is enqueue.lua's ARGV[8]: 1 for a join with a counted invitation.
func invitedArg(proof room.JoinProof) int {
	if proof.Invitation != nil {
		return 1
	}
	return 0
}

// joinInvited takes one use of the join's invitation, then joins: ahead of
// the line with a bypass invitation, else as Join does. A refused join gives
// the use back.
func (e *Engine) joinInvited(ctx context.Context, roomID, visitor string, proof room.JoinProof) (room.Place, error) {
	inv := *proof.Invitation
	if inv.Room != roomID || !room.ValidInvitationID(inv.ID) || inv.Uses < 1 {
		return room.Place{}, room.ErrInvitationInvalid
	}
	if err := e.takeUse(ctx, roomID, visitor, inv, "take"); err != nil {
		return room.Place{}, err
	}
	var p room.Place
	var err error
	if inv.Bypass {
		p, err = e.bypass(ctx, roomID, visitor)
	} else {
		p, err = e.join(ctx, roomID, visitor, proof)
	}
	if err != nil {
		// Best effort: a use not given back is only a use lost.
		_ = e.takeUse(context.WithoutCancel(ctx), roomID, visitor, inv, "give")
	}
	return p, err
}

// takeUse runs invite.lua: how is "take" or "give".
func (e *Engine) takeUse(ctx context.Context, roomID, visitor string, inv room.Invitation, how string) error {
	k := KeysFor(roomID)
	reply, err := e.runKeys(ctx, inviteCmd, roomID, []string{k.Invitations(), k.Revoked(), k.InvitationLog()},
		e.nowMS(), inv.ID, inv.Uses, visitor, InvitationLogKeep, how)
	if err != nil {
		return err
	}
	switch str(reply[0]) {
	case wordOK:
		return nil
	case wordNoRoom:
		return room.ErrUnknownRoom
	case wordRevoked:
		return room.ErrInvitationRevoked
	case wordUsed:
		return room.ErrInvitationUsedUp
	}
	return unexpected(inviteCmd, reply)
}

// bypass is a bypass invitation's join (bypass.lua), on the room's shard
// whether or not the room spreads its joins: its place is ahead of every
// arrival.
func (e *Engine) bypass(ctx context.Context, roomID, visitor string) (room.Place, error) {
	have := e.cached(roomID)
	now := e.nowMS()
	reply, err := e.runKeys(ctx, bypassCmd, roomID, []string{KeysFor(roomID).Refs(now), KeysFor(roomID).Trail(now)}, now, visitor, have.ver)
	if err != nil {
		return room.Place{}, err
	}
	return e.place(bypassCmd, room.Ticket{Room: roomID, Visitor: visitor}, have, reply)
}

// Invitation is what the engine holds of one invitation of the room: the
// uses taken, its revocation and its log (oldest first).
func (e *Engine) Invitation(ctx context.Context, roomID, id string) (room.InvitationState, error) {
	if !room.ValidRoomID(roomID) {
		return room.InvitationState{}, room.ErrInvalidRoom
	}
	if !room.ValidInvitationID(id) {
		return room.InvitationState{}, room.ErrInvitationInvalid
	}
	k := KeysFor(roomID)
	p := e.rdb.Pipeline()
	used := p.HGet(ctx, k.Invitations(), id)
	rev := p.HGet(ctx, k.Revoked(), id)
	log := p.LRange(ctx, k.InvitationLog(), 0, InvitationLogKeep-1)
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return room.InvitationState{}, fmt.Errorf("%w: invitation %s: %w", room.ErrUnavailable, roomID, err)
	}
	out := room.InvitationState{ID: id, Log: []room.InvitationUse{}}
	out.Used, _ = strconv.ParseInt(used.Val(), 10, 64)
	if ms, err := strconv.ParseInt(rev.Val(), 10, 64); err == nil {
		t := time.UnixMilli(ms).UTC()
		out.RevokedAt = &t
	}
	lines := log.Val()
	for i := len(lines) - 1; i >= 0; i-- {
		if u, uid, ok := parseUse(lines[i]); ok && uid == id {
			out.Log = append(out.Log, u)
		}
	}
	return out, nil
}

// parseUse reads one entry of the log: "ms:use:returned:id:visitor".
func parseUse(s string) (room.InvitationUse, string, bool) {
	f := strings.SplitN(s, ":", 5)
	if len(f) != 5 {
		return room.InvitationUse{}, "", false
	}
	ms, err1 := strconv.ParseInt(f[0], 10, 64)
	n, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return room.InvitationUse{}, "", false
	}
	return room.InvitationUse{At: time.UnixMilli(ms).UTC(), Use: n, Returned: f[2] == "1", Visitor: f[4]}, f[3], true
}

// RevokeInvitation revokes an invitation of the room from now on: a join
// with it is refused (room.ErrInvitationRevoked); places it gave stay. It
// returns when it was revoked (the first revocation's time, when it was
// already).
func (e *Engine) RevokeInvitation(ctx context.Context, roomID, id string) (time.Time, error) {
	if err := e.PutRevocations(ctx, roomID, []room.Revocation{{ID: id, RevokedAt: e.clock()}}); err != nil {
		return time.Time{}, err
	}
	st, err := e.Invitation(ctx, roomID, id)
	if err != nil || st.RevokedAt == nil {
		return time.Time{}, fmt.Errorf("%w: revoke %s: not recorded", room.ErrUnavailable, id)
	}
	return *st.RevokedAt, nil
}

// PutRevocations records revocations (each kept at its first time): a
// revocation, or those a durable store gives back after a loss.
func (e *Engine) PutRevocations(ctx context.Context, roomID string, revs []room.Revocation) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	k := KeysFor(roomID).Revoked()
	p := e.rdb.Pipeline()
	for _, r := range revs {
		if !room.ValidInvitationID(r.ID) {
			return room.ErrInvitationInvalid
		}
		p.HSetNX(ctx, k, r.ID, strconv.FormatInt(r.RevokedAt.UnixMilli(), 10))
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("%w: revoke in %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}

// Revocations lists the room's revoked invitations.
func (e *Engine) Revocations(ctx context.Context, roomID string) ([]room.Revocation, error) {
	if !room.ValidRoomID(roomID) {
		return nil, room.ErrInvalidRoom
	}
	m, err := e.rdb.HGetAll(ctx, KeysFor(roomID).Revoked()).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: revocations of %s: %w", room.ErrUnavailable, roomID, err)
	}
	out := make([]room.Revocation, 0, len(m))
	for id, v := range m {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			out = append(out, room.Revocation{ID: id, RevokedAt: time.UnixMilli(ms).UTC()})
		}
	}
	return out, nil
}
