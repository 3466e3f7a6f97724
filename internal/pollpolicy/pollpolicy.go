// Package pollpolicy decides when a visitor polls next (pollAfterMs): the
// server, not the page, spends the crowd's requests where they matter.
//
// Every interval it tells is a promise kept in every state of the room, not
// only in a steady crowd (docs/ENGINE.md, "Polling: what a told interval
// promises"): it is made from the pace the room will actually admit at (the
// engine's: admissions never above the configured rate, counted in places),
// it never lands after the grant's claim window could run out, and far back
// it is spread so that a crowd that joined together does not come back
// together.
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
// (roomdb.WithMinPollInterval): half the shortest pollAfterMs, leaving room for
// jitter and timers; a page that polls faster gets 429 with Retry-After.
const MinInterval = MinPollAfter / 2

// HoldPollAfter is what a visitor without a place is told (a closed room's
// answer to a join): try again then.
const HoldPollAfter = 30 * time.Second

// FinalWindow is how close to the expected admission tick a visitor may be
// before the policy aims the next poll just after that tick. Over 45 s the
// pace of a steady crowd is good to a second or two, and a wait of under a
// minute then costs two requests (the join and the poll that sees the grant),
// three at most: measured, the one-minute crowd spends under 3 requests a
// visitor-minute and sees its grant within 3 s at p99 (docs/BENCHMARKS.md,
// the rows "crowd 20000 at 10000/min"). A far poll aims to land 5–10 s (spread by the
// jitter) before the admission, inside it.
const FinalWindow = 45 * time.Second

// AfterTick is how long after the expected admission tick the final poll
// lands, so the grant is there when it arrives.
const AfterTick = 250 * time.Millisecond

// Margin is the share of the ETA a far poll leaves in hand: the queue can move
// faster than the pace says (visitors ahead who left are skipped without
// using a token), so a poll aimed at ETA·(1−Margin) still lands before the
// admission.
const Margin = 0.15

// FarSpread is how much of the engine's budget a far poll gives up to spread
// a crowd: a visitor whose turn is farther than the budget (at most
// room.FarPollAfter) is told anywhere in its last FarSpread, not all of it, so
// 100,000 visitors who joined in the same ten seconds come back over 90 s, not
// in one wave at 300 s. The same holds in the pre-queue and in a paused or
// closed room, where everyone's turn is beyond the budget.
const FarSpread = 0.3

// FrontSpeedMax is how much faster than the configured rate the front can
// move: the engine counts the share of the front skipped as stale (visitors
// ahead who left) at most double (tick.lua), and the claim-window bound below
// assumes the same.
const FrontSpeedMax = 2

// Input is what the poll interval depends on.
type Input struct {
	State    room.State
	Position int64 // 1-based place in the queue
	// RatePerMinute is the pace the ETA is made from (room.Place.RatePerMinute):
	// the places a minute the line moves for this visitor (admissions never
	// above the configured rate, over the share of the front not skipped).
	RatePerMinute float64
	// AdmitPerMinute is the configured rate: the fastest the room can admit,
	// which bounds every told poll by the claim window (≤ 0: RatePerMinute).
	AdmitPerMinute float64
	// ClaimTTL is the room's claim window (claimTTLSeconds): a grant not
	// consumed within it is gone, so no told poll may come later than the
	// earliest admission plus it (≤ 0: no bound).
	ClaimTTL   time.Duration
	PollWithin time.Duration // the engine's budget (room.Place.PollWithin); ≤ 0: room.MaxPollAfter
	// Join says the reply answers a fresh join: a crowd that joined in the
	// same seconds is told its first far poll anywhere in the mean far
	// interval (the budget less half of FarSpread), not in the budget's last
	// FarSpread, so it is in step only once; later far polls keep the phases
	// that gave them. It costs a far visitor at most one poll more, once.
	Join         bool
	TickInterval time.Duration // how often admission runs
	UntilOpen    time.Duration // pre-queue: time left before the room opens (Position: the place at the opening, 0 if unknown)
	Jitter       float64       // factor in [0.9, 1.1]; spreads a crowd's polls apart
}

