package room

import (
	"math"
	"time"
)

// ReportMinute is one minute of a sale's report, derived from the history
// points (HistoryPoint) of that minute and the next, and the room's orders
// (OrderMinute) of that minute.
type ReportMinute struct {
	Minute  time.Time `json:"minute"`
	Waiting int64     `json:"waiting"` // at the minute's first tick
	// PeakWaiting is the most waiting at any tick of the minute (at least
	// Waiting): HistoryPoint.PeakWaiting.
	PeakWaiting int64 `json:"peakWaiting"`
	Admitted    int64 `json:"admitted"` // grants not yet redeemed, then
	Active      int64 `json:"active"`   // sessions at the origin, then
	// AdmittedPerMinute: admitted during the minute; EvictedPerMinute: waiting
	// visitors evicted during it (silent past their deadline);
	// LeftPerMinute: waiting visitors who left by the leave route;
	// AbandonedPerMinute: the two together, visitors who waited and were
	// never admitted; LapsedPerMinute: grants that ended unused (never
	// redeemed at the origin). All from the next minute's point (0 for the
	// last minute).
	AdmittedPerMinute  int64 `json:"admittedPerMinute"`
	EvictedPerMinute   int64 `json:"evictedPerMinute"`
	LeftPerMinute      int64 `json:"leftPerMinute"`
	AbandonedPerMinute int64 `json:"abandonedPerMinute"`
	LapsedPerMinute    int64 `json:"lapsedPerMinute"`
	// JoinsPerMinute is the arrivals that stayed: the change of the queue
	// plus those admitted, evicted and who left.
	JoinsPerMinute int64 `json:"joinsPerMinute"`
	// WaitsMeasured is the visitors the ticks admitted from the queue in the
	// minute whose wait was measured (HistoryPoint.Waits); WaitP50Seconds and
	// WaitP95Seconds the median and 95th percentile of their waits, exact
	// to a bucket's width (about 19 %), in whole seconds (WaitSeconds); 0
	// when none was.
	WaitsMeasured  int64   `json:"waitsMeasured"`
	WaitP50Seconds float64 `json:"waitP50Seconds"`
	WaitP95Seconds float64 `json:"waitP95Seconds"`
	// OrdersConfirmed and OrdersCancelled are the booking kit's orders of
	// the room's events confirmed and cancelled in the minute (0 without
	// the booking kit).
	OrdersConfirmed int64 `json:"ordersConfirmed"`
	OrdersCancelled int64 `json:"ordersCancelled"`
	// NoticesSent, NoticesFailed and TurnsSaved are the notices of the
	// minute (docs/ENGINE.md, "Notices"): sent, failed, and notified grants
	// redeemed after the claim window they would have had without one.
	NoticesSent   int64 `json:"noticesSent"`
	NoticesFailed int64 `json:"noticesFailed"`
	TurnsSaved    int64 `json:"turnsSaved"`
}

// ReportTotals sums a sale.
type ReportTotals struct {
	From        time.Time `json:"from"`        // the first minute with a point
	To          time.Time `json:"to"`          // the last
	Minutes     int       `json:"minutes"`     // minutes with a point
	Visitors    int64     `json:"visitors"`    // those waiting at the start plus every join
	PeakWaiting int64     `json:"peakWaiting"` // the longest queue at any tick
	PeakJoins   int64     `json:"peakJoinsPerMinute"`
	Admitted    int64     `json:"admitted"`
	Evicted     int64     `json:"evicted"`
	Left        int64     `json:"left"`
	Abandoned   int64     `json:"abandoned"` // evicted + left
	Lapsed      int64     `json:"lapsed"`
	// WaitP50Seconds and WaitP95Seconds are the median and 95th percentile
	// of the measured waits over the sale (every minute's histogram
	// together), exact to a bucket's width, in whole seconds (WaitSeconds);
	// WaitsMeasured how many.
	WaitsMeasured   int64   `json:"waitsMeasured"`
	WaitP50Seconds  float64 `json:"waitP50Seconds"`
	WaitP95Seconds  float64 `json:"waitP95Seconds"`
	OrdersConfirmed int64   `json:"ordersConfirmed"`
	OrdersCancelled int64   `json:"ordersCancelled"`
	NoticesSent     int64   `json:"noticesSent"`
	NoticesFailed   int64   `json:"noticesFailed"`
	TurnsSaved      int64   `json:"turnsSaved"`
}

// Report is a sale's report: a row a minute and the totals.
type Report struct {
	Minutes []ReportMinute `json:"minutes"`
	Totals  ReportTotals   `json:"totals"`
}

