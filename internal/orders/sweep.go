package orders

import (
	"context"
	"log/slog"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/metrics"
)

// Grace is how old an outbox entry must be before the sweep publishes it:
// younger ones belong to the route that wrote them, which publishes them at
// once (and would otherwise race the sweep into sending them twice).
const Grace = 10 * time.Second

// Batches: holds expired per event and sweep, events read from the outbox per call.
const (
	sweepMax  = 1000
	outboxMax = 100
)

// SweepSummary is what one sweep did, over every event.
type SweepSummary struct {
	Events    int   // events swept
	Expired   int64 // holds expired
	Ended     int64 // holds dropped because their room session ended (timed out)
	Published int   // order events published from the outbox
	Inventory int   // inventory events published from it (or dropped: a publisher that takes none)
	Errors    int
}

// Engine is what the sweep uses of the booking engine (*bookingdb.Engine).
type Engine interface {
	Events(ctx context.Context) ([]string, error)
	Sweep(ctx context.Context, event string, max int) (expired, overdue int64, err error)
	EndTimedOut(ctx context.Context, event string) (int64, error)
	Outbox(ctx context.Context, event string, max int, before time.Time) ([]booking.Pending, error)
	Ack(ctx context.Context, event string, ids ...string) error
}

// Sweep runs over every defined event: expires overdue holds (the scripts do
// it lazily too; this keeps counters and session limits exact on a quiet
// event), drops the holds of room sessions that timed out (Engine.EndTimedOut), then publishes what the outbox holds from before now − Grace and
// acknowledges it. pub nil only expires. Errors are logged and counted.
func Sweep(ctx context.Context, eng Engine, pub booking.Publisher, now time.Time, log *slog.Logger) SweepSummary {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var sum SweepSummary
	fail := func(msg, event string, err error) {
		if ctx.Err() != nil {
			return
		}
		sum.Errors++
		log.LogAttrs(ctx, slog.LevelError, msg, append(metrics.RedisErrorAttrs(time.Now()),
			slog.String("event", event), slog.String("error", err.Error()))...)
	}
	ids, err := eng.Events(ctx)
	if err != nil {
		fail("booking sweep: list events", "", err)
		return sum
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return sum
		}
		n, _, err := eng.Sweep(ctx, id, sweepMax)
		if err != nil {
			fail("booking sweep", id, err)
			continue
		}
		sum.Events++
		sum.Expired += n
		ended, err := eng.EndTimedOut(ctx, id)
		if err != nil {
			fail("booking sweep: ended sessions", id, err)
		}
		sum.Ended += ended
		if pub == nil {
			continue
		}
		drainOutbox(ctx, eng, pub, id, now.Add(-Grace), fail, &sum)
	}
	return sum
}

// drainOutbox publishes what event id's outbox holds from before until and
// acknowledges it, outboxMax at a time, adding to sum; a failure is reported
// through fail and leaves the rest for the next sweep.
func drainOutbox(ctx context.Context, eng Engine, pub booking.Publisher, id string, until time.Time, fail func(msg, event string, err error), sum *SweepSummary) {
	for {
		p, err := eng.Outbox(ctx, id, outboxMax, until)
		if err != nil {
			fail("booking outbox", id, err)
			return
		}
		if len(p) == 0 {
			return
		}
		var evs []booking.OrderEvent
		var invs []booking.InventoryEvent
		acks := make([]string, len(p))
		for i, x := range p {
			acks[i] = x.ID
			if x.Inventory != nil {
				invs = append(invs, *x.Inventory)
			} else {
				evs = append(evs, x.Event)
			}
		}
		if err := publishAll(ctx, pub, evs, invs); err != nil {
			fail("booking outbox: publish", id, err)
			return
		}
		if err := eng.Ack(ctx, id, acks...); err != nil {
			fail("booking outbox: ack", id, err)
			return
		}
		sum.Published += len(evs)
		sum.Inventory += len(invs)
		if len(p) < outboxMax {
			return
		}
	}
}

// publishAll publishes order events, then inventory events when pub takes
// them (booking.InventoryPublisher); otherwise those are dropped.
func publishAll(ctx context.Context, pub booking.Publisher, evs []booking.OrderEvent, invs []booking.InventoryEvent) error {
	if len(evs) > 0 {
		if err := pub.Publish(ctx, evs); err != nil {
			return err
		}
	}
	if ip, ok := pub.(booking.InventoryPublisher); ok && len(invs) > 0 {
		return ip.PublishInventory(ctx, invs)
	}
	return nil
}

// Task is the booking tick for the admission loop (admission.Loop.Run's also):
// a Sweep at most every interval (5 s when interval ≤ 0), so a loop ticking
// rooms every second sweeps events less often. clock nil is time.Now.
func Task(eng Engine, pub booking.Publisher, interval time.Duration, clock func() time.Time, log *slog.Logger) func(context.Context) {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var last time.Time
	return func(ctx context.Context) {
		now := clock()
		if !last.IsZero() && now.Sub(last) < interval {
			return
		}
		last = now
		sum := Sweep(ctx, eng, pub, now, log)
		if sum.Expired > 0 || sum.Ended > 0 || sum.Published > 0 || sum.Inventory > 0 {
			log.LogAttrs(ctx, slog.LevelDebug, "booking sweep", slog.Int("events", sum.Events),
				slog.Int64("expired", sum.Expired), slog.Int64("ended", sum.Ended), slog.Int("published", sum.Published), slog.Int("inventory", sum.Inventory), slog.Int("errors", sum.Errors))
		}
	}
}
