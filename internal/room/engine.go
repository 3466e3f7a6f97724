package room

import (
	"context"
	"time"
)

// Engine is the room engine (*roomdb.Engine, over Redis): the one interface
// of it that the layers above pass on and wrap (durable.Queue keeps it
// durable, roomevents.Emitter publishes its events). Every capability is in
// it, so no wrapper asks whether the engine under it has one.
type Engine interface {
	Join(ctx context.Context, room, visitor string, proof JoinProof) (Place, error)
	Poll(ctx context.Context, t Ticket) (Place, error)
	AllowEnqueue(ctx context.Context, room, client string) error
	Leave(ctx context.Context, t Ticket) error
	Consume(ctx context.Context, room string, seq int64, audience string) (Session, error)
	Complete(ctx context.Context, room string, seq int64, audience string) error
	Renew(ctx context.Context, room string, seq int64, audience string, start time.Time) (Session, error)

	Tick(ctx context.Context, room string) (TickResult, error)
	// TickGuarded ticks unless the room was ticked less than guard ago.
	TickGuarded(ctx context.Context, room string, guard time.Duration) (TickResult, error)
	// ReportLoad records the origin's load, which an auto room's pace follows.
	ReportLoad(ctx context.Context, room string, load float64) error

	PutConfig(ctx context.Context, room string, cfg Config) (Config, error)
	GetConfig(ctx context.Context, room string) (Config, error)
	Rooms(ctx context.Context) ([]string, error)
	Status(ctx context.Context, room string) (Config, Stats, error)
	Drain(ctx context.Context, room string) (int64, error)
	History(ctx context.Context, room string) ([]HistoryPoint, error)
	// Delete removes a room for good, keeping its tombstone.
	Delete(ctx context.Context, room string) error
	AppendAudit(ctx context.Context, room string, e AuditEntry) error
	Audit(ctx context.Context, room string) ([]AuditEntry, error)

	// ClaimRegion gives the room to the engine's region at a failover
	// (docs/ENGINE.md, "Regions").
	ClaimRegion(ctx context.Context, room string) (RegionClaim, error)

	// The head and the tombstone, which a restore after a total loss sets.
	Head(ctx context.Context, room string, floor float64) (float64, error)
	FloorNow(ctx context.Context, room string) (float64, error)
	Bury(ctx context.Context, room string, dead int64) (int64, error)

	// Scheduled changes.
	Schedule(ctx context.Context, room string) ([]ScheduledChange, error)
	PutScheduled(ctx context.Context, room string, c ScheduledChange) error
	// A change is applied or cancelled under its lease: LeaseScheduled's
	// token, which the steps under it pass, fenced in Redis (ErrLeaseLost).
	LeaseScheduled(ctx context.Context, room, id string) (c ScheduledChange, token string, err error)
	ReleaseScheduled(ctx context.Context, room, id, token string) error
	RemoveScheduled(ctx context.Context, room, id, token string) error
	ApplyScheduled(ctx context.Context, room, id, token string, cfg Config) (Config, error)
	// RefuseScheduled keeps a leased change, refused, in the schedule.
	RefuseScheduled(ctx context.Context, room string, c ScheduledChange, token string) error
	RestoreSchedule(ctx context.Context, room string, cs []ScheduledChange) error
	DropSchedule(ctx context.Context, room string) error
	// ScheduleCopy reads the schedule with its version (every change of it
	// makes a new one) and the version last known to be in the durable
	// store; ScheduleStored records that the store holds a version.
	ScheduleCopy(ctx context.Context, room string) (cs []ScheduledChange, version, stored int64, err error)
	ScheduleStored(ctx context.Context, room string, version int64) error

	// Invitations, and the support's visitor lookup.
	Invitation(ctx context.Context, room, id string) (InvitationState, error)
	RevokeInvitation(ctx context.Context, room, id string) (time.Time, error)
	PutRevocations(ctx context.Context, room string, revs []Revocation) error
	Revocations(ctx context.Context, room string) ([]Revocation, error)
	Visitor(ctx context.Context, room, visitor string) (VisitorState, error)
	RestorePlace(ctx context.Context, room, visitor string) (VisitorState, error)

	// Notices of a visitor's turn (notice.go): a registration with the place,
	// withdrawn or ended with it; the due notices the notify function takes
	// for a lease, and how each went.
	RegisterNotice(ctx context.Context, t Ticket, s NoticeSignup) error
	WithdrawNotice(ctx context.Context, t Ticket) error
	TakeNotices(ctx context.Context, room string, most int, lease time.Duration) ([]DueNotice, error)
	AckNotice(ctx context.Context, room string, seq int64, o NoticeOutcome, retryAt time.Time) error
}
