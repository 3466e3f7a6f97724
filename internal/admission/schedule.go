package admission

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Scheduled changes (docs/OPERATING.md, "Scheduled changes"): every round of
// the loop, before it ticks the rooms, applies each change whose time has
// come, through the same path as an admin PUT: the settings as they are then
// with the change's on top, validated and stored by PutConfig (fences, the
// durable write), and an entry in the room's audit log made by "schedule". A
// change that is no longer valid is refused: kept in the schedule with the
// reason, audited, shown until an operator cancels it. The loop runs every
// second, so a change applies within a second of its time; each round also
// brings the durable copy of a schedule that fell behind up to date.

// Planner is what applying scheduled changes needs of the engine
// (durable.Queue fits).
type Planner interface {
	Rooms(ctx context.Context) ([]string, error)
	Now() time.Time
	Schedule(ctx context.Context, room string) ([]room.ScheduledChange, error)
	LeaseScheduled(ctx context.Context, room, id string) (room.ScheduledChange, string, error)
	ReleaseScheduled(ctx context.Context, room, id, token string) error
	// RefuseScheduled keeps a change that is not valid at its time in the
	// schedule, refused, under its lease, giving the lease back in the
	// same step (durable.Queue.RefuseScheduled).
	RefuseScheduled(ctx context.Context, room string, c room.ScheduledChange, token string) error
	// ApplyScheduled stores a change's settings under its lease and takes
	// the change out of the schedule, in Redis at once, then in the store
	// (durable.Queue.ApplyScheduled).
	ApplyScheduled(ctx context.Context, room, id, token string, cfg room.Config) (room.Config, error)
	// SyncSchedule writes the room's schedule to the durable store when the
	// store's copy fell behind Redis's (durable.Queue.SyncSchedule).
	SyncSchedule(ctx context.Context, room string) error
	GetConfig(ctx context.Context, room string) (room.Config, error)
	AppendAudit(ctx context.Context, room string, e room.AuditEntry) error
}

// ScheduleWho is who the audit log names for a change the ticks applied.
const ScheduleWho = "schedule"

// The audit log's actions of the schedule.
const (
	ActionScheduled = room.ActionScheduleApplied // applied at its time
	ActionRefused   = room.ActionScheduleRefused // not valid at its time: kept, with the reason
)

// ScheduleLookahead is how far ahead Idle looks for scheduled changes: an
// admit invocation that finds one due before the next invocation has ticked
// for a while ticks for its minute, so the change applies on time even in a
// deployment where nobody waits.
const ScheduleLookahead = time.Minute + 15*time.Second

// ApplySchedules applies the due changes of every room, up to roomsAtOnce
// rooms at a time, and returns how many it applied. Errors are logged; a
// change that could not be applied for Redis or the store stays planned and
// the next round tries again.
func ApplySchedules(ctx context.Context, p Planner, log *slog.Logger) int {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ids, err := p.Rooms(ctx)
	if err != nil {
		return 0
	}
	now := p.Now()
	var mu sync.Mutex
	applied := 0
	eachRoom(ctx, ids, func(id string) {
		n := applyRoom(ctx, p, id, now, log)
		// A copy the store could not take when the schedule changed (the
		// admin was answered 503, or this loop failed to store an applied
		// change) is written again here; a failure is logged where it fails.
		_ = p.SyncSchedule(ctx, id)
		mu.Lock()
		applied += n
		mu.Unlock()
	})
	return applied
}

// due reports whether a change is planned (not refused) for at or before t.
func due(c room.ScheduledChange, t time.Time) bool { return c.Refused == "" && !c.At.After(t) }

func applyRoom(ctx context.Context, p Planner, id string, now time.Time, log *slog.Logger) int {
	cs, err := p.Schedule(ctx, id)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, room.ErrUnknownRoom) {
			log.LogAttrs(ctx, slog.LevelError, "schedule: read", append(metrics.RedisErrorAttrs(now), slog.String("room", id), slog.String("error", err.Error()))...)
		}
		return 0
	}
	n := 0
	// In order (room.SortSchedule: by time, then as planned). A due change
	// another process is applying, or that failed for Redis or the store,
	// holds back those after it until a later round: none may apply before
	// it and be undone by it.
	for _, c := range cs {
		if !due(c, now) {
			continue
		}
		switch applyChange(ctx, p, id, c.ID, now, log) {
		case applied:
			n++
		case held:
			return n
		}
	}
	return n
}

// outcome is what became of a due change in a round.
type outcome int

const (
	applied outcome = iota
	passed          // refused, or gone (cancelled) meanwhile: the next change may go
	held            // leased by another process, or failed: the next waits for it
)

