package bookingdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"golang.org/x/sync/singleflight"
)

// Definitions keep events' definitions where a total loss of Redis cannot
// reach them (durable.Events: the store of the rooms' settings).
type Definitions interface {
	PutDefinition(ctx context.Context, event string, inv booking.Inventory) error
	// Definition returns ErrUnknownEvent when it holds none.
	Definition(ctx context.Context, event string) (booking.Inventory, error)
}

// WithDefinitions keeps every definition in d as well, and defines an event
// lost with Redis again from d when a call finds it missing (then runs the
// call once more). Holds and orders are not kept: after a total loss the
// event starts with every seat available and its stock as defined, and its
// fencing tokens keep growing (their time floor).
func WithDefinitions(d Definitions) Option {
	return func(e *Engine) {
		if d != nil {
			e.defs = &restorer{d: d, missing: map[string]time.Time{}}
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
	cancelCmd.Name: true, viewCmd.Name: true, roomCmd.Name: true, ordersCmd.Name: true,
}

// restorer is the engine's side of its Definitions.
type restorer struct {
	d       Definitions
	mu      sync.Mutex
	missing map[string]time.Time // events the store did not have, when it said so
	flight  singleflight.Group   // one restore of an event at a time in this process
}

func (r *restorer) forget(event string) {
	r.mu.Lock()
	delete(r.missing, event)
	r.mu.Unlock()
}

// restore defines a missing event again from the store: true when the event
// is in Redis now (restored here, or by someone else meanwhile), false when
// the store has none.
func (e *Engine) restore(ctx context.Context, event string) (bool, error) {
	r := e.defs
	now := e.clock()
	r.mu.Lock()
	at, known := r.missing[event]
	r.mu.Unlock()
	if known && now.Sub(at) < MissingFor && now.Sub(at) >= 0 {
		return false, nil
	}
	v, err, _ := r.flight.Do(event, func() (any, error) {
		inv, err := r.d.Definition(ctx, event)
		if errors.Is(err, booking.ErrUnknownEvent) {
			r.mu.Lock()
			if len(r.missing) >= maxMissing { // made-up ids must not grow the map without end
				for id, at := range r.missing {
					if now.Sub(at) >= MissingFor || now.Sub(at) < 0 {
						delete(r.missing, id)
					}
				}
				if len(r.missing) >= maxMissing {
					clear(r.missing)
				}
			}
			r.missing[event] = now
			r.mu.Unlock()
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%w: restore event %s: %w", booking.ErrUnavailable, event, err)
		}
		if err := e.define(ctx, event, inv, true); err != nil && !errors.Is(err, booking.ErrInUse) {
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}
