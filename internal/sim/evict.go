package sim

import (
	"context"
	"math"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The eviction of a visitor who closed the tab (docs/ENGINE.md, "Heartbeats
// are deadlines"): the engine holds a silent place for the budget it gave at
// the last answer (rounded up to its class), then the grace, and the next
// sweep that reaches it evicts it, a pass of the queue taking waiting ÷
// roomdb.EvictBatch ticks. The simulator checks it from outside, as it checks
// every other promise: while a driver can say whether the queue still holds a
// sequence (Virtual), every visitor who closed the tab while waiting is looked
// for every ProbeEvery from the poll it was told, until it is gone or its
// bound has passed.

// ProbeEvery is how often the closed tabs are looked for: the eviction
// measured is late by up to this much.
const ProbeEvery = 5 * time.Second

// queueProber is a driver that can say whether the room's queue holds a
// sequence without touching it (Virtual).
type queueProber interface {
	Queued(ctx context.Context, roomID string, seqs []int64) ([]bool, error)
}

// Queued reports whether the room's queue holds each sequence (roomdb.Engine.Queued).
func (v *Virtual) Queued(ctx context.Context, roomID string, seqs []int64) ([]bool, error) {
	return v.Engine.Queued(ctx, roomID, seqs)
}

// evictionBound is how long after its last answer (a place that was waiting
// at position pos of waiting, at pace a minute) the engine may hold a silent
// visitor's place: the budget the answer gave (room.PollBudget of the ETA;
// room.MaxPollAfter without a pace, or not waiting), rounded up to its class,
// the grace, and a pass of the sweep (ticks a second apart).
func evictionBound(state string, pos, waiting int64, pace float64, grace time.Duration) time.Duration {
	budget := room.MaxPollAfter
	if state == "waiting" && pace > 0 {
		budget = room.PollBudget(time.Duration(math.Floor(float64(pos)*60000/pace)) * time.Millisecond)
	}
	told := time.Duration(room.ToldMS(room.ToldClass(budget.Milliseconds()))) * time.Millisecond
	sweep := time.Duration((waiting+roomdb.EvictBatch-1)/roomdb.EvictBatch) * time.Second
	return told + grace + sweep
}

// Evictions is what the probes saw of the visitors who closed the tab while
// waiting.
type Evictions struct {
	Closed   int // closed the tab while waiting
	Observed int // found evicted (or still queued past the bound) before the run ended
	// Late: still queued when the bound had passed.
	Late int
	// Worst is the largest (last probe that found the place held − last
	// answer) ÷ the visitor's bound: how near its bound an eviction came.
	Worst float64
	// MaxDelay is the largest eviction − last answer, the eviction as the
	// first probe that found the place gone (up to ProbeEvery late).
	MaxDelay time.Duration
}

// Evictions sums up the probes of the closed tabs (zero when the driver
// could not probe).
func (r *Result) Evictions() Evictions {
	var ev Evictions
	for _, v := range r.Visitors {
		if v.Behavior != CloseTab || v.Outcome != Abandoned || v.bound == 0 {
			continue
		}
		ev.Closed++
		switch {
		case v.evictLate:
			ev.Observed++
			ev.Late++
		case !v.EvictedAt.IsZero():
			ev.Observed++
			ev.MaxDelay = max(ev.MaxDelay, v.EvictedAt.Sub(v.LastAnswer))
			if !v.heldAt.IsZero() {
				ev.Worst = max(ev.Worst, float64(v.heldAt.Sub(v.LastAnswer))/float64(v.bound))
			}
		}
	}
	return ev
}

// prober looks for the closed tabs of a run.
type prober struct {
	q       queueProber
	room    string
	next    time.Time
	pending []*Visitor
}

func newProber(d Driver, roomID string, start time.Time) *prober {
	q, ok := d.(queueProber)
	if !ok {
		return nil
	}
	return &prober{q: q, room: roomID, next: start}
}

// closed takes a visitor who just finished: one who closed the tab while
// waiting is looked for from now on.
func (p *prober) closed(v *Visitor) {
	if p == nil || v.Behavior != CloseTab || v.Outcome != Abandoned || v.bound == 0 {
		return
	}
	p.pending = append(p.pending, v)
}

// probe looks, every ProbeEvery, for the pending visitors whose told poll has
// passed.
func (p *prober) probe(ctx context.Context, now time.Time) error {
	if p == nil || now.Before(p.next) || len(p.pending) == 0 {
		return nil
	}
	p.next = now.Add(ProbeEvery)
	var due []*Visitor
	var seqs []int64
	for _, v := range p.pending {
		if !now.Before(v.pollAt) {
			due = append(due, v)
			seqs = append(seqs, v.Seq)
		}
	}
	if len(due) == 0 {
		return nil
	}
	held, err := p.q.Queued(ctx, p.room, seqs)
	if err != nil {
		return err
	}
	gone := map[*Visitor]bool{}
	for i, v := range due {
		switch {
		case !held[i]:
			v.EvictedAt = now
		case now.Sub(v.LastAnswer) > v.bound:
			v.evictLate = true

		default:
			v.heldAt = now
			continue
		}
		gone[v] = true
	}
	kept := p.pending[:0]
	for _, v := range p.pending {
		if !gone[v] {
			kept = append(kept, v)
		}
	}
	p.pending = kept
	return nil
}
