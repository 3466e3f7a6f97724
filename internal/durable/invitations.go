package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Invitations' revocations are kept in the store beside the room's settings
// (<room>.revoked), so a total loss of Redis does not bring a revoked
// invitation back: a process reads a room's revocations from the store when an
// invited join comes and at most once per RevokedEvery after, refuses a join
// with one of them, and writes them into Redis again. The uses an invitation
// has taken live only in Redis: a loss forgets them, so an invitation of N uses
// may admit up to N more after one (docs/SECURITY.md, "Invitations").

// RevokedEvery is how long a process reuses its reading of a room's
// revocations in the store.
const RevokedEvery = time.Minute

// RevocationStore is a Store that also keeps revoked invitations (Disk and S3 do).
type RevocationStore interface {
	PutRevocations(ctx context.Context, room string, b []byte) error
	// Revocations returns ErrNotFound for a room without any.
	Revocations(ctx context.Context, room string) ([]byte, error)
}

var (
	_ RevocationStore = Disk{}
	_ RevocationStore = (*S3)(nil)
)

// PutRevocations writes <dir>/<room>.revoked.
func (d Disk) PutRevocations(_ context.Context, id string, b []byte) error {
	return d.write(id, ".revoked", b)
}

// Revocations reads <dir>/<room>.revoked.
func (d Disk) Revocations(_ context.Context, id string) ([]byte, error) {
	return d.read(id, ".revoked")
}

// revokedKey is <prefix>rooms/<room>.revoked: under rooms/, which the
// functions' grants already cover, and not .json, which Rooms lists.
func (s *S3) revokedKey(id string) string { return s.Prefix + "rooms/" + id + ".revoked" }

// PutRevocations writes <prefix>rooms/<room>.revoked.
func (s *S3) PutRevocations(ctx context.Context, id string, b []byte) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	return s.put(ctx, s.revokedKey(id), b, "application/json")
}

// Revocations reads <prefix>rooms/<room>.revoked.
func (s *S3) Revocations(ctx context.Context, id string) ([]byte, error) {
	if !room.ValidRoomID(id) {
		return nil, room.ErrInvalidRoom
	}
	return s.get(ctx, s.revokedKey(id))
}

// revokedSet is a room's revocations as this process last read them from the store.
type revokedSet struct {
	at  time.Time
	ids map[string]bool
}

// Invitation is the engine's, restoring a lost room.
func (q *Queue) Invitation(ctx context.Context, id, inv string) (room.InvitationState, error) {
	return retry(ctx, q, id, func() (room.InvitationState, error) { return q.eng.Invitation(ctx, id, inv) })
}

// Visitor is the engine's support lookup, restoring a lost room.
func (q *Queue) Visitor(ctx context.Context, id, visitor string) (room.VisitorState, error) {
	return retry(ctx, q, id, func() (room.VisitorState, error) { return q.eng.Visitor(ctx, id, visitor) })
}

// RestorePlace is the engine's, restoring a lost room.
func (q *Queue) RestorePlace(ctx context.Context, id, visitor string) (room.VisitorState, error) {
	return retry(ctx, q, id, func() (room.VisitorState, error) { return q.eng.RestorePlace(ctx, id, visitor) })
}

// RevokeInvitation revokes in Redis, then writes the room's revocations to
// the store; an error writing them is the call's (503: the caller retries,
// the revocation already holds in Redis).
func (q *Queue) RevokeInvitation(ctx context.Context, id, inv string) (time.Time, error) {
	at, err := retry(ctx, q, id, func() (time.Time, error) { return q.eng.RevokeInvitation(ctx, id, inv) })
	if err != nil {
		return time.Time{}, err
	}
	rs, ok := q.o.Store.(RevocationStore)
	if !ok {
		return at, nil
	}
	revs, err := q.eng.Revocations(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	stored, err := q.storedRevocations(ctx, rs, id)
	if err != nil {
		return time.Time{}, err
	}
	revs = mergeRevocations(stored, revs)
	b, err := json.Marshal(revs)
	if err == nil {
		err = rs.PutRevocations(ctx, id, b)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: store the revocation of %s: %w", room.ErrUnavailable, inv, err)
	}
	q.keepRevoked(id, revs)
	return at, nil
}

// storedRevocations reads a room's revocations from the store (none: empty).
func (q *Queue) storedRevocations(ctx context.Context, rs RevocationStore, id string) ([]room.Revocation, error) {
	b, err := rs.Revocations(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: revocations of %s: %w", room.ErrUnavailable, id, err)
	}
	var revs []room.Revocation
	if err := json.Unmarshal(b, &revs); err != nil {
		return nil, fmt.Errorf("%w: revocations of %s: %w", room.ErrUnavailable, id, err)
	}
	return revs, nil
}

// mergeRevocations is both lists, one entry per id (the earliest), by id.
func mergeRevocations(a, b []room.Revocation) []room.Revocation {
	first := map[string]time.Time{}
	for _, r := range slices.Concat(a, b) {
		if t, ok := first[r.ID]; !ok || r.RevokedAt.Before(t) {
			first[r.ID] = r.RevokedAt
		}
	}
	out := make([]room.Revocation, 0, len(first))
	for id, t := range first {
		out = append(out, room.Revocation{ID: id, RevokedAt: t})
	}
	slices.SortFunc(out, func(x, y room.Revocation) int { return cmpString(x.ID, y.ID) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (q *Queue) keepRevoked(id string, revs []room.Revocation) {
	set := revokedSet{at: q.o.Clock(), ids: map[string]bool{}}
	for _, r := range revs {
		set.ids[r.ID] = true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.revoked == nil || len(q.revoked) >= 1024 {
		q.revoked = map[string]revokedSet{}
	}
	q.revoked[id] = set
}

// checkRevoked refuses a join whose invitation the store says is revoked,
// reading the store at most once per RevokedEvery per room, and puts what it
// read back into Redis (after a loss, Redis has none). A store that cannot
// be read refuses nothing: Redis's revocations still hold.
func (q *Queue) checkRevoked(ctx context.Context, id string, proof room.JoinProof) error {
	rs, ok := q.o.Store.(RevocationStore)
	if proof.Invitation == nil || !ok {
		return nil
	}
	now := q.o.Clock()
	q.mu.Lock()
	set, ok := q.revoked[id]
	q.mu.Unlock()
	if !ok || now.Sub(set.at) >= RevokedEvery || now.Before(set.at) {
		revs, err := q.storedRevocations(ctx, rs, id)
		if err != nil {
			q.o.Logger.LogAttrs(ctx, slog.LevelWarn, "revocations not read from the store", slog.String("room", id), slog.String("error", err.Error()))
			return nil
		}
		if len(revs) > 0 {
			_ = q.eng.PutRevocations(ctx, id, revs) // best effort: the check below refuses anyway
		}
		q.keepRevoked(id, revs)
		q.mu.Lock()
		set = q.revoked[id]
		q.mu.Unlock()
	}
	if set.ids[proof.Invitation.ID] {
		return room.ErrInvitationRevoked
	}
	return nil
}
