// Package admission is the admission loop: every interval it ticks every room
// once (roomdb.Engine.Tick, up to roomsAtOnce at a time), the one loop the admit
// Lambda runs inside its minute and the local stack runs for as long as it
// lives. It needs the engine and nothing else: no tokens, no secrets.
package admission

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Ticker is what the loop needs of the engine to tick the rooms.
type Ticker interface {
	Rooms(ctx context.Context) ([]string, error)
	Tick(ctx context.Context, room string) (room.TickResult, error)
}

// Loop is what the admission loop works on: the rooms' ticks, and beside
// them, where the deployment has them, the idle check (Statuser), the
// scheduled changes (Planner, schedule.go) and the archive of the rooms'
// history (Archiver, history.go). Each part is given, not guessed from the
// ticker's methods, so a deployment that leaves one out says so: a nil part
// is none (without a Statuser the handler never finds the deployment idle,
// without a Planner no scheduled change applies). Ticker is required.
type Loop struct {
	Ticker   Ticker
	Statuser Statuser
	Planner  Planner
	Archiver Archiver
}

// Engine is what a deployment's loop works on: every part of it
// (durable.Queue is one).
type Engine interface {
	Ticker
	Statuser
	Planner
	Archiver
}

// For is the loop of a deployment's engine, with every part: the admit
// function's and the local stack's.
func For(e Engine) Loop { return Loop{Ticker: e, Statuser: e, Planner: e, Archiver: e} }

// AdmitMargin is how long before its deadline the admit function stops
// ticking, so it returns cleanly instead of being cut off by Lambda.
const AdmitMargin = 3 * time.Second

// TickSummary is what a run of ticks did, summed over rooms and ticks.
type TickSummary struct {
	Ticks           int   `json:"ticks"`     // loop iterations
	RoomTicks       int   `json:"roomTicks"` // successful room ticks
	Errors          int   `json:"errors"`    // failed room lists and room ticks
	Admitted        int64 `json:"admitted"`
	Evicted         int64 `json:"evicted"`
	GrantsReclaimed int64 `json:"grantsReclaimed"`
	SessionsEnded   int64 `json:"sessionsEnded"`
	// Idle is set when the handler returned at once: no room had anyone
	// waiting, admitted or active.
	Idle bool `json:"idle,omitempty"`
}

// Statuser reads a room's counts, which let the handler skip an idle
// deployment's minute (roomdb.Engine and durable.Queue are one).
type Statuser interface {
	Status(ctx context.Context, room string) (room.Config, room.Stats, error)
}

// Idle reports whether no room needs a scheduled tick: none has anyone
// admitted or active, and none but a paused or closed one has anyone waiting
// (or in the pre-queue). One stats script per room. A paused or closed room
// admits and evicts nobody, so with no grant or session to reclaim a tick of
// it has nothing to do: visitors held there leave the deployment idle (their
// own polls still tick it, guarded, and the first invocation after it opens
// ticks for its minute). A room it cannot read is not idle (the loop ticks it
// and logs the error). Nor is a room with a change scheduled within
// ScheduleLookahead (schedule.go). A loop without a Statuser is never idle.
func (l Loop) Idle(ctx context.Context) bool {
	if l.Statuser == nil {
		return false
	}
	ids, err := l.Ticker.Rooms(ctx)
	if err != nil {
		return false
	}
	for _, id := range ids {
		cfg, st, err := l.Statuser.Status(ctx, id)
		if err != nil || st.Admitted+st.Active > 0 {
			return false
		}
		if st.Waiting > 0 && cfg.Mode != room.ModePaused && cfg.Mode != room.ModeClosed {
			return false
		}
		if l.Planner != nil && scheduledSoon(ctx, l.Planner, id) { // schedule.go
			return false
		}
	}
	return true
}

// Run ticks every room once per interval, starting at once, until ctx is
// done. It is the one admission loop: the admit Lambda runs it inside its
// minute and the local stack runs it for as long as it lives. Failures are
// logged and counted, never fatal: the next tick tries again, and the engine's
// token bucket keeps duplicate or late ticks from admitting extra visitors.
// Each of also runs after the rooms on every tick (the booking sweep,
// orders.Task): work that needs a schedule rides on this one, at no cost of
// its own.
func (l Loop) Run(ctx context.Context, interval time.Duration, log *slog.Logger, also ...func(context.Context)) TickSummary {
	if interval <= 0 {
		interval = time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var sum TickSummary
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if ctx.Err() != nil {
			return sum
		}
		sum.Ticks++
		l.applyDue(ctx, log) // scheduled changes first (schedule.go)
		tickAll(ctx, l.Ticker, log, &sum)
		for _, f := range also {
			if ctx.Err() == nil {
				f(ctx)
			}
		}
		select {
		case <-ctx.Done():
			return sum
		case <-t.C:
		}
	}
}

