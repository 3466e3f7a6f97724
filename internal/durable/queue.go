package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Defaults of Options.
const (
	// DefaultHeadEvery is how often ticks record a room's head (when it
	// moved): the longest stretch of admissions a total loss can grant
	// again. A deployment sets it with HEAD_RECORD_SECONDS (1 to 60). One S3
	// PUT per room per 10 s of admitting is 8,640 a day, $0.043 at $0.005 per
	// 1,000 ($1.30 a month of admitting around the clock); at 1 s, 86,400 a
	// day, $0.43 ($13 a month), and a tick that admits records at once.
	DefaultHeadEvery = 10 * time.Second
	// TickGuard is the least time between two ticks of a room that visitors'
	// requests drive (roomdb.Engine.TickGuarded); the scheduled admit loop
	// ticks every second, so while it runs they drive none.
	TickGuard = time.Second
	// NudgeBudget bounds the request-driven tick a request runs before it is
	// answered (in Lambda nothing runs after the response).
	NudgeBudget = 250 * time.Millisecond
	// MissingFor is how long a room the store does not have is not asked for
	// again by this process: requests for made-up room ids cost no S3 GET
	// each. A room PUT meanwhile is in Redis, so it needs no restore.
	MissingFor = 10 * time.Second
	// ListEvery is how long Rooms reuses its listing of the store: the admit
	// loop asks every second, and an S3 LIST costs $0.005 per 1,000. A room
	// PUT through this process is listed at once; one PUT through another
	// process is in Redis's registry anyway.
	ListEvery = time.Minute
)

// Options configure a Queue; the zero value of each field has a default.
type Options struct {
	Store     Store            // nil: settings live only in Redis (no restore, no head)
	Logger    *slog.Logger     // nil: discard
	Clock     func() time.Time // nil: time.Now; paces the head records and this process's nudges
	HeadEvery time.Duration    // 0: DefaultHeadEvery
	NoNudge   bool             // true: requests drive no ticks (the scheduled loop does it all)
}

// Queue passes the room engine's calls on (room.Engine's, but for the head and the
// guarded tick), making the rooms' settings durable and letting requests tick
// quiet rooms. See the package doc.
type Queue struct {
	eng room.Engine
	o   Options

	mu       sync.Mutex
	nudged   map[string]time.Time // this process's last request-driven tick per room
	recorded map[string]record    // the head this process last stored per room
	listed   []string             // the store's rooms, as last listed
	listedAt time.Time
	missing  map[string]time.Time // rooms the store did not have, when it said so
	// rooms whose stored settings could not be read, when, and why: not read
	// again for MissingFor, so a crowd polling such a room costs no S3 GET each
	unreadable map[string]failed
	restores   singleflight.Group    // one restore of a room at a time in this process
	archived   map[string]archive    // what this process archived of each room's history (history.go)
	revoked    map[string]revokedSet // revoked invitations as last read from the store (invitations.go)
}

type failed struct {
	at  time.Time
	err error
}

type record struct {
	head float64
	at   time.Time
}

// New wraps an engine.
func New(eng room.Engine, o Options) *Queue {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.HeadEvery <= 0 {
		o.HeadEvery = DefaultHeadEvery
	}
	return &Queue{eng: eng, o: o, nudged: map[string]time.Time{}, recorded: map[string]record{}, missing: map[string]time.Time{},
		unreadable: map[string]failed{}}
}

// retry runs f, and once more after restoring the room when f found it
// missing (room.ErrUnknownRoom) and the store has it.
func retry[T any](ctx context.Context, q *Queue, id string, f func() (T, error)) (T, error) {
	v, err := f()
	if !errors.Is(err, room.ErrUnknownRoom) || q.o.Store == nil {
		return v, err
	}
	if rerr := q.Restore(ctx, id); rerr != nil {
		if errors.Is(rerr, room.ErrUnknownRoom) {
			return v, err
		}
		var zero T
		return zero, rerr
	}
	return f()
}

