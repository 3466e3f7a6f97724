package room

import (
	"slices"
	"time"
)

// ReportMinute is one minute of a sale's report, derived from the history
// points (HistoryPoint) of that minute and the next.
type ReportMinute struct {
	Minute   time.Time `json:"minute"`
	Waiting  int64     `json:"waiting"`  // at the minute's first tick
	Admitted int64     `json:"admitted"` // grants not yet redeemed, then
	Active   int64     `json:"active"`   // sessions at the origin, then
	// AdmittedPerMinute: admitted during the minute; EvictedPerMinute: waiting
	// visitors evicted during it (silent past their deadline); both from
	// the next minute's point (0 for the last minute).
	AdmittedPerMinute int64 `json:"admittedPerMinute"`
	EvictedPerMinute  int64 `json:"evictedPerMinute"`
	// JoinsPerMinute is the arrivals that stayed: the change of the queue
	// plus those admitted and evicted (a visitor who joined and left by the
	// leave route within the minute is not counted).
	JoinsPerMinute int64 `json:"joinsPerMinute"`
	// WaitSeconds estimates the wait of those admitted in the minute:
	// the queue's length over the pace (Little's law), 0 when nobody was.
	WaitSeconds float64 `json:"waitSeconds"`
}

// ReportTotals sums a sale.
type ReportTotals struct {
	From        time.Time `json:"from"`        // the first minute with a point
	To          time.Time `json:"to"`          // the last
	Minutes     int       `json:"minutes"`     // minutes with a point
	Visitors    int64     `json:"visitors"`    // those waiting at the start plus every join
	PeakWaiting int64     `json:"peakWaiting"` // the longest queue
	PeakJoins   int64     `json:"peakJoinsPerMinute"`
	Admitted    int64     `json:"admitted"`
	Evicted     int64     `json:"evicted"`
	// WaitP50Seconds and WaitP95Seconds are the median and 95th percentile
	// of WaitSeconds over the visitors admitted (each minute weighs as many
	// as it admitted): estimates, not each visitor's measured wait.
	WaitP50Seconds float64 `json:"waitP50Seconds"`
	WaitP95Seconds float64 `json:"waitP95Seconds"`
}

// Report is a sale's report: a row a minute and the totals.
type Report struct {
	Minutes []ReportMinute `json:"minutes"`
	Totals  ReportTotals   `json:"totals"`
}

// ReportOf derives the report from history points, oldest first. A minute
// without a point (no tick ran) breaks the per-minute figures of the minute
// before it, which are then 0; an evicted counter that went down (a data loss
// reset it) counts from 0.
func ReportOf(pts []HistoryPoint) Report {
	r := Report{Minutes: make([]ReportMinute, 0, len(pts))}
	if len(pts) == 0 {
		return r
	}
	type weighed struct {
		wait float64
		n    int64
	}
	var waits []weighed
	t := &r.Totals
	t.From, t.To, t.Minutes, t.Visitors = pts[0].Minute, pts[len(pts)-1].Minute, len(pts), pts[0].Waiting
	for i, p := range pts {
		m := ReportMinute{Minute: p.Minute, Waiting: p.Waiting, Admitted: p.Admitted, Active: p.Active}
		if i+1 < len(pts) && pts[i+1].Minute.Sub(p.Minute) == time.Minute {
			next := pts[i+1]
			m.AdmittedPerMinute = next.AdmittedLastMinute
			m.EvictedPerMinute = next.Evicted - p.Evicted
			if m.EvictedPerMinute < 0 {
				m.EvictedPerMinute = next.Evicted
			}
			m.JoinsPerMinute = max(0, next.Waiting-p.Waiting+m.AdmittedPerMinute+m.EvictedPerMinute)
			if m.AdmittedPerMinute > 0 {
				m.WaitSeconds = 60 * float64(p.Waiting) / float64(m.AdmittedPerMinute)
				waits = append(waits, weighed{m.WaitSeconds, m.AdmittedPerMinute})
			}
		}
		t.Visitors += m.JoinsPerMinute
		t.Admitted += m.AdmittedPerMinute
		t.Evicted += m.EvictedPerMinute
		t.PeakWaiting = max(t.PeakWaiting, p.Waiting)
		t.PeakJoins = max(t.PeakJoins, m.JoinsPerMinute)
		r.Minutes = append(r.Minutes, m)
	}
	slices.SortFunc(waits, func(a, b weighed) int {
		switch {
		case a.wait < b.wait:
			return -1
		case a.wait > b.wait:
			return 1
		}
		return 0
	})
	quantile := func(q float64) float64 {
		var total, seen int64
		for _, w := range waits {
			total += w.n
		}
		for _, w := range waits {
			seen += w.n
			if float64(seen) >= q*float64(total) {
				return w.wait
			}
		}
		return 0
	}
	t.WaitP50Seconds, t.WaitP95Seconds = quantile(0.5), quantile(0.95)
	return r
}
