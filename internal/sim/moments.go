package sim

import (
	"math"
	"slices"
	"sort"
	"time"
)

// The moments: what a visitor's page shows at the instants that matter (a
// join, a change of the settings, the opening), measured from a run's visitors
// (docs/BENCHMARKS.md, "Moments").

// Quantile is the p-quantile (nearest rank) of xs; 0 when empty. It sorts xs.
func Quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// QuantileDuration is Quantile of durations.
func QuantileDuration(ds []time.Duration, p float64) time.Duration { return percentile(ds, p) }

// rateEstimator is the estimate the server told before the pace: the
// admissions of the last 60 s, scaled up to a minute while the room had been
// admitting for less (since its first admission), or the configured rate
// when nothing was admitted in that minute.
type rateEstimator struct {
	at         []time.Time
	cum        []int64 // admissions up to and including at[i]
	configured float64
}

func (r *Result) estimator() *rateEstimator {
	est := &rateEstimator{configured: float64(r.Config.RoomConfig.AdmitPerMinute)}
	var n int64
	for _, a := range r.Admissions {
		n += a.N
		est.at, est.cum = append(est.at, a.At), append(est.cum, n)
	}
	return est
}

// upTo is the admissions at or before t.
func (e *rateEstimator) upTo(t time.Time) int64 {
	i := sort.Search(len(e.at), func(i int) bool { return e.at[i].After(t) })
	if i == 0 {
		return 0
	}
	return e.cum[i-1]
}

// rate is the measured admissions a minute at t.
func (e *rateEstimator) rate(t time.Time) float64 {
	n := e.upTo(t) - e.upTo(t.Add(-time.Minute))
	if n <= 0 || len(e.at) == 0 {
		return e.configured
	}
	window := min(time.Minute, max(t.Sub(e.at[0]), time.Second))
	return float64(n) * 60 / window.Seconds()
}

// MeasuredRate is the old estimator's rate at t (admissions a minute).
func (r *Result) MeasuredRate(t time.Time) float64 { return r.estimator().rate(t) }

// JoinETARatios are, for each visitor told an ETA at the join and then seen
// granted, that ETA ÷ the wait (enqueue → grant seen); baseline is the same
// ratio for the ETA the measured-rate estimator would have told at the join
// (position × 60 ÷ the admissions of the last minute).
func (r *Result) JoinETARatios() (ratios, baseline []float64) {
	est := r.estimator()
	for _, v := range r.Visitors {
		if v.JoinETA < 0 || v.SeenAt.IsZero() || v.EnqueuedAt.IsZero() {
			continue
		}
		wait := v.SeenAt.Sub(v.EnqueuedAt).Seconds()
		if wait <= 0 {
			continue
		}
		ratios = append(ratios, v.JoinETA/wait)
		if rate := est.rate(v.EnqueuedAt); rate > 0 {
			baseline = append(baseline, math.Ceil(float64(v.JoinPos)*60/rate)/wait)
		}
	}
	return ratios, baseline
}

// WaitingAt reports whether v was waiting at t: joined before, not yet
// granted (nor walked away, nor gone otherwise).
func WaitingAt(v *Visitor, t time.Time) bool {
	if v.EnqueuedAt.IsZero() || v.EnqueuedAt.After(t) {
		return false
	}
	if !v.GrantAt.IsZero() && !v.GrantAt.After(t) {
		return false
	}
	return v.EndWaitAt.IsZero() || v.EndWaitAt.After(t)
}

// MarkETARatios are, for each visitor waiting at mark k and seen granted
// later, the first ETA told after the mark ÷ the wait that followed (that
// instant → grant seen); baseline is the same ratio for the measured-rate
// estimator's ETA at the same instant, from the same place.
func (r *Result) MarkETARatios(k int) (ratios, baseline []float64) {
	est := r.estimator()
	at := r.Marks[k].At
	for _, v := range r.Visitors {
		if !WaitingAt(v, at) || len(v.Marks) <= k || v.SeenAt.IsZero() {
			continue
		}
		m := v.Marks[k]
		if m.ETAAt.IsZero() {
			continue
		}
		wait := v.SeenAt.Sub(m.ETAAt).Seconds()
		if wait <= 0 {
			continue
		}
		ratios = append(ratios, m.ETA/wait)
		if rate := est.rate(m.ETAAt); rate > 0 {
			baseline = append(baseline, m.ETAPos*60/rate/wait)
		}
	}
	return ratios, baseline
}

// MarkDelays are, for each visitor waiting at mark k, how long after it the
// page first showed a change (shown; viaStatus counts those the watch showed)
// and how long after it the visitor's next API answer came (poll). Visitors
// whose page showed nothing (they walked away first) are left out of shown
// and counted in unseen.
func (r *Result) MarkDelays(k int) (shown, poll []time.Duration, viaStatus, unseen int) {
	at := r.Marks[k].At
	for _, v := range r.Visitors {
		if !WaitingAt(v, at) {
			continue
		}
		var m Mark
		if len(v.Marks) > k {
			m = v.Marks[k]
		}
		if m.ShownAt.IsZero() {
			unseen++
		} else {
			shown = append(shown, m.ShownAt.Sub(at))
			if m.ShownVia == ViaStatus {
				viaStatus++
			}
		}
		if !m.PollAt.IsZero() {
			poll = append(poll, m.PollAt.Sub(at))
		}
	}
	return shown, poll, viaStatus, unseen
}

// Granted is the grants the ticks issued in the run (Virtual only).
func (r *Result) Granted() int64 {
	var n int64
	for _, a := range r.Admissions {
		n += a.N
	}
	return n
}

// LostGrants counts the visitors told "expired" by a poll they made when
// told: a grant (or a place) that ran out before they saw it.
func (r *Result) LostGrants() int {
	n := 0
	for _, v := range r.Visitors {
		if v.Lost {
			n++
		}
	}
	return n
}

// SeenDelays are, for each visitor seen granted, join → grant seen.
func (r *Result) SeenDelays() []time.Duration {
	var ds []time.Duration
	for _, v := range r.Visitors {
		if !v.SeenAt.IsZero() && !v.EnqueuedAt.IsZero() {
			ds = append(ds, v.SeenAt.Sub(v.EnqueuedAt))
		}
	}
	return ds
}

// Span is the seconds of the run's log from its first arrival to the end of
// the last wait (the last grant seen, walk-away or expiry): the span its
// waiting requests fall in.
func (r *Result) Span() (from, to int) {
	first, last := r.End, r.Start
	for _, v := range r.Visitors {
		if v.Arrive.Before(first) {
			first = v.Arrive
		}
		if v.EndWaitAt.After(last) {
			last = v.EndWaitAt
		}
	}
	return r.Log.SecondOf(first), r.Log.SecondOf(last) + 1
}

// StatusLine is the least-squares line of a visitor's status reads against
// the wait (minutes), as Summary's line of requests: reads = a + b × minutes.
func (r *Result) StatusLine() (a, b float64) {
	var waits, reads []float64
	for _, v := range r.Visitors {
		if !v.EnqueuedAt.IsZero() && !v.EndWaitAt.IsZero() {
			waits = append(waits, v.EndWaitAt.Sub(v.EnqueuedAt).Minutes())
			reads = append(reads, float64(v.StatusReads))
		}
	}
	return fitLine(waits, reads)
}

// StatusBodyBytes is the mean body of the status answers fetched.
func (r *Result) StatusBodyBytes() float64 {
	if r.StatusFetches == 0 {
		return 0
	}
	return float64(r.StatusBytes) / float64(r.StatusFetches)
}