// Restore re-creates a room missing in Redis from the store: first the floor
// (the recorded head: no ticket at or below it comes back, so no consumed
// grant is granted again), then the settings (roomdb.Engine.PutConfig, which
// starts the recovery window). It returns room.ErrUnknownRoom when the store
// has no such room, an error wrapping room.ErrUnavailable when the store
// cannot be read, and one wrapping room.ErrNotRestorable when the stored
// settings are not valid settings (the room stays missing until an admin PUT).
// A room is never restored without a floor: when its head record is missing
// or not a score (ErrBadHead), the floor is the instant of the restore
// (roomdb.Engine.FloorNow: no ticket from before it is admitted again) and the
// room comes back closed, stored so, until an operator opens it
// (docs/OPERATING.md, "A room restored closed").
// Concurrent restores of one room in a process share one.
func (q *Queue) Restore(ctx context.Context, id string) error {
	if q.o.Store == nil || !room.ValidRoomID(id) {
		return room.ErrUnknownRoom
	}
	now := q.o.Clock()
	q.mu.Lock()
	at, ok := q.missing[id]
	bad, unreadable := q.unreadable[id]
	q.mu.Unlock()
	if ok && now.Sub(at) < MissingFor && !now.Before(at) {
		return room.ErrUnknownRoom
	}
	if unreadable && now.Sub(bad.at) < MissingFor && !now.Before(bad.at) {
		return bad.err
	}
	_, err, _ := q.restores.Do(id, func() (any, error) { return nil, q.restore(ctx, id) })
	switch {
	case errors.Is(err, room.ErrUnknownRoom):
		q.mu.Lock()
		if len(q.missing) >= 1024 {
			clear(q.missing)
		}
		q.missing[id] = now
		q.mu.Unlock()
	case errors.Is(err, room.ErrNotRestorable):
		q.mu.Lock()
		if len(q.unreadable) >= 1024 {
			clear(q.unreadable)
		}
		q.unreadable[id] = failed{now, err}
		q.mu.Unlock()
	}
	return err
}

func (q *Queue) restore(ctx context.Context, id string) error {
	b, err := q.o.Store.Settings(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return room.ErrUnknownRoom
	}
	if err != nil {
		return fmt.Errorf("%w: restore %s: %w", room.ErrUnavailable, id, err)
	}
	cfg := room.DefaultConfig()
	if err = json.Unmarshal(b, &cfg); err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "room not restored: stored settings unreadable",
			slog.String("room", id), slog.String("error", err.Error()))
		return fmt.Errorf("%w: restore %s: stored settings: %v", room.ErrNotRestorable, id, err)
	}
	if err := q.buryFromStore(ctx, id); err != nil {
		return err
	}
	head, err := q.storedHead(ctx, id)
	var noHead error
	switch {
	case err == nil:
		_, err = q.eng.Head(ctx, id, head)
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrBadHead):
		noHead = err
		head, err = q.eng.FloorNow(ctx, id)
	default:
		return fmt.Errorf("%w: restore %s: %w", room.ErrUnavailable, id, err)
	}
	if err != nil {
		return err
	}
	if noHead != nil {
		cfg.Mode = room.ModeClosed
	}
	stored, err := q.eng.PutConfig(ctx, id, cfg)
	if err != nil {
		return err
	}
	q.restoreSchedule(ctx, id) // schedule.go
	// The next tick records the head afresh (over a record that is not one).
	q.mu.Lock()
	delete(q.recorded, id)
	q.mu.Unlock()
	if noHead != nil {
		// Closed in the store too, so a second loss does not open it.
		if b, err = json.Marshal(stored); err == nil {
			err = q.o.Store.PutSettings(ctx, id, b)
		}
		if err != nil {
			q.o.Logger.LogAttrs(ctx, slog.LevelError, "store the restored room closed", slog.String("room", id), slog.String("error", err.Error()))
		}
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "room restored closed: no head record to take for its floor; an operator opens it",
			slog.String("room", id), slog.Float64("floor", head), slog.String("head", noHead.Error()))
		return nil
	}
	q.o.Logger.LogAttrs(ctx, slog.LevelWarn, "room restored from the durable store",
		slog.String("room", id), slog.Float64("floor", head))
	return nil
}

// nudge runs a guarded tick of the room before a visitor's request is
// answered, at most once per TickGuard per room in this process (and in Redis,
// across processes), bounded by NudgeBudget. Its errors only go to the log.
func (q *Queue) nudge(ctx context.Context, id string) {
	if q.o.NoNudge {
		return
	}
	now := q.o.Clock()
	q.mu.Lock()
	last, ok := q.nudged[id]
	due := !ok || now.Sub(last) >= TickGuard || now.Before(last)
	if due {
		if len(q.nudged) >= 1024 {
			clear(q.nudged)
		}
		q.nudged[id] = now
	}
	q.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, NudgeBudget)
	defer cancel()
	r, err := q.eng.TickGuarded(ctx, id, TickGuard)
	if err != nil && !errors.Is(err, room.ErrTickBusy) && !errors.Is(err, room.ErrUnknownRoom) {
		q.o.Logger.LogAttrs(ctx, slog.LevelDebug, "request-driven tick", slog.String("room", id), slog.String("error", err.Error()))
	}
	if err == nil && r.Admitted > 0 {
		// A room ticked only by requests records its head as the admit loop's
		// ticks do: what a loss can grant again is the same window.
		q.recordHead(ctx, id)
	}
}

