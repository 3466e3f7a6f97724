package sim

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// The eviction of a visitor who closed the tab (docs/ENGINE.md, "Heartbeats
// are deadlines"): the engine holds a silent place for the budget it gave at
// the last answer (rounded up to its class), then the grace; from then (or
// from the opening, before which no tick sweeps) the next sweep that reaches
// it evicts it, a pass of the queue taking its places ÷ what a tick sweeps
// (roomdb.EvictBatch less what the tick may admit) ticks. The pass is over
// the queue as it is then, not as the visitor last saw it: a crowd that
// arrived behind the visitor lengthens it, and so do the arrivals during the
// pass. The simulator checks it from outside, as it checks every other
// promise: while a driver can say whether the queue still holds a sequence
// and how many it holds (Virtual), every visitor who closed the tab while
// waiting is looked for every ProbeEvery from the poll it was told, until it
// is gone or its bound has passed.

// ProbeEvery is how often the closed tabs are looked for: the eviction
// measured is late by up to this much.
const ProbeEvery = 5 * time.Second

// queueProber is a driver that can say whether the room's queue holds a
// sequence, how many it holds and how much a tick sweeps, without touching
// it (Virtual).
type queueProber interface {
	Queued(ctx context.Context, roomID string, seqs []int64) ([]bool, error)
	QueueLen(ctx context.Context, roomID string) (int64, error)
	EvictBatch() int
	TickInterval() time.Duration
}

// Queued reports whether the room's queue holds each sequence (roomdb.Engine.Queued).
func (v *Virtual) Queued(ctx context.Context, roomID string, seqs []int64) ([]bool, error) {
	return v.Engine.Queued(ctx, roomID, seqs)
}

// silentFor is how long after its last answer (a place that was waiting at
// position pos, at pace a minute) the engine holds a silent visitor's place
// before a sweep may evict it: the budget the answer gave (room.PollBudget of
// the ETA; room.MaxPollAfter without a pace, or not waiting), rounded up to
// its class, and the grace.
func silentFor(state string, pos int64, pace float64, grace time.Duration) time.Duration {
	budget := room.MaxPollAfter
	if state == "waiting" && pace > 0 {
		budget = room.PollBudget(time.Duration(math.Floor(float64(pos)*60000/pace)) * time.Millisecond)
	}
	return time.Duration(room.ToldMS(room.ToldClass(budget.Milliseconds())))*time.Millisecond + grace
}

// SweepTicks is how many ticks a pass of the sweep over places takes at
// most: a tick sweeps batch places less those it admits, at most its bucket
// (two seconds of admitPerMinute, at least one; lua/tick.lua).
func SweepTicks(places int64, batch int, admitPerMinute int64) int64 {
	reach := int64(batch) - max(1, (2*admitPerMinute+59)/60)
	if reach < 1 {
		reach = 1
	}
	return (max(places, 0) + reach - 1) / reach
}

// Evictions is what the probes saw of the visitors who closed the tab while
// waiting.
type Evictions struct {
	Closed   int // closed the tab while waiting
	Observed int // found evicted (or still queued past the bound) before the run ended
	// Late: still queued when the bound had passed.
	Late int
	// Worst is the largest (last probe that found the place held − last
	// answer) ÷ the visitor's bound then: how near its bound an eviction
	// came.
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
		if v.Behavior != CloseTab || v.Outcome != Abandoned || v.silent == 0 {
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
			if !v.heldAt.IsZero() && v.bound > 0 {
				ev.Worst = max(ev.Worst, float64(v.heldAt.Sub(v.LastAnswer))/float64(v.bound))
			}
		}
	}
	return ev
}

// queueCount is the room's queue after a tick, and the visitors who had
// arrived by then.
type queueCount struct {
	at      time.Time
	waiting int64
	arrived int
}

// prober looks for the closed tabs of a run.
type prober struct {
	q       queueProber
	room    string
	rate    int64     // the room's admitPerMinute: a tick admits at most two seconds of it
	opens   time.Time // no tick sweeps before the opening (zero: open)
	next    time.Time
	pending []*Visitor
	counts  []queueCount // after each tick
	arrived int          // the visitors arrived so far
}

func newProber(d Driver, c Config, start time.Time) *prober {
	q, ok := d.(queueProber)
	if !ok {
		return nil
	}
	p := &prober{q: q, room: c.Room, rate: c.RoomConfig.AdmitPerMinute, next: start}
	for _, ch := range c.Changes {
		var set struct{ AdmitPerMinute int64 }
		if json.Unmarshal([]byte(ch.Body), &set) == nil {
			p.rate = max(p.rate, set.AdmitPerMinute)
		}
	}
	if c.RoomConfig.OpensAt != nil {
		p.opens = *c.RoomConfig.OpensAt
	}
	return p
}

// ticked records the queue after the tick at now, arrived visitors having
// arrived so far.
func (p *prober) ticked(ctx context.Context, now time.Time, arrived int) error {
	if p == nil {
		return nil
	}
	n, err := p.q.QueueLen(ctx, p.room)
	if err != nil {
		return err
	}
	p.counts = append(p.counts, queueCount{at: now, waiting: n, arrived: arrived})
	p.arrived = arrived
	return nil
}

// closed takes a visitor who just finished: one who closed the tab while
// waiting is looked for from now on.
func (p *prober) closed(v *Visitor) {
	if p == nil || v.Behavior != CloseTab || v.Outcome != Abandoned || v.silent == 0 {
		return
	}
	p.pending = append(p.pending, v)
}

// boundOf is how long after its last answer v may be held, as far as the
// run has come (now): its silence, then a pass of the sweep over the queue
// as it was when the silence ended (or at the opening), and over every
// visitor who arrived since (a pass is longer by what joins ahead of the
// cursor). Zero until the silence ends.
func (p *prober) boundOf(v *Visitor) time.Duration {
	stale := v.LastAnswer.Add(v.silent)
	if stale.Before(p.opens) {
		stale = p.opens
	}
	i := sort.Search(len(p.counts), func(i int) bool { return p.counts[i].at.After(stale) })
	if i == 0 {
		return 0 // no tick at or before it: the silence has not ended yet
	}
	c := p.counts[i-1]
	places := c.waiting + int64(p.arrived-c.arrived)
	pass := time.Duration(SweepTicks(places, p.q.EvictBatch(), p.rate)) * p.q.TickInterval()
	return stale.Add(pass).Sub(v.LastAnswer)
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
		if !held[i] {
			v.EvictedAt = now
			gone[v] = true
			continue
		}
		if b := p.boundOf(v); b > 0 {
			v.bound = b
			if now.Sub(v.LastAnswer) > b {
				v.evictLate = true
				gone[v] = true
				continue
			}
		}
		v.heldAt = now
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