// After decides how long the page waits before its next poll, planning the
// descent to the front from the ETA (docs/ENGINE.md, "Polling: what a told interval promises"):
//
//   - within the next tick's admissions: every second (MinPollAfter);
//   - admission expected within FinalWindow: just after the tick expected to
//     admit the visitor (ETA in whole ticks + AfterTick), so one poll usually sees
//     the grant;
//   - farther: 5–10 s before the ETA (spread by the jitter), so the next poll
//     lands in the final window, but no later than ETA·(1−Margin·(1–1.2)): far
//     back the descent is geometric, a sixth or so of the way left each time;
//   - beyond the engine's budget (PollWithin, at most room.FarPollAfter; the
//     engine holds the place that long plus the grace): within its last
//     FarSpread, spread by the jitter (the reply to a join: anywhere in the
//     mean far interval);
//   - never later than the claim window after the earliest the visitor could
//     be admitted (the position at FrontSpeedMax times the configured rate,
//     less one bucket), less claimSlack: whoever polls when told never finds
//     the grant expired, whatever the pace turns out to be.
//
// A one-minute wait then costs about three requests (enqueue, one poll into
// the final window, one that sees the grant) and a 20-minute wait about seven.
// Pre-queue: when the opening is within the budget, the descent planned from
// it as for a visitor waiting at their place at the opening (the front just
// after the first tick, the rest along their ETAs, those beyond the budget as
// any visitor beyond it), or, when the place is not known, spread over
// the claim window after the opening; farther from the opening, the budget,
// spread (a change of the opening reaches the page through the status route).
// Paused and closed: the budget, spread, within the claim-window bound (a
// resume reaches the page through the status route, which then polls by its
// place). Zero means "do not poll again".
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
	far := scale(budget, 1-FarSpread*x)
	if in.Join {
		// Anywhere in the mean far interval: the phases a stream of far
		// polls has once it has run a while (a renewal's residual), so the
		// joining crowd's first far polls come at the rate the rest keep.
		far = scale(budget, (1-FarSpread/2)*(1-x))
	}
	var d time.Duration
	switch in.State {
	case room.StateAdmitted, room.StateExpired:
		return 0
	case room.StatePaused, room.StateClosed:
		d = min(far, claimBound(in, in.Position))
	case room.StatePrequeue:
		until := max(in.UntilOpen, 0)
		switch {
		case until >= budget:
			d = far
		case in.Position > 0:
			// The descent from the opening, planned as for a visitor waiting at
			// that place: the front just after the first tick, the rest spread
			// along their ETAs (a million pre-queued do not all come at once).
			d = until + min(waiting(in, x), claimBound(in, in.Position))
			if d > budget {
				// Those whose turn is farther than the budget: as any visitor
				// beyond it. Their last polls were spread, so these are too
				// (aiming them all between now and the budget crowded the
				// seconds after the opening); one that lands before the
				// opening is planned again.
				d = far
			}
		default:
			// The place is not known: spread over what the claim window allows
			// after the opening (the visitor may be first).
			d = until + MinPollAfter + scale(min(claimBound(in, 1), budget)-MinPollAfter, x)
		}
	default: // waiting
		d = waiting(in, x)
		if d >= budget {
			d = far
		}
		d = min(d, claimBound(in, in.Position))
	}
	return max(min(d, budget), MinPollAfter).Truncate(time.Millisecond)
}

// waiting is After for a waiting visitor; x in [0, 1] spreads a crowd's polls.
func waiting(in Input, x float64) time.Duration {
	eta, ok := in.eta()
	if !ok {
		return room.MaxPollAfter // no pace: nothing to plan from; the budget and the claim bound cap it
	}
	if eta <= in.tick() {
		return MinPollAfter
	}
	if eta <= FinalWindow {
		return eta + AfterTick
	}
	// Land 5–10 s before the admission, or Margin (up to 1.2 times) of the ETA
	// before it when that is more.
	land := max(scale(5*time.Second, 1+x), scale(eta, Margin*(1+x/5)))
	return eta - land
}

func (in Input) tick() time.Duration {
	if in.TickInterval <= 0 {
		return time.Second
	}
	return in.TickInterval
}

// eta is the time to the tick expected to admit the visitor at the pace, in
// whole ticks.
func (in Input) eta() (time.Duration, bool) {
	if in.RatePerMinute <= 0 {
		return 0, false
	}
	tick := in.tick()
	perTick := in.RatePerMinute * tick.Seconds() / 60
	ticks := math.Ceil(float64(max(in.Position, 1)) / perTick)
	return time.Duration(ticks * float64(tick)), true
}

// claimBound is the latest a visitor at pos may poll and still find the
// grant: the earliest it could be admitted (the room at FrontSpeedMax times
// its configured rate, a full bucket of two seconds of rate at once) plus the
// claim window, less claimSlack. Without a claim window, no bound.
func claimBound(in Input, pos int64) time.Duration {
	if in.ClaimTTL <= 0 {
		return math.MaxInt64
	}
	rate := in.AdmitPerMinute
	if rate <= 0 {
		rate = in.RatePerMinute
	}
	var earliest time.Duration
	if rate > 0 {
		bucket := max(1, rate/30)
		earliest = time.Duration(max(0, float64(pos)-bucket) / (FrontSpeedMax * rate) * float64(time.Minute))
	}
	return max(earliest+in.ClaimTTL-claimSlack(in.ClaimTTL), MinPollAfter)
}

// claimSlack is what the claim-window bound keeps in hand for the tick that
// admits, the request's way and a late timer: a tenth of the window, between
// 2 and 10 s, never over half of it.
func claimSlack(claim time.Duration) time.Duration {
	return min(max(claim/10, 2*time.Second), 10*time.Second, claim/2)
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