// Join ticks the room (nudge), then joins.
func (q *Queue) Join(ctx context.Context, id, visitor string, proof room.JoinProof) (room.Place, error) {
	q.nudge(ctx, id)
	if err := q.checkRevoked(ctx, id, proof); err != nil {
		return room.Place{}, err
	}
	return retry(ctx, q, id, func() (room.Place, error) { return q.eng.Join(ctx, id, visitor, proof) })
}

// Poll ticks the room (nudge), then polls: the first visitors of a quiet room
// are admitted without waiting for the scheduled admit function.
func (q *Queue) Poll(ctx context.Context, t room.Ticket) (room.Place, error) {
	q.nudge(ctx, t.Room)
	return retry(ctx, q, t.Room, func() (room.Place, error) { return q.eng.Poll(ctx, t) })
}

// AllowEnqueue is the engine's, restoring a lost room.
func (q *Queue) AllowEnqueue(ctx context.Context, id, client string) error {
	_, err := retry(ctx, q, id, func() (struct{}, error) { return struct{}{}, q.eng.AllowEnqueue(ctx, id, client) })
	return err
}

// Leave is the engine's, restoring a lost room.
func (q *Queue) Leave(ctx context.Context, t room.Ticket) error {
	_, err := retry(ctx, q, t.Room, func() (struct{}, error) { return struct{}{}, q.eng.Leave(ctx, t) })
	return err
}

// Consume is the engine's, restoring a lost room (whose grants are gone: the
// answer is then room.ErrUnknownGrant).
func (q *Queue) Consume(ctx context.Context, id string, seq int64, audience string) (room.Session, error) {
	return retry(ctx, q, id, func() (room.Session, error) { return q.eng.Consume(ctx, id, seq, audience) })
}

// Renew is the engine's, restoring a lost room (whose sessions are gone: the
// answer is then room.ErrUnknownGrant).
func (q *Queue) Renew(ctx context.Context, id string, seq int64, audience string, start time.Time) (room.Session, error) {
	return retry(ctx, q, id, func() (room.Session, error) { return q.eng.Renew(ctx, id, seq, audience, start) })
}

// Complete is the engine's, restoring a lost room.
func (q *Queue) Complete(ctx context.Context, id string, seq int64, audience string) error {
	_, err := retry(ctx, q, id, func() (struct{}, error) { return struct{}{}, q.eng.Complete(ctx, id, seq, audience) })
	return err
}

// Tick is the engine's (the scheduled admit loop's), restoring a lost room;
// then, at most every HeadEvery, it records the room's head in the store.
func (q *Queue) Tick(ctx context.Context, id string) (room.TickResult, error) {
	r, err := retry(ctx, q, id, func() (room.TickResult, error) { return q.eng.Tick(ctx, id) })
	if err == nil {
		q.recordHead(ctx, id)
	}
	return r, err
}

// recordHead stores the room's head (the higher of its head and floor) when
// HeadEvery passed since this process last did and it is above what the
// store holds. Failures are logged: the next tick tries again.
func (q *Queue) recordHead(ctx context.Context, id string) {
	if q.o.Store == nil {
		return
	}
	now := q.o.Clock()
	q.mu.Lock()
	last, ok := q.recorded[id]
	q.mu.Unlock()
	if ok && now.Sub(last.at) < q.o.HeadEvery && !now.Before(last.at) {
		return
	}
	h, err := q.eng.Head(ctx, id, -1)
	if err == nil && !ok {
		// The first record of this process: never lower what the store holds
		// (a record that is not a score is overwritten: Redis has the room).
		last.head, err = q.storedHead(ctx, id)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadHead) {
			last.head, err = -1, nil
		}
	}
	if err == nil && h > last.head {
		err = q.o.Store.PutHead(ctx, id, h)
		last.head = h
	}
	if err != nil {
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "record head", slog.String("room", id), slog.String("error", err.Error()))
		return
	}
	q.mu.Lock()
	q.recorded[id] = record{head: last.head, at: now}
	q.mu.Unlock()
}

// storedHead is the store's head record of the room, refused (ErrBadHead)
// when it is a sequence more than HeadAhead past the clock: the store's own
// checks (parseHead) cannot know the time.
func (q *Queue) storedHead(ctx context.Context, id string) (float64, error) {
	h, err := q.o.Store.Head(ctx, id)
	if err == nil && h > float64(q.o.Clock().Add(HeadAhead).UnixMicro()) {
		return 0, fmt.Errorf("%w: %s is more than %s ahead of the clock", ErrBadHead, formatHead(h), HeadAhead)
	}
	return h, err
}

// ErrNotDurable wraps the error of a PutConfig whose settings Redis took but
// the store did not: it also wraps room.ErrUnavailable, so the admin gets a
// 503 and PUTs again (the admin route is idempotent).
var ErrNotDurable = errors.New("durable: settings applied but not stored durably")

