package sim

import (
	"time"

	"github.com/vestibule-dev/vestibule/internal/cadence"
)

// MarkShares are, for each visitor waiting at mark k and seen granted later,
// how long after the mark the page first showed the change, as a share of
// the rule's bound for the wait that remained (cadence.ShownWithin of mark → grant
// seen, less stopped: the time the room stood still after the mark, such as
// a pause's length); baseline is the same share for the visitor's next API
// answer after the mark (a page without the watch). A share of 1 or less
// keeps the rule.
func (r *Result) MarkShares(k int, stopped time.Duration) (shares, baseline []float64) {
	at := r.Marks[k].At
	for _, v := range r.Visitors {
		if !WaitingAt(v, at) || len(v.Marks) <= k || v.SeenAt.IsZero() {
			continue
		}
		m := v.Marks[k]
		if m.ShownAt.IsZero() {
			continue
		}
		bound := cadence.ShownWithin(v.SeenAt.Sub(at) - stopped).Seconds()
		shares = append(shares, m.ShownAt.Sub(at).Seconds()/bound)
		if !m.PollAt.IsZero() {
			baseline = append(baseline, m.PollAt.Sub(at).Seconds()/bound)
		}
	}
	return shares, baseline
}

// StatusReadsPerMinute is the crowd's status reads per minute waited: every
// waiting visitor's reads ÷ every waiting visitor's minutes, enqueue to the
// end of the wait.
func (r *Result) StatusReadsPerMinute() float64 {
	var reads, minutes float64
	for _, v := range r.Visitors {
		if !v.EnqueuedAt.IsZero() && !v.EndWaitAt.IsZero() {
			reads += float64(v.StatusReads)
			minutes += v.EndWaitAt.Sub(v.EnqueuedAt).Minutes()
		}
	}
	if minutes == 0 {
		return 0
	}
	return reads / minutes
}
