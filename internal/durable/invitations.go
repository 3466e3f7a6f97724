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
// with one of them, and writes them into Redis again. A revocation goes to
// the store first, by compare-and-swap (swap.go), then to Redis: the store
// holds every revocation Redis does, whatever fails and whoever revokes at
// the same time. The uses an invitation has taken live only in Redis: a loss
// forgets them, so an invitation of N uses may admit up to N more after one
// (docs/SECURITY.md, "Invitations").

// RevokedEvery is how long a process reuses its reading of a room's
// revocations in the store.
const RevokedEvery = time.Minute

// RevocationStore is a Store that also keeps revoked invitations (Disk and
// S3 do): the JSON array of room.Revocation.
type RevocationStore interface {
	// PutRevocations writes the room's revocations over the copy read with
	// tag ("" : over none), else ErrStale.
	PutRevocations(ctx context.Context, room string, b []byte, tag string) error
	// Revocations returns them with their tag, ErrNotFound for a room without any.
	Revocations(ctx context.Context, room string) ([]byte, string, error)
}

var (
	_ RevocationStore = Disk{}
	_ RevocationStore = (*S3)(nil)
)

// PutRevocations writes <dir>/<room>.revoked over the copy of tag.
func (d Disk) PutRevocations(_ context.Context, id string, b []byte, tag string) error {
	return d.swap(id, ".revoked", b, tag)
}

// Revocations reads <dir>/<room>.revoked with its tag.
func (d Disk) Revocations(_ context.Context, id string) ([]byte, string, error) {
	return d.readTagged(id, ".revoked")
}

// revokedKey is <prefix>rooms/<room>.revoked: under rooms/, which the
// functions' grants already cover, and not .json, which Rooms lists.
func (s *S3) revokedKey(id string) string { return s.Prefix + "rooms/" + id + ".revoked" }

// PutRevocations writes <prefix>rooms/<room>.revoked over the copy of tag (its ETag).
func (s *S3) PutRevocations(ctx context.Context, id string, b []byte, tag string) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	return s.putIf(ctx, s.revokedKey(id), b, tag)
}

// Revocations reads <prefix>rooms/<room>.revoked with its ETag.
func (s *S3) Revocations(ctx context.Context, id string) ([]byte, string, error) {
	if !room.ValidRoomID(id) {
		return nil, "", room.ErrInvalidRoom
	}
	return s.getTagged(ctx, s.revokedKey(id))
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

// RevokeInvitation revokes in the store first, then in Redis, and returns
// when it was revoked (the first revocation's time). The store's write is a
// compare-and-swap that merges the store's revocations, Redis's and this one,
// so two revocations at once both stay. A store that cannot be written is a
// 503 and nothing is revoked anywhere (call again); a Redis that cannot be
// written after it is a 503 too, but the revocation holds: every process
// refuses the invitation once it reads the store (checkRevoked) and puts it
// back into Redis.
func (q *Queue) RevokeInvitation(ctx context.Context, id, inv string) (time.Time, error) {
	rs, ok := q.o.Store.(RevocationStore)
	if !ok {
		return retry(ctx, q, id, func() (time.Time, error) { return q.eng.RevokeInvitation(ctx, id, inv) })
	}
	if !room.ValidInvitationID(inv) {
		return time.Time{}, room.ErrInvitationInvalid
	}
	if _, err := q.GetConfig(ctx, id); err != nil { // an unknown room is an error; a lost one is restored
		return time.Time{}, err
	}
	inRedis, err := q.eng.Revocations(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	revs := mergeRevocations(inRedis, []room.Revocation{{ID: inv, RevokedAt: q.o.Clock().UTC().Truncate(time.Millisecond)}})
	for try := 0; ; try++ {
		var stored []room.Revocation
		var tag string
		stored, tag, err = q.storedRevocations(ctx, rs, id)
		if err == nil {
			revs = mergeRevocations(stored, revs)
			var b []byte
			if b, err = json.Marshal(revs); err == nil {
				err = rs.PutRevocations(ctx, id, b, tag)
			}
		}
		if err == nil || !errors.Is(err, ErrStale) || try == swapTries-1 {
			break
		}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: store the revocation of %s: %w", room.ErrUnavailable, inv, err)
	}
	q.keepRevoked(id, revs)
	at := revs[slices.IndexFunc(revs, func(r room.Revocation) bool { return r.ID == inv })].RevokedAt
	if err := q.eng.PutRevocations(ctx, id, []room.Revocation{{ID: inv, RevokedAt: at}}); err != nil {
		return time.Time{}, err
	}
	return at, nil
}

// storedRevocations reads a room's revocations from the store (none: empty,
// tag "") with the tag of what it read.
func (q *Queue) storedRevocations(ctx context.Context, rs RevocationStore, id string) ([]room.Revocation, string, error) {
	b, tag, err := rs.Revocations(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: revocations of %s: %w", room.ErrUnavailable, id, err)
	}
	var revs []room.Revocation
	if err := json.Unmarshal(b, &revs); err != nil {
		return nil, "", fmt.Errorf("%w: revocations of %s: %w", room.ErrUnavailable, id, err)
	}
	return revs, tag, nil
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
		revs, _, err := q.storedRevocations(ctx, rs, id)
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