// roomsAtOnce is how many rooms a round ticks at the same time. A tick that
// waits out the Redis client's timeout (a slow or stopped node) then holds
// the round back by that timeout once, not once per such room: 10 rooms on a
// stopped node made a round of 4 s, past the admit function's 1 s interval.
const roomsAtOnce = 8

func tickAll(ctx context.Context, q Ticker, log *slog.Logger, sum *TickSummary) {
	ids, err := q.Rooms(ctx)
	if err != nil {
		if ctx.Err() == nil {
			sum.Errors++
			log.LogAttrs(ctx, slog.LevelError, "tick: list rooms", append(metrics.RedisErrorAttrs(time.Now()), slog.String("error", err.Error()))...)
		}
		return
	}
	var mu sync.Mutex
	eachRoom(ctx, ids, func(id string) {
		r, err := q.Tick(ctx, id)
		mu.Lock()
		defer mu.Unlock()
		tally(ctx, log, sum, id, r, err)
	})
}

// eachRoom calls fn for each room, up to roomsAtOnce at a time, and returns
// when every call has; once ctx is done it starts no more.
func eachRoom(ctx context.Context, ids []string, fn func(id string)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, roomsAtOnce)
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			fn(id)
		}()
	}
	wg.Wait()
}

// tally adds one room's tick to the round's summary and logs what needs it.
func tally(ctx context.Context, log *slog.Logger, sum *TickSummary, id string, r room.TickResult, err error) {
	if err != nil {
		if ctx.Err() == nil {
			sum.Errors++
			log.LogAttrs(ctx, slog.LevelError, "tick", append(metrics.RedisErrorAttrs(time.Now()), slog.String("room", id), slog.String("error", err.Error()))...)
		}
		return
	}
	// A merge held back after a failed read of the shards (room.ErrMergeHeld)
	// was that failure, already counted and logged.
	if r.MergeErr != nil && ctx.Err() == nil && !errors.Is(r.MergeErr, room.ErrMergeHeld) {
		// The admissions happened; the arrivals wait for a later tick.
		sum.Errors++
		log.LogAttrs(ctx, slog.LevelError, "tick: merge arrivals", append(metrics.RedisErrorAttrs(time.Now()), slog.String("room", id), slog.String("error", r.MergeErr.Error()))...)
	}
	sum.RoomTicks++
	sum.Admitted += r.Admitted
	sum.Evicted += r.Evicted
	sum.GrantsReclaimed += r.GrantsReclaimed
	sum.SessionsEnded += r.SessionsEnded
	if r != (room.TickResult{}) {
		log.LogAttrs(ctx, slog.LevelDebug, "tick", slog.String("room", id),
			slog.Int64("admitted", r.Admitted), slog.Int64("evicted", r.Evicted),
			slog.Int64("grants_reclaimed", r.GrantsReclaimed), slog.Int64("sessions_ended", r.SessionsEnded))
	}
}

// Handler is the admit Lambda's handler: on each scheduled event it ticks
// every interval until AdmitMargin before the invocation's deadline (or for
// one minute when there is none), then returns the summary. When no room
// needs a tick (Idle: nobody admitted or active, nobody waiting but in paused
// or closed rooms, no change scheduled soon), it returns at once: an idle
// deployment costs one short invocation a minute, and visitors' own requests
// tick a quiet room (durable.Queue) until the next invocation finds someone
// and ticks for its minute. also runs on every tick as in Run.
func (l Loop) Handler(interval time.Duration, log *slog.Logger, also ...func(context.Context)) func(context.Context, events.EventBridgeEvent) (TickSummary, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, ev events.EventBridgeEvent) (TickSummary, error) {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(time.Minute)
		}
		// A short timeout still gets ticks: the margin is at most half the time left.
		margin := min(AdmitMargin, time.Until(deadline)/2)
		ctx, cancel := context.WithDeadline(ctx, deadline.Add(-margin))
		defer cancel()
		if l.Idle(ctx) {
			log.LogAttrs(ctx, slog.LevelInfo, "admit", slog.String("event_id", ev.ID), slog.Bool("idle", true))
			return TickSummary{Idle: true}, nil
		}
		sum := l.Run(ctx, interval, log, also...)
		log.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "admit",
			slog.String("event_id", ev.ID), slog.Int("ticks", sum.Ticks), slog.Int("room_ticks", sum.RoomTicks),
			slog.Int("errors", sum.Errors), slog.Int64("admitted", sum.Admitted), slog.Int64("evicted", sum.Evicted))
		return sum, nil
	}
}
