// Package pollpolicy decides when a visitor polls next (pollAfterMs): the
// server, not the page, spends the crowd's requests where they matter.
package pollpolicy

import (
	"math"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// MinPollAfter is the shortest interval the server ever asks for: within the
// next tick's admissions, a visitor learns of the grant within about a second.
const MinPollAfter = time.Second

// MinInterval is the engine's floor between two polls of one visitor
// (room.WithMinPollInterval): half the shortest pollAfterMs, leaving room for
// jitter and timers; a page that polls faster gets 429 with Retry-After.
const MinInterval = MinPollAfter / 2

// HoldPollAfter is the longest interval while nobody is admitted (a paused or
// closed room, or no admission rate known): long enough to cost little, short
// enough that a visitor at the front sees the grant well within its claim
// window once admission resumes. A room with a grace (heartbeatTTLSeconds)
// under two minutes holds for a quarter of it (not under 2 s): the operator
// who keeps a short grace wants its visitors to hear sooner.
const HoldPollAfter = 30 * time.Second

// FinalWindow is how close to the expected admission tick a visitor may be
// before the policy aims the next poll just after that tick. Over 45 s the
// rate estimate of a steady crowd is good to a second or two, and a wait of
// under a minute then costs two requests (the join and the poll that sees the
// grant), three at most: measured, the one-minute crowd spends 2.9 requests a
// visitor-minute at 45 s against 3.4 at 12 s, the grant seen within 2.2 s at
// p99 (docs/BENCHMARKS.md). A far poll aims to land 5–10 s (spread by the
// jitter) before the admission, inside it.
const FinalWindow = 45 * time.Second

// AfterTick is how long after the expected admission tick the final poll
// lands, so the grant is there when it arrives.
const AfterTick = 250 * time.Millisecond

// Margin is the share of the ETA a far poll leaves in hand: the queue can move
// faster than the measured rate (visitors ahead who left are skipped without
// using a token), so a poll aimed at ETA·(1−Margin) still lands before the
// admission.
const Margin = 0.15

// Input is what the poll interval depends on.
type Input struct {
	State         room.State
	Position      int64         // 1-based place in the queue
	RatePerMinute float64       // admissions per minute used for the ETA
	PollWithin    time.Duration // the engine's budget (room.Place.PollWithin); ≤ 0: room.MaxPollAfter
	Grace         time.Duration // the room's heartbeatTTLSeconds; ≤ 0: the default (HoldPollAfter holds)
	TickInterval  time.Duration // how often admission runs
	UntilOpen     time.Duration // pre-queue: time left before the room opens (Position: the place at the opening, 0 if unknown)
	Jitter        float64       // factor in [0.9, 1.1]; spreads a crowd's polls apart
}

// After decides how long the page waits before its next poll, planning the
// descent to the front from the ETA (docs/ENGINE.md, "Polling"):
//
//   - within the next tick's admissions: every second (MinPollAfter);
//   - admission expected within FinalWindow: just after the tick expected to
//     admit the visitor (ETA in whole ticks + AfterTick), so one poll usually sees
//     the grant;
//   - farther: 5–10 s before the ETA (spread by the jitter), so the next poll
//     lands in the final window, but no later than ETA·(1−Margin·(1–1.2)): far
//     back the descent is geometric, a sixth or so of the way left each time;
//   - never later than the engine's budget (PollWithin, at most
//     room.MaxPollAfter): the engine holds the place that long plus the grace.
//
// A one-minute wait then costs about three requests (enqueue, one poll into
// the final window, one that sees the grant) and a 20-minute wait about eight.
// Pre-queue: when the opening is near, the descent planned from it as for a
// visitor waiting at their place at the opening (the front just after the
// first tick, the rest along their ETAs, within the budget), or just after it
// (spread over 2 s) when the place is not known; twice the hold interval when
// the opening is farther (an opening moved earlier is heard within a minute). Paused, closed, or no rate: the hold interval
// (HoldPollAfter, or a quarter of a shorter grace). Zero means "do not poll
// again".
func After(in Input) time.Duration {
	budget := in.PollWithin
	if budget <= 0 {
		budget = room.MaxPollAfter
	}
	jitter := in.Jitter
	if jitter < 0.9 || jitter > 1.1 || math.IsNaN(jitter) {
		jitter = 1
	}
	x := (jitter - 0.9) / 0.2 // in [0, 1]
	var d time.Duration
	switch in.State {
	case room.StateAdmitted, room.StateExpired:
		return 0
	case room.StatePaused, room.StateClosed:
		d = scale(hold(in), jitter)
	case room.StatePrequeue:
		if far := min(budget, 2*hold(in)); in.UntilOpen >= far {
			d = scale(far, 0.9+x/10)
		} else if in.Position > 0 {
			// The descent from the opening, planned as for a visitor waiting at
			// that place: the front just after the first tick, the rest spread
			// along their ETAs (a million pre-queued do not all come at once).
			d = max(in.UntilOpen, 0) + waiting(in, x)
			if d > budget {
				// Those whose turn is farther than the budget: anywhere in its
				// second half, so they do not all come back at once either.
				d = scale(budget, 0.5+x/2)
			}
		} else {
			// The place is not known: just after the opening, spread over 2 s.
			d = max(in.UntilOpen, 0) + scale(2*time.Second, x)
		}
	default: // waiting
		d = waiting(in, x)
	}
	return max(min(d, budget), MinPollAfter).Truncate(time.Millisecond)
}

// waiting is After for a waiting visitor; x in [0, 1] spreads a crowd's polls.
func waiting(in Input, x float64) time.Duration {
	if in.RatePerMinute <= 0 {
		return hold(in) // no admissions measured or configured: nothing to hurry for
	}
	tick := in.TickInterval
	if tick <= 0 {
		tick = time.Second
	}
	perTick := in.RatePerMinute * tick.Seconds() / 60
	ticks := math.Ceil(float64(max(in.Position, 1)) / perTick)
	if ticks <= 1 {
		return MinPollAfter
	}
	// The tick expected to admit the visitor is at most this far away.
	eta := time.Duration(ticks * float64(tick))
	if eta <= FinalWindow {
		return eta + AfterTick
	}
	// Land 5–10 s before the admission, or Margin (up to 1.2 times) of the ETA
	// before it when that is more.
	land := max(scale(5*time.Second, 1+x), scale(eta, Margin*(1+x/5)))
	return eta - land
}

// hold is the interval while nobody is admitted: HoldPollAfter, or a quarter
// of a shorter grace, not under 2 s.
func hold(in Input) time.Duration {
	if in.Grace <= 0 {
		return HoldPollAfter
	}
	return min(HoldPollAfter, max(in.Grace/4, 2*MinPollAfter))
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// ETASeconds is position / rate, rounded up; nil when no rate is known.
func ETASeconds(position int64, ratePerMinute float64) *int64 {
	if ratePerMinute <= 0 {
		return nil
	}
	s := int64(math.Ceil(float64(position) * 60 / ratePerMinute))
	return &s
}
