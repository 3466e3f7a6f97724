package bookingdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"golang.org/x/sync/singleflight"
)

// Definitions keep events' definitions where a total loss of Redis cannot
// reach them (durable.Events: the store of the rooms' settings).
type Definitions interface {
	PutDefinition(ctx context.Context, event string, inv booking.Inventory) error
	// Definition returns booking.ErrUnknownEvent when it holds none, and an
	// error wrapping booking.ErrNotRestorable when what it holds is no valid
	// definition (that error's text stays in the log: it names internals).
	Definition(ctx context.Context, event string) (booking.Inventory, error)
}

// WithDefinitions keeps every definition in d as well, and defines an event
// lost with Redis again from d when a call finds it missing (then runs the
// call once more). Holds and orders are not kept: after a total loss the
// event comes back closed to holds (booking.ErrRecovering), so nothing it sold
// before is sold again, until Rebuild puts back the orders the origin
// recorded and reopens it; its fencing tokens keep growing (their time floor,
// and Rebuild moves the fence past every recorded token). A Define of an
// event the store has but Redis lost brings it back closed too.
func WithDefinitions(d Definitions) Option {
	return func(e *Engine) {
		if d != nil {
			e.defs = &restorer{d: d, missing: map[string]missed{}}
		}
	}
}

// MissingFor is how long an event the store does not have is not asked for
// again by this process: calls for made-up event ids cost no store read each.
const MissingFor = 10 * time.Second

// maxMissing bounds the events remembered as missing: past it the stale ones
// go, and all of them if none is stale.
const maxMissing = 10_000

// restores are the scripts whose 'noevent' restores the event: what a
// visitor, the origin or the admin calls. The sweep's and a session end's
// scripts never do (an event lost with Redis has no holds to end).
var restores = map[string]bool{
	holdCmd.Name: true, confirmCmd.Name: true, extendCmd.Name: true, releaseCmd.Name: true,
	cancelCmd.Name: true, viewCmd.Name: true, roomCmd.Name: true, ordersCmd.Name: true, rebuildCmd.Name: true,
	closeCmd.Name: true,
}

// restorer is the engine's side of its Definitions.
type restorer struct {
	d       Definitions
	mu      sync.Mutex
	missing map[string]missed  // events not restored, when and why
	flight  singleflight.Group // one restore of an event at a time in this process
}

// missed is an event the store did not have (err nil), or whose stored
// definition it could not read (err wraps booking.ErrNotRestorable), at a time.
type missed struct {
	at  time.Time
	err error
}

func (r *restorer) forget(event string) {
	r.mu.Lock()
	delete(r.missing, event)
	r.mu.Unlock()
}

// remember notes that event could not be restored at now, and why.
func (r *restorer) remember(event string, now time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.missing) >= maxMissing { // made-up ids must not grow the map without end
		for id, m := range r.missing {
			if now.Sub(m.at) >= MissingFor || now.Sub(m.at) < 0 {
				delete(r.missing, id)
			}
		}
		if len(r.missing) >= maxMissing {
			clear(r.missing)
		}
	}
	r.missing[event] = missed{now, err}
}

// restore defines a missing event again from the store: true when the event
// is in Redis now (restored here, or by someone else meanwhile), false when
// the store has none; an error wrapping booking.ErrNotRestorable when its
// stored definition cannot be read. Either answer is kept for MissingFor.
func (e *Engine) restore(ctx context.Context, event string) (bool, error) {
	r := e.defs
	now := e.clock()
	r.mu.Lock()
	m, known := r.missing[event]
	r.mu.Unlock()
	if known && now.Sub(m.at) < MissingFor && now.Sub(m.at) >= 0 {
		return false, m.err
	}
	v, err, _ := r.flight.Do(event, func() (any, error) {
		inv, err := r.d.Definition(ctx, event)
		switch {
		case errors.Is(err, booking.ErrUnknownEvent):
			r.remember(event, now, nil)
			return false, nil
		case errors.Is(err, booking.ErrNotRestorable):
			e.log.LogAttrs(ctx, slog.LevelError, "event not restored: stored definition unreadable",
				slog.String("event", event), slog.String("error", err.Error()))
			err = fmt.Errorf("%w: event %s", booking.ErrNotRestorable, event)
			r.remember(event, now, err)
			return false, err
		case err != nil:
			return false, fmt.Errorf("%w: restore event %s: %w", booking.ErrUnavailable, event, err)
		}
		if err := e.define(ctx, event, inv, defineRestore); err != nil && !errors.Is(err, booking.ErrInUse) {
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}
