// Package roomevents publishes the room engine's events: Emitter wraps a
// room.Engine so that every tick that changed something, every consume and
// complete, every switch of the safety net, step of the pace and admin
// change goes to an eventbus.Publisher (docs/API.md, "Events"). It sits under
// durable.Queue (app.New); the admission loop (internal/admission) ticks
// through it and does not know it.
package roomevents

import (
	"context"
	"log/slog"
	"time"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The detail-types of admission events (source eventbus.SourceAdmission),
// spelled in package eventbus, whose forwarder checks which function emits
// which; docs/API.md, "Events", shows each.
const (
	TypeTick      = eventbus.TypeTick      // a tick of one room that changed something
	TypeConsumed  = eventbus.TypeConsumed  // an entry token redeemed: the grant became a session
	TypeCompleted = eventbus.TypeCompleted // the origin completed a session (or gave up an unused grant)
)

// TickEvent is the detail of admission.tick: what one tick did to one room.
// Consumers dedupe on (room, at).
type TickEvent struct {
	Room string    `json:"room"`
	At   time.Time `json:"at"` // when the tick ran (the engine's clock, to the millisecond, UTC)
	// Admitted visitors, and the lowest and highest sequence among them
	// (both left out when nobody was admitted). In queue order every visitor
	// admitted has a sequence in the range, though not every sequence in it
	// was admitted (some left or went silent); after a pre-queue's draw the
	// order is the draw's, so the range is as wide as the pre-queue.
	Admitted        int64 `json:"admitted"`
	FirstSeq        int64 `json:"firstSeq,omitempty"`
	LastSeq         int64 `json:"lastSeq,omitempty"`
	Evicted         int64 `json:"evicted"`         // waiting visitors who went silent, removed
	GrantsReclaimed int64 `json:"grantsReclaimed"` // grants not redeemed within claimTTLSeconds
	SessionsEnded   int64 `json:"sessionsEnded"`   // sessions past sessionTTLSeconds
	// Notices is how many notices of a visitor's turn were due to send at the
	// end of the tick (docs/ENGINE.md, "Notices"): a count, never whose. The
	// stack's rule sends the events that have any to the notify function.
	Notices int64  `json:"notices,omitempty"`
	After   Counts `json:"after"` // the room's counts at the end of the tick
}

// Counts are a room's counts at one instant.
type Counts struct {
	Waiting  int64 `json:"waiting"`  // waiting, or in the pre-queue
	Admitted int64 `json:"admitted"` // granted, not yet at the origin
	Active   int64 `json:"active"`   // sessions running at the origin
}

// ConsumedEvent is the detail of admission.entry.consumed. Consumers dedupe
// on (room, seq): a grant is consumed once.
type ConsumedEvent struct {
	Room          string    `json:"room"`
	Seq           int64     `json:"seq"`
	At            time.Time `json:"at"`
	SessionEndsAt time.Time `json:"sessionEndsAt"`
}

// CompletedEvent is the detail of admission.session.completed. Consumers
// dedupe on (room, seq); a second complete of the same session is an error
// and emits nothing.
type CompletedEvent struct {
	Room string    `json:"room"`
	Seq  int64     `json:"seq"`
	At   time.Time `json:"at"`
}

// TickEventOf is the event of a tick of room at, or false when the tick
// changed nothing (a quiet room emits nothing).
func TickEventOf(id string, at time.Time, r room.TickResult) (TickEvent, bool) {
	if r.Admitted == 0 && r.Evicted == 0 && r.GrantsReclaimed == 0 && r.SessionsEnded == 0 && r.Notices == 0 {
		return TickEvent{}, false
	}
	return TickEvent{Room: id, At: at.UTC().Truncate(time.Millisecond), Admitted: r.Admitted, FirstSeq: r.FirstSeq, LastSeq: r.LastSeq,
		Evicted: r.Evicted, GrantsReclaimed: r.GrantsReclaimed, SessionsEnded: r.SessionsEnded, Notices: r.Notices,
		After: Counts{Waiting: r.After.Waiting, Admitted: r.After.Admitted, Active: r.After.Active}}, true
}

// Emitter is the engine with admission events: every tick that changed
// something (the admit loop's, and the ones visitors' requests drive), every
// consume and every complete publishes its event after it succeeded. It sits
// under durable.Queue (app.New), so every program that ticks, consumes or
// completes emits, and nothing else changes. A publish that fails is logged;
// the operation it reports stands.
type Emitter struct {
	room.Engine
	pub   eventbus.Publisher
	clock func() time.Time
	log   *slog.Logger
}

var _ room.Engine = (*Emitter)(nil)

// Emit wraps eng so it publishes admission events to pub. clock is the
// engine's (nil: time.Now); log nil discards.
func Emit(eng room.Engine, pub eventbus.Publisher, clock func() time.Time, log *slog.Logger) *Emitter {
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Emitter{Engine: eng, pub: pub, clock: clock, log: log}
}

func (e *Emitter) publish(ctx context.Context, detailType string, detail any) {
	en, err := eventbus.NewEntry(eventbus.SourceAdmission, detailType, detail)
	if err == nil {
		err = e.pub.Publish(context.WithoutCancel(ctx), []eventbus.Entry{en})
	}
	if err != nil {
		e.log.LogAttrs(ctx, slog.LevelError, "admission event", slog.String("detail_type", detailType), slog.String("error", err.Error()))
	}
}

func (e *Emitter) ticked(ctx context.Context, id string, at time.Time, r room.TickResult, err error) (room.TickResult, error) {
	if err == nil {
		if ev, ok := TickEventOf(id, at, r); ok {
			e.publish(ctx, TypeTick, ev)
		}
		e.steered(ctx, id, at, r)
	}
	return r, err
}

// Tick ticks the room and publishes its event.
func (e *Emitter) Tick(ctx context.Context, id string) (room.TickResult, error) {
	at := e.clock()
	r, err := e.Engine.Tick(ctx, id)
	return e.ticked(ctx, id, at, r, err)
}

// TickGuarded is the request-driven tick, with its event.
func (e *Emitter) TickGuarded(ctx context.Context, id string, guard time.Duration) (room.TickResult, error) {
	at := e.clock()
	r, err := e.Engine.TickGuarded(ctx, id, guard)
	return e.ticked(ctx, id, at, r, err)
}

// Consume redeems a grant and publishes admission.entry.consumed.
func (e *Emitter) Consume(ctx context.Context, id string, seq int64, audience string) (room.Session, error) {
	at := e.clock()
	s, err := e.Engine.Consume(ctx, id, seq, audience)
	if err == nil {
		e.publish(ctx, TypeConsumed, ConsumedEvent{Room: id, Seq: seq, At: at.UTC().Truncate(time.Millisecond),
			SessionEndsAt: s.ExpiresAt.UTC()})
	}
	return s, err
}

// Complete ends a session (or gives up a grant) and publishes admission.session.completed.
func (e *Emitter) Complete(ctx context.Context, id string, seq int64, audience string) error {
	at := e.clock()
	err := e.Engine.Complete(ctx, id, seq, audience)
	if err == nil {
		e.publish(ctx, TypeCompleted, CompletedEvent{Room: id, Seq: seq, At: at.UTC().Truncate(time.Millisecond)})
	}
	return err
}