// applyChange applies one due change under its lease. The settings are
// stored, and the change leaves the schedule, in one step that checks the
// lease (ApplyScheduled): a round whose lease ran out before it (a slow
// store) applies nothing, and a round that takes the lease after it finds
// the change gone.
func applyChange(ctx context.Context, p Planner, id, change string, now time.Time, log *slog.Logger) outcome {
	c, token, err := p.LeaseScheduled(ctx, id, change)
	switch {
	case errors.Is(err, room.ErrUnknownChange):
		return passed // cancelled, or applied, meanwhile
	case err != nil || token == "":
		return held // another process has it, or Redis failed
	case !due(c, now):
		_ = p.ReleaseScheduled(ctx, id, change, token) // refused or moved meanwhile
		return passed
	}
	before, err := p.GetConfig(ctx, id)
	var next, stored room.Config
	if err == nil {
		if next, err = room.ApplySettings(before, c.Settings); err == nil {
			stored, err = p.ApplyScheduled(ctx, id, change, token, next)
		}
	}
	attrs := []slog.Attr{slog.String("room", id), slog.String("schedule", c.ID)}
	switch {
	case err == nil:
	case errors.Is(err, durable.ErrNotDurable):
		// Applied in Redis, not in the store (the queue logged it): the
		// change is made, and the store catches up at the next admin write.
		stored = next
	case errors.Is(err, room.ErrInvalidConfig), errors.Is(err, room.ErrUnknownRoom):
		return refuse(ctx, p, id, c, token, now, err, log)
	case errors.Is(err, room.ErrLeaseLost):
		// Another process holds the change now; it applies it, or a later
		// round does.
		log.LogAttrs(ctx, slog.LevelWarn, "schedule: lease lost before the change was applied", attrs...)
		return held
	default:
		_ = p.ReleaseScheduled(ctx, id, change, token)
		if ctx.Err() == nil {
			log.LogAttrs(ctx, slog.LevelError, "schedule: apply", append(attrs, slog.String("error", err.Error()))...)
		}
		return held
	}
	a := room.AuditEntry{At: now.UTC(), Who: who(c), Action: ActionScheduled, Schedule: c.ID,
		Changes: room.PlannedChanges(&before, &stored, c.Settings)}
	if err := p.AppendAudit(context.WithoutCancel(ctx), id, a); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "schedule: audit", append(attrs, slog.String("error", err.Error()))...)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "scheduled change applied", attrs...)
	return applied
}

// who names the schedule and who planned the change.
func who(c room.ScheduledChange) string {
	if c.CreatedBy == "" {
		return ScheduleWho
	}
	return ScheduleWho + " (planned by " + c.CreatedBy + ")"
}

// refuse keeps a change that is not valid at its time in the schedule, with
// the reason, under its lease, and audits it. A round whose lease ran out
// while it validated the change (on settings read before) keeps nothing and
// audits nothing: the lease's next holder decides, and may have applied the
// change already.
func refuse(ctx context.Context, p Planner, id string, c room.ScheduledChange, token string, now time.Time, why error, log *slog.Logger) outcome {
	ctx = context.WithoutCancel(ctx)
	at := now.UTC()
	c.Refused, c.RefusedAt = why.Error(), &at
	attrs := []slog.Attr{slog.String("room", id), slog.String("schedule", c.ID), slog.String("refused", c.Refused)}
	switch err := p.RefuseScheduled(ctx, id, c, token); {
	case err == nil, errors.Is(err, durable.ErrNotDurable):
		// Refused in Redis; a store copy behind it (the queue logged it) is
		// written again at the end of the round (SyncSchedule).
	case errors.Is(err, room.ErrUnknownChange), errors.Is(err, room.ErrUnknownRoom):
		return passed // gone with its room meanwhile
	case errors.Is(err, room.ErrLeaseLost):
		log.LogAttrs(ctx, slog.LevelWarn, "schedule: lease lost before the change was refused", attrs...)
		return held
	default:
		_ = p.ReleaseScheduled(ctx, id, c.ID, token) // else it expires
		log.LogAttrs(ctx, slog.LevelError, "schedule: keep refused change", append(attrs, slog.String("error", err.Error()))...)
		return held
	}
	if err := p.AppendAudit(ctx, id, room.AuditEntry{At: at, Who: who(c), Action: ActionRefused, Schedule: c.ID, Refused: c.Refused}); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "schedule: audit", append(attrs, slog.String("error", err.Error()))...)
	}
	log.LogAttrs(ctx, slog.LevelWarn, "scheduled change refused", attrs...)
	return passed
}

// scheduledSoon reports whether the room has a change planned within
// ScheduleLookahead (Idle); a schedule it cannot read counts as one.
func scheduledSoon(ctx context.Context, p Planner, id string) bool {
	cs, err := p.Schedule(ctx, id)
	if err != nil {
		return !errors.Is(err, room.ErrUnknownRoom)
	}
	soon := p.Now().Add(ScheduleLookahead)
	for _, c := range cs {
		if due(c, soon) {
			return true
		}
	}
	return false
}

// applyDue runs ApplySchedules when the loop has a Planner, and
// ArchiveHistories when it has an Archiver (history.go).
func (l Loop) applyDue(ctx context.Context, log *slog.Logger) {
	if l.Planner != nil {
		ApplySchedules(ctx, l.Planner, log)
	}
	if l.Archiver != nil {
		ArchiveHistories(ctx, l.Archiver, log)
	}
}
