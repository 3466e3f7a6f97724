// Package pollpolicy decides when a visitor polls next (pollAfterMs): the
// server, not the page, spends the crowd's requests where they matter.
package pollpolicy

import (
	"math"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// MinPollAfter is the shortest interval the server ever asks for: near the
// front, a visitor learns of the grant within about a second.
const MinPollAfter = time.Second

// MinInterval is the engine's floor between two polls of one visitor
// (room.WithMinPollInterval): half the shortest pollAfterMs, leaving room for
// jitter and timers; a page that polls faster gets 429 with Retry-After.
const MinInterval = MinPollAfter / 2

// Input is what the poll interval depends on.
type Input struct {
	State         room.State
	Position      int64         // 1-based place in the queue
	RatePerMinute float64       // admissions per minute used for the ETA
	HeartbeatTTL  time.Duration // a waiting visitor silent this long is evicted
	TickInterval  time.Duration // how often admission runs
	UntilOpen     time.Duration // pre-queue: time left before the room opens
	Jitter        float64       // factor in [0.9, 1.1]; spreads a crowd's polls apart
}

// After decides how long the page waits before its next poll: three
// quarters of the estimated wait, so each poll lands before the visitor's turn
// and the next one a quarter of the way from it, but not under two seconds;
// every second once within one tick's admissions of the front; and never longer
// than half of heartbeatTTL, so one late poll does not evict.
// A visitor then polls about once per half heartbeat far back and a handful of
// times near the front: requests per visitor-minute fall as the wait grows
// (measured in docs/BENCHMARKS.md). Zero means "do not poll again".
func After(in Input) time.Duration {
	hb := in.HeartbeatTTL
	if hb <= 0 {
		hb = time.Minute
	}
	maxWait := max(hb/2, MinPollAfter)
	jitter := in.Jitter
	if jitter < 0.9 || jitter > 1.1 || math.IsNaN(jitter) {
		jitter = 1
	}
	var d time.Duration
	switch in.State {
	case room.StateAdmitted, room.StateExpired:
		return 0
	case room.StatePaused, room.StateClosed:
		d = maxWait
	case room.StatePrequeue:
		d = min(max(in.UntilOpen, MinPollAfter), maxWait)
	default: // waiting
		tick := in.TickInterval
		if tick <= 0 {
			tick = time.Second
		}
		perTick := in.RatePerMinute * tick.Seconds() / 60
		if in.RatePerMinute <= 0 {
			d = maxWait // no admissions measured or configured: nothing to hurry for
		} else if float64(in.Position) <= max(perTick, 1) {
			d = MinPollAfter
		} else {
			eta := time.Duration(float64(in.Position) / in.RatePerMinute * float64(time.Minute))
			d = min(max(eta*3/4, 2*MinPollAfter), maxWait)
		}
	}
	d = time.Duration(float64(d) * jitter)
	// Jitter never pushes past the heartbeat cap.
	return min(d, maxWait).Round(time.Millisecond)
}

// ETASeconds is position / rate, rounded up; nil when no rate is known.
func ETASeconds(position int64, ratePerMinute float64) *int64 {
	if ratePerMinute <= 0 {
		return nil
	}
	s := int64(math.Ceil(float64(position) * 60 / ratePerMinute))
	return &s
}
