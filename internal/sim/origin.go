package sim

import (
	"container/heap"
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/queueapi"
)

// Origin is a simulated booking site behind the room (Config.Origin): every
// visitor who lands (the first consume of the entry token) brings it one
// booking's work, which its Workers serve first come, first served, each
// booking taking Workers × 60 s ÷ Capacity of one worker. So it takes
// Capacity bookings a minute at most, and a booking's latency is its service
// time plus its wait for a free worker.
//
// Why a queue of workers rather than a formula such as service ÷ (1 − ρ): a
// formula has no memory. It gives the steady state of the utilisation of the
// moment, so the backlog an overload built would vanish the instant the
// arrivals fell under the capacity; the workers' queue carries that backlog
// until it is served, which is what the visitors behind it wait for. The
// service time is fixed, so the latency is the service alone until the
// arrivals pass the capacity, then grows with the backlog without bound
// while they stay above it.
//
// On each consume and complete it reports its utilisation in the
// Vestibule-Load header (queueapi.LoadHeader): the bookings that arrived in
// the last Window over what it takes in that time, at most 1. Changes set
// its capacity at instants of the run (a slowdown, a recovery).
//
// An Origin serves one run; it is safe for the run's parallel visitors.
type Origin struct {
	Workers  int           // bookings served at once (default 16)
	Capacity float64       // bookings a minute it takes at most, until the first change
	Window   time.Duration // the span its utilisation is measured over (default 10 s)
	Changes  []OriginChange
	// Silent sends no header: the room learns nothing of the origin.
	Silent bool

	mu    sync.Mutex
	start time.Time
	free  timeHeap // when each worker is next free
	lo    int      // the first job inside the window
	jobs  []OriginJob
	etas  map[int][]ToldETA
}

// OriginChange sets the origin's capacity (bookings a minute) At into the run.
type OriginChange struct {
	At       time.Duration
	Capacity float64
}

// OriginJob is one booking the origin served: when it arrived and how long
// it took, wait for a worker included.
type OriginJob struct {
	At      time.Time
	Latency time.Duration
}

// ToldETA is an ETA (seconds) a waiting visitor was told at At, from place
// Pos (so the pace told is Pos × 60 ÷ ETA).
type ToldETA struct {
	At  time.Time
	ETA float64
	Pos float64
}

// begin readies the origin for a run starting at start.
func (o *Origin) begin(start time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	o.start, o.lo, o.jobs, o.etas = start, 0, nil, map[int][]ToldETA{}
	o.free = make(timeHeap, o.Workers)
	for i := range o.free {
		o.free[i] = start
	}
}

// CapacityAt is the origin's capacity (bookings a minute) at t.
func (o *Origin) CapacityAt(t time.Time) float64 {
	c := o.Capacity
	for _, ch := range o.Changes {
		if !o.start.Add(ch.At).After(t) {
			c = ch.Capacity
		}
	}
	return c
}

// ServiceAt is how long one booking keeps a worker at t.
func (o *Origin) ServiceAt(t time.Time) time.Duration {
	return time.Duration(float64(o.Workers) * 60 / o.CapacityAt(t) * float64(time.Second))
}

// request is a consume (booking true: a visitor lands) or a complete at now:
// it queues the booking and returns ctx carrying the load header.
func (o *Origin) request(ctx context.Context, now time.Time, booking bool) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	if booking {
		begin := now
		if o.free[0].After(now) {
			begin = o.free[0]
		}
		end := begin.Add(o.ServiceAt(now))
		o.free[0] = end
		heap.Fix(&o.free, 0)
		o.jobs = append(o.jobs, OriginJob{At: now, Latency: end.Sub(now)})
	}
	if o.Silent {
		return ctx
	}
	for o.lo < len(o.jobs) && !o.jobs[o.lo].At.After(now.Add(-o.Window)) {
		o.lo++
	}
	perMinute := float64(len(o.jobs)-o.lo) * 60 / o.Window.Seconds()
	load := min(1, perMinute/o.CapacityAt(now))
	return WithHeaders(ctx, map[string]string{queueapi.LoadHeader: strconv.FormatFloat(load, 'f', 3, 64)})
}

// told records an ETA told to visitor id.
func (o *Origin) told(id int, at time.Time, eta, pos float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.etas[id] = append(o.etas[id], ToldETA{At: at, ETA: eta, Pos: pos})
}

// Jobs are the bookings the origin served, in order of arrival.
func (o *Origin) Jobs() []OriginJob { return o.jobs }

