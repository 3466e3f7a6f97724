package sim

import (
	"cmp"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/vestibule-dev/vestibule/internal/printer"
)

// Summary is the report of a run: what the crowd cost and saw, and the
// invariant checks.
type Summary struct {
	Driver   string
	Visitors int
	Outcomes map[string]int
	Wall     time.Duration
	Span     time.Duration // simulated time from the first arrival to the last visitor done

	WaitRequests int     // enqueue + polls + leave while waiting
	WaitMinutes  float64 // visitor-minutes spent waiting
	// MeanWait is WaitMinutes over the visitors who waited (enqueued and
	// then saw a grant, walked away or expired).
	MeanWait time.Duration
	// RequestsPerWaitMinute is WaitRequests / WaitMinutes.
	RequestsPerWaitMinute float64
	// PollsPerWaitMinute counts the polls alone (no enqueue, no leave): what a
	// room's waiting crowd asks of its Redis once everyone has joined.
	PollsPerWaitMinute float64
	// RequestsFixed + RequestsPerMinute × minutes is the least-squares line of
	// a visitor's waiting requests against their wait, over the visitors who
	// waited: the descent to the front costs the same whatever the wait, the
	// far polls grow with it. It passes through the crowd's means, so the
	// requests of a crowd whose mean wait is W are RequestsAt(W) per visitor.
	RequestsFixed, RequestsPerMinute float64
	SeenP50, SeenP99                 time.Duration // grant → visitor sees it
	Drain                            time.Duration // start → last grant seen
	Errors                           int           // 5xx, 429 and transport failures

	// Fixed is the same crowd replayed with a page polling every FixedEvery
	// (see Replay); zero when not computed.
	FixedEvery                 time.Duration
	FixedRequestsPerWaitMinute float64
	FixedSeenP50, FixedSeenP99 time.Duration

	// Invariants.
	MaxActive      int64 // the room's setting
	MaxInUse       int64 // highest admitted + active sampled
	DoubleConsumes int   // tokens consumed successfully more than once (must be 0)
	ReplaysAllowed int   // deliberate replays not answered 409 (must be 0)
	Inversions     int   // FIFO: visitors admitted after someone who enqueued later (must be 0)
	NotAdmitted    int   // non-abandoning visitors who never saw a grant (must be 0)
	Stopped        bool  // MaxDuration ended the run
	Interrupted    bool  // the run was interrupted: visitors not done are left out of the checks
	NotDone        int   // visitors not done when the run ended
	// Evictions: the visitors who closed the tab while waiting, looked for
	// until evicted (Late: still held past the bound, must be 0; evict.go).
	Evictions Evictions

	Booking *BookingSummary // nil unless the crowd booked (booking.go)
}