// PutConfig stores the settings in Redis (live at once), then in the store.
// When the store write fails the settings stay applied in Redis, and the
// error (ErrNotDurable, room.ErrUnavailable: a 503) tells the admin to PUT
// again: a room whose settings are not in the store would not come back after
// a total loss.
func (q *Queue) PutConfig(ctx context.Context, id string, cfg room.Config) (room.Config, error) {
	return q.putConfig(ctx, id, func() (room.Config, error) { return q.eng.PutConfig(ctx, id, cfg) })
}

// putConfig is PutConfig with the engine's write of the settings in put.
func (q *Queue) putConfig(ctx context.Context, id string, put func() (room.Config, error)) (room.Config, error) {
	if q.o.Store != nil {
		if err := q.buryFromStore(ctx, id); err != nil {
			return room.Config{}, err
		}
	}
	stored, err := put()
	if err != nil || q.o.Store == nil {
		return stored, err
	}
	b, err := json.Marshal(stored)
	if err == nil {
		err = q.o.Store.PutSettings(ctx, id, b)
	}
	if err == nil {
		err = q.firstHead(ctx, id)
	}
	if err != nil {
		q.o.Logger.LogAttrs(ctx, slog.LevelError, "store room settings", slog.String("room", id), slog.String("error", err.Error()))
		return room.Config{}, fmt.Errorf("%w: %w: %w", room.ErrUnavailable, ErrNotDurable, err)
	}
	q.mu.Lock()
	delete(q.missing, id)
	delete(q.unreadable, id)
	if !q.listedAt.IsZero() && !slices.Contains(q.listed, id) {
		q.listed = append(slices.Clip(q.listed), id)
	}
	q.mu.Unlock()
	return stored, nil
}

// firstHead records a head for a room the store has none of (a new room, or
// a record that is not a score): a restore finds one, so a room that never
// admitted anyone does not come back closed (Restore).
func (q *Queue) firstHead(ctx context.Context, id string) error {
	_, err := q.storedHead(ctx, id)
	if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrBadHead) {
		return err
	}
	h, err := q.eng.Head(ctx, id, -1)
	if err != nil {
		return err
	}
	return q.o.Store.PutHead(ctx, id, max(h, 0))
}

// GetConfig is the engine's, restoring a lost room.
func (q *Queue) GetConfig(ctx context.Context, id string) (room.Config, error) {
	return retry(ctx, q, id, func() (room.Config, error) { return q.eng.GetConfig(ctx, id) })
}

// Rooms is Redis's registry and the store's rooms together, so the admit loop
// ticks (and thereby restores) every room after a loss. The store's list is
// reused for ListEvery. A store that cannot be listed is logged, and the rooms
// known so far are still returned.
func (q *Queue) Rooms(ctx context.Context) ([]string, error) {
	ids, err := q.eng.Rooms(ctx)
	if err != nil || q.o.Store == nil {
		return ids, err
	}
	now := q.o.Clock()
	q.mu.Lock()
	more, at := q.listed, q.listedAt
	q.mu.Unlock()
	if at.IsZero() || now.Sub(at) >= ListEvery || now.Before(at) {
		fresh, serr := q.o.Store.Rooms(ctx)
		if serr != nil {
			q.o.Logger.LogAttrs(ctx, slog.LevelError, "list stored rooms", slog.String("error", serr.Error()))
		} else {
			more = fresh
			q.mu.Lock()
			q.listed, q.listedAt = fresh, now
			q.mu.Unlock()
		}
	}
	ids = append(slices.Clip(ids), more...)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Status is the engine's, restoring a lost room.
func (q *Queue) Status(ctx context.Context, id string) (room.Config, room.Stats, error) {
	type cs struct {
		c room.Config
		s room.Stats
	}
	v, err := retry(ctx, q, id, func() (cs, error) {
		c, s, err := q.eng.Status(ctx, id)
		return cs{c, s}, err
	})
	return v.c, v.s, err
}

// Drain empties a closed room's queue (roomdb.Engine.Drain). A room missing from
// Redis has nobody waiting, so it is not restored for this.
func (q *Queue) Drain(ctx context.Context, id string) (int64, error) {
	return q.eng.Drain(ctx, id)
}

// ClaimRegion gives the room to the engine's region at a failover
// (roomdb.Engine.ClaimRegion); a room missing from Redis is restored first,
// as the engine's region's.
func (q *Queue) ClaimRegion(ctx context.Context, id string) (room.RegionClaim, error) {
	return retry(ctx, q, id, func() (room.RegionClaim, error) { return q.eng.ClaimRegion(ctx, id) })
}

// History returns the room's last hour (roomdb.Engine.History); a room missing
// from Redis has none, so it is not restored for this.
func (q *Queue) History(ctx context.Context, id string) ([]room.HistoryPoint, error) {
	return q.eng.History(ctx, id)
}