// OrderMinute is the orders of a room's booking events in one minute.
type OrderMinute struct {
	Minute    time.Time `json:"minute"`
	Confirmed int64     `json:"confirmed"`
	Cancelled int64     `json:"cancelled"`
}

// WaitSeconds is the one rounding of a measured wait (docs/OPERATING.md, "A
// sale's report"): to the nearest whole second, a half up (4.98 → 5, 10.5
// → 11); 0 for none. The report's JSON carries it, and the command's table
// and CSV and the console show it (WaitText; the console's waitSeconds in
// static/js/console-sale.js is the same rule). A wait is a bucket's
// estimate, about 19 % wide: a fraction of a second says nothing more.
func WaitSeconds(s float64) float64 {
	if !(s > 0) || math.IsInf(s, 1) {
		return 0
	}
	return math.Round(s)
}

// WaitText says a measured wait as the report does, WaitSeconds as a
// duration: "0s", "45s", "10m10s", "1h2m3s".
func WaitText(s float64) string {
	return (time.Duration(WaitSeconds(s)) * time.Second).String()
}

// counted is the rise of a counter from cur to next: next itself when it
// went down (a data loss reset it).
func counted(cur, next int64) int64 {
	if next < cur {
		return next
	}
	return next - cur
}

// ReportOf derives the report from history points, oldest first, and the
// room's orders a minute (nil without the booking kit; a minute of orders
// without a point is left out). A minute without a point (no tick ran)
// breaks the per-minute counts of the minute before it, which are then 0; a
// counter that went down (a data loss reset it) counts from 0.
func ReportOf(pts []HistoryPoint, orders []OrderMinute) Report {
	r := Report{Minutes: make([]ReportMinute, 0, len(pts))}
	if len(pts) == 0 {
		return r
	}
	byMinute := make(map[int64]OrderMinute, len(orders))
	for _, o := range orders {
		byMinute[o.Minute.Unix()] = o
	}
	all := WaitHistogram{}
	t := &r.Totals
	t.From, t.To, t.Minutes, t.Visitors = pts[0].Minute, pts[len(pts)-1].Minute, len(pts), pts[0].Waiting
	for i, p := range pts {
		m := ReportMinute{Minute: p.Minute, Waiting: p.Waiting, PeakWaiting: max(p.Waiting, p.PeakWaiting),
			Admitted: p.Admitted, Active: p.Active}
		if i+1 < len(pts) && pts[i+1].Minute.Sub(p.Minute) == time.Minute {
			next := pts[i+1]
			m.AdmittedPerMinute = next.AdmittedLastMinute
			m.EvictedPerMinute = counted(p.Evicted, next.Evicted)
			m.LeftPerMinute = counted(p.Left, next.Left)
			m.LapsedPerMinute = counted(p.Lapsed, next.Lapsed)
			m.NoticesSent = counted(p.NoticesSent, next.NoticesSent)
			m.NoticesFailed = counted(p.NoticesFailed, next.NoticesFailed)
			m.TurnsSaved = counted(p.TurnsSaved, next.TurnsSaved)
			m.AbandonedPerMinute = m.EvictedPerMinute + m.LeftPerMinute
			m.JoinsPerMinute = max(0, next.Waiting-p.Waiting+m.AdmittedPerMinute+m.AbandonedPerMinute)
		}
		m.WaitsMeasured = p.Waits.Count()
		m.WaitP50Seconds, m.WaitP95Seconds = WaitSeconds(p.Waits.Quantile(0.5)), WaitSeconds(p.Waits.Quantile(0.95))
		all.Add(p.Waits)
		o := byMinute[p.Minute.Unix()]
		m.OrdersConfirmed, m.OrdersCancelled = o.Confirmed, o.Cancelled
		t.Visitors += m.JoinsPerMinute
		t.Admitted += m.AdmittedPerMinute
		t.Evicted += m.EvictedPerMinute
		t.Left += m.LeftPerMinute
		t.Abandoned += m.AbandonedPerMinute
		t.Lapsed += m.LapsedPerMinute
		t.NoticesSent += m.NoticesSent
		t.NoticesFailed += m.NoticesFailed
		t.TurnsSaved += m.TurnsSaved
		t.OrdersConfirmed += m.OrdersConfirmed
		t.OrdersCancelled += m.OrdersCancelled
		t.PeakWaiting = max(t.PeakWaiting, m.PeakWaiting)
		t.PeakJoins = max(t.PeakJoins, m.JoinsPerMinute)
		r.Minutes = append(r.Minutes, m)
	}
	t.WaitsMeasured = all.Count()
	t.WaitP50Seconds, t.WaitP95Seconds = WaitSeconds(all.Quantile(0.5)), WaitSeconds(all.Quantile(0.95))
	return r
}