// LatencyQuantile is the p-quantile of the latency of the bookings that
// arrived in [from, to); 0 when none did.
func (o *Origin) LatencyQuantile(from, to time.Time, p float64) time.Duration {
	var ds []time.Duration
	for _, j := range o.jobs {
		if !j.At.Before(from) && j.At.Before(to) {
			ds = append(ds, j.Latency)
		}
	}
	return percentile(ds, p)
}

// ETARatios are, for every ETA told in [from, to) to a visitor later seen
// granted, with at least minWait from the telling to the grant seen, the
// ETA ÷ that wait; a visitor's worst ratio (the farthest from 1, by its
// logarithm) is in worst. Shorter waits are left out: near the front the
// wait is a tick or two and the ratio of seconds says nothing.
func (o *Origin) ETARatios(vs []*Visitor, from, to time.Time, minWait time.Duration) (all, worst []float64) {
	return o.etaRatios(vs, from, to, time.Time{}, minWait)
}

// ETARatiosWithin are ETARatios of the visitors also seen granted before to:
// the waits that lie wholly in [from, to), which no change of the site's
// capacity outside it shortened or lengthened.
func (o *Origin) ETARatiosWithin(vs []*Visitor, from, to time.Time, minWait time.Duration) (all, worst []float64) {
	return o.etaRatios(vs, from, to, to, minWait)
}

// Telling is one ETA told to a visitor and the wait that followed it.
type Telling struct {
	Visitor int
	ToldETA
	Wait time.Duration // from the telling to the grant seen
}

// Ratio is the ETA ÷ the wait.
func (t Telling) Ratio() float64 { return t.ETA / t.Wait.Seconds() }

// TellingsWithin are the tellings of ETARatiosWithin, one by one, for a
// look at which lie outside the band.
func (o *Origin) TellingsWithin(vs []*Visitor, from, to time.Time, minWait time.Duration) []Telling {
	var ts []Telling
	o.eachTelling(vs, from, to, to, minWait, func(t Telling) { ts = append(ts, t) })
	return ts
}

func (o *Origin) eachTelling(vs []*Visitor, from, to, seenBefore time.Time, minWait time.Duration, f func(Telling)) {
	for _, v := range vs {
		if v.SeenAt.IsZero() || (!seenBefore.IsZero() && !v.SeenAt.Before(seenBefore)) {
			continue
		}
		for _, e := range o.etas[v.ID] {
			wait := v.SeenAt.Sub(e.At)
			if e.At.Before(from) || !e.At.Before(to) || wait < minWait {
				continue
			}
			f(Telling{Visitor: v.ID, ToldETA: e, Wait: wait})
		}
	}
}

func (o *Origin) etaRatios(vs []*Visitor, from, to, seenBefore time.Time, minWait time.Duration) (all, worst []float64) {
	last := -1
	o.eachTelling(vs, from, to, seenBefore, minWait, func(t Telling) {
		r := t.Ratio()
		all = append(all, r)
		// A visitor's tellings come together: a new visitor opens a new worst.
		if t.Visitor != last {
			worst, last = append(worst, r), t.Visitor
		} else if w := worst[len(worst)-1]; math.Abs(math.Log(r)) > math.Abs(math.Log(w)) {
			worst[len(worst)-1] = r
		}
	})
	return all, worst
}

// OutsideBand counts the ratios outside [lo, hi] and returns the one
// farthest from 1 (by its logarithm; 1 when there is none).
func OutsideBand(ratios []float64, lo, hi float64) (n int, farthest float64) {
	farthest = 1
	for _, r := range ratios {
		if r < lo || r > hi {
			n++
		}
		if r > 0 && math.Abs(math.Log(r)) > math.Abs(math.Log(farthest)) {
			farthest = r
		}
	}
	return n, farthest
}

// PaceFirst is the first sample of res at or after from whose pace
// satisfies ok; false when none does.
func PaceFirst(res *Result, from time.Duration, ok func(pace float64) bool) (time.Duration, bool) {
	for _, s := range res.Samples {
		if s.At >= from && ok(s.Pace) {
			return s.At, true
		}
	}
	return 0, false
}

// PaceMax is the highest pace sampled in [from, to).
func PaceMax(res *Result, from, to time.Duration) float64 {
	m := 0.0
	for _, s := range res.Samples {
		if s.At >= from && s.At < to {
			m = max(m, s.Pace)
		}
	}
	return m
}

// originCtx is ctx with the origin's load header for a consume (booking) or
// a complete at now; ctx itself when the run has no origin.
func (e *env) originCtx(ctx context.Context, now time.Time, booking bool) context.Context {
	if e.site == nil {
		return ctx
	}
	return e.site.request(ctx, now, booking)
}

// timeHeap is a min-heap of instants.
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