// OK reports whether every invariant held.
func (s Summary) OK() bool {
	return s.MaxInUse <= s.MaxActive && s.DoubleConsumes == 0 && s.ReplaysAllowed == 0 &&
		s.Inversions == 0 && s.NotAdmitted == 0 && s.Evictions.Late == 0 && !s.Stopped && !s.Interrupted && s.Booking.OK()
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// RequestsAt is the waiting requests a visitor makes in a wait of minutes,
// from the crowd's line (RequestsFixed, RequestsPerMinute).
func (s Summary) RequestsAt(minutes float64) float64 {
	return s.RequestsFixed + s.RequestsPerMinute*minutes
}

// fitLine is the ordinary least-squares line y = a + b·x (gonum's stat);
// with no points it is 0, with fewer than two distinct x the mean and no slope.
func fitLine(xs, ys []float64) (a, b float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	if stat.Variance(xs, nil) == 0 {
		return stat.Mean(ys, nil), 0
	}
	return stat.LinearRegression(xs, ys, nil, false)
}

// Summarize computes the report of a run.
func (r *Result) Summarize() Summary {
	s := Summary{Driver: r.Driver, Visitors: len(r.Visitors), Outcomes: map[string]int{}, Wall: r.Wall,
		Span: r.End.Sub(r.Start), MaxActive: r.Config.RoomConfig.MaxActive, MaxInUse: r.MaxInUse, Stopped: r.Stopped, Interrupted: r.Interrupted}
	var waitNanos float64
	var waited int
	var waits, reqs []float64 // the line's points: minutes waited, waiting requests
	var polls int
	var seen []time.Duration
	var last time.Time
	for _, v := range r.Visitors {
		s.Outcomes[v.Outcome.String()]++
		s.WaitRequests += v.WaitRequests
		polls += v.WaitPolls
		s.Errors += v.Errors
		if !v.EnqueuedAt.IsZero() && !v.EndWaitAt.IsZero() {
			waitNanos += float64(v.EndWaitAt.Sub(v.EnqueuedAt))
			waited++
			waits = append(waits, v.EndWaitAt.Sub(v.EnqueuedAt).Minutes())
			reqs = append(reqs, float64(v.WaitRequests))
		}
		if !v.GrantAt.IsZero() && !v.SeenAt.IsZero() {
			seen = append(seen, v.SeenAt.Sub(v.GrantAt))
		}
		if v.SeenAt.After(last) {
			last = v.SeenAt
		}
		if v.Consumes > 1 {
			s.DoubleConsumes++
		}
		if v.Consumes > 0 && v.ReplayStatus != 409 && v.ReplayStatus != 0 {
			s.ReplaysAllowed++
		}
		if v.phase != done {
			s.NotDone++
		}
		if !v.Behavior.Abandons() && v.SeenAt.IsZero() && (v.phase == done || !r.Interrupted) {
			s.NotAdmitted++
		}
	}
	s.WaitMinutes = waitNanos / float64(time.Minute)
	if s.WaitMinutes > 0 {
		s.RequestsPerWaitMinute = float64(s.WaitRequests) / s.WaitMinutes
		s.PollsPerWaitMinute = float64(polls) / s.WaitMinutes
	}
	if waited > 0 {
		s.MeanWait = time.Duration(waitNanos / float64(waited))
	}
	s.RequestsFixed, s.RequestsPerMinute = fitLine(waits, reqs)
	s.SeenP50, s.SeenP99 = percentile(seen, 0.50), percentile(seen, 0.99)
	if !last.IsZero() {
		s.Drain = last.Sub(r.Start)
	}
	s.Inversions = Inversions(r.Visitors)
	s.Evictions = r.Evictions()
	s.Booking = r.summarizeBooking()
	return s
}

// Inversions counts, among granted visitors who never meant to abandon, those
// granted strictly earlier than someone ahead in the queue's order (Score: a
// smaller sequence, or a pre-queue draw, drawn ahead of every later join):
// admitted ahead of an earlier ticket.
func Inversions(vs []*Visitor) int {
	var xs []*Visitor
	for _, v := range vs {
		if !v.Behavior.Abandons() && !v.GrantAt.IsZero() && v.Seq > 0 {
			xs = append(xs, v)
		}
	}
	score := func(v *Visitor) float64 {
		if v.Score == 0 {
			return float64(v.Seq)
		}
		return v.Score
	}
	slices.SortFunc(xs, func(a, b *Visitor) int { return cmp.Compare(score(a), score(b)) })
	n := 0
	var latest time.Time
	for _, v := range xs {
		if v.GrantAt.Before(latest) {
			n++
		}
		if v.GrantAt.After(latest) {
			latest = v.GrantAt
		}
	}
	return n
}

// Replay computes what a page polling every `every` (ignoring pollAfterMs)
// would have cost the same crowd, from each visitor's measured enqueue, grant
// and walk-away times: it polls at enqueue + k·every and sees the grant at the
// first poll at or after it. Admission does not depend on how often a waiting
// visitor polls (the tick admits by rate and capacity in ticket order), so the
// grant times carry over; only the few seconds the consume comes later differ.
// It fills the Fixed fields of s.
func (r *Result) Replay(s *Summary, every time.Duration) {
	var reqs int
	var waitNanos float64
	var seen []time.Duration
	for _, v := range r.Visitors {
		if v.EnqueuedAt.IsZero() {
			continue
		}
		reqs++ // enqueue
		if !v.GrantAt.IsZero() {
			n := int64(0)
			if d := v.GrantAt.Sub(v.EnqueuedAt); d > 0 {
				n = int64(math.Ceil(float64(d) / float64(every)))
			}
			reqs += int(n)
			waitNanos += float64(time.Duration(n) * every)
			seen = append(seen, v.EnqueuedAt.Add(time.Duration(n)*every).Sub(v.GrantAt))
			continue
		}
		if v.EndWaitAt.IsZero() {
			continue
		}
		d := v.EndWaitAt.Sub(v.EnqueuedAt)
		reqs += int(d / every)
		if v.Behavior == Leave && v.Outcome == Abandoned {
			reqs++
		}
		waitNanos += float64(d)
	}
	s.FixedEvery = every
	if waitNanos > 0 {
		s.FixedRequestsPerWaitMinute = float64(reqs) / (waitNanos / float64(time.Minute))
	}
	s.FixedSeenP50, s.FixedSeenP99 = percentile(seen, 0.50), percentile(seen, 0.99)
}

func check(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// WriteTable prints the report as one aligned table and returns the first
// write error.
func (s Summary) WriteTable(w io.Writer) error {
	tw := printer.NewTable(w, 0)
	tw.Printf("visitors\t%d (%s driver; simulated %s in %s)\t\n", s.Visitors, s.Driver,
		s.Span.Round(time.Second), s.Wall.Round(100*time.Millisecond))
	tw.Printf("outcomes\t%v\t\n", s.Outcomes)
	tw.Printf("requests per visitor-minute of waiting\t%.2f (%d requests / %.0f visitor-minutes; polls alone %.2f)\t\n",
		s.RequestsPerWaitMinute, s.WaitRequests, s.WaitMinutes, s.PollsPerWaitMinute)
	if s.FixedEvery > 0 {
		tw.Printf("  same crowd, page polling every %s\t%.2f (grant→seen p50 %s, p99 %s)\t\n", s.FixedEvery,
			s.FixedRequestsPerWaitMinute, s.FixedSeenP50.Round(time.Millisecond), s.FixedSeenP99.Round(time.Millisecond))
	}
	tw.Printf("waiting requests of a visitor (least squares)\t%.2f + %.3f per minute waited (%.1f at 20 min)\t\n",
		s.RequestsFixed, s.RequestsPerMinute, s.RequestsAt(20))
	tw.Printf("mean wait (enqueue → grant seen, left or expired)\t%s\t\n", s.MeanWait.Round(time.Second))
	tw.Printf("grant→seen delay p50 / p99\t%s / %s\t\n", s.SeenP50.Round(time.Millisecond), s.SeenP99.Round(time.Millisecond))
	tw.Printf("time to drain (start → last grant seen)\t%s\t\n", s.Drain.Round(time.Second))
	tw.Printf("request errors (5xx, 429, transport)\t%d\t\n", s.Errors)
	tw.Printf("highest admitted+active vs maxActive\t%d ≤ %d\t%s\n", s.MaxInUse, s.MaxActive, check(s.MaxInUse <= s.MaxActive))
	tw.Printf("double consumes\t%d\t%s\n", s.DoubleConsumes, check(s.DoubleConsumes == 0))
	tw.Printf("replays not refused with 409\t%d\t%s\n", s.ReplaysAllowed, check(s.ReplaysAllowed == 0))
	tw.Printf("FIFO order inversions (abandoners excluded)\t%d\t%s\n", s.Inversions, check(s.Inversions == 0))
	tw.Printf("non-abandoners never admitted\t%d\t%s\n", s.NotAdmitted, check(s.NotAdmitted == 0))
	if ev := s.Evictions; ev.Observed > 0 {
		tw.Printf("closed tabs held past their bound (budget, grace, sweep)\t%d of %d seen (%d closed); evicted at most %s after the last answer (probed every %s), held at most %.2f of the bound\t%s\n",
			ev.Late, ev.Observed, ev.Closed, ev.MaxDelay.Round(time.Second), ProbeEvery, ev.Worst, check(ev.Late == 0))
	}
	if s.Stopped {
		tw.Printf("run stopped by its time limit\t\tFAIL\n")
	}
	if s.Interrupted {
		tw.Printf("run interrupted: the report is of what ran\t%d visitors not done (left out of the checks)\tINTERRUPTED\n", s.NotDone)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return s.Booking.writeTable(w)
}

// Chart draws waiting, admitted, active and arrivals (per second) over time
// into a PNG (or SVG/PDF, by the file's extension).
func (r *Result) Chart(path, title string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the first arrival (s)"
	p.Y.Label.Text = "visitors"
	p.Legend.Top = true
	series := map[string]plotter.XYs{}
	names := []string{"waiting", "admitted", "active", "arrivals per second"}
	per := r.Config.SampleEvery.Seconds()
	for _, smp := range r.Samples {
		x := smp.At.Seconds()
		series["waiting"] = append(series["waiting"], plotter.XY{X: x, Y: float64(smp.Waiting)})
		series["admitted"] = append(series["admitted"], plotter.XY{X: x, Y: float64(smp.Admitted)})
		series["active"] = append(series["active"], plotter.XY{X: x, Y: float64(smp.Active)})
		series["arrivals per second"] = append(series["arrivals per second"], plotter.XY{X: x, Y: float64(smp.Arrivals) / per})
	}
	var args []any
	for _, n := range names {
		if len(series[n]) == 0 {
			series[n] = plotter.XYs{{}}
		}
		args = append(args, n, series[n])
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return err
	}
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}
