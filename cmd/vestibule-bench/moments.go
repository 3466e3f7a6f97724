package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/sim"
)

// The moments (docs/BENCHMARKS.md, "Moments"): what a visitor's page shows
// at the instants that matter (a join, a burst after a quiet spell, a change
// of the settings, a pause and a resume, the opening of a pre-queue), what it
// costs in polls at their peak, and what the page's status reads cost. Each
// run plays the real handler in virtual time against a real Redis, with the
// page's watch on (sim.Config.NoWatch off).
const (
	// trickle: one visitor every trickleEvery for trickleFor, then a burst of
	// trickleBurst in 10 s, into a room with the defaults (600 a minute,
	// claim window 120 s, maxActive 100).
	trickleEvery, trickleFor = 20 * time.Second, 2 * time.Minute
	trickleBurst             = 10_000
	// lone: loneVisitors, one every loneEvery, into a quiet room.
	loneVisitors, loneEvery = 50, 5 * time.Second
	// pace: paceVisitors in 10 s into a room admitting 600 a minute with
	// paceMaxActive slots; at paceAt the rate becomes paceTo a minute.
	paceVisitors, paceMaxActive, paceFrom, paceTo = 3_000, 600, 600, 60
	paceAt                                        = time.Minute
	// prequeue: prequeueVisitors join over the prequeueFor before the
	// opening; the room admits prequeueRate a minute after it.
	prequeueVisitors, prequeueRate = 100_000, 5_000
	prequeueFor                    = 5 * time.Minute
	// pause: pauseVisitors in 10 s at pauseRate a minute; paused at pauseAt
	// for pauseFor.
	pauseVisitors, pauseRate = 20_000, 1_000
	pauseAt, pauseFor        = 2 * time.Minute, time.Minute
	// stageThrottle is the default stack's API stage throttle (requests a
	// second, quota.go); the opening's peak should stay under
	// openingPeakShare of it.
	openingPeakShare = 0.8
	// peakWindow: the poll rate's peak is taken over this many seconds.
	peakWindow = 10
)

// within is a goal kind: the figure lies in [lo, hi].
func within(lo, hi float64) func(r *Row) {
	return func(r *Row) {
		r.Goal = fmt.Sprintf("within [%s, %s]", num(lo), num(hi))
		ok := r.Value >= lo && r.Value <= hi
		r.Met = &ok
	}
}

// ratioAtMost is a goal kind: the figure ÷ its baseline is at most max.
func ratioAtMost(max float64) func(r *Row) {
	return func(r *Row) {
		r.Goal = fmt.Sprintf("≤ %s × baseline", num(max))
		ok := r.Ratio <= max
		r.Met = &ok
	}
}

// momentRoom is a crowd's config (crowdConfig) with its own slots.
func momentRoom(name string, visitors int, rate, maxActive int64) sim.Config {
	c := crowdConfig(name, visitors, rate)
	c.RoomConfig.MaxActive = maxActive
	return c
}

// benchMoments plays the moments' runs and reuses the crowd part's when it
// ran in this invocation. visitors scales the crowds and the pre-queue
// (100,000: the table's); the other runs are small and keep their size.
func benchMoments(ctx context.Context, visitors int) ([]Row, error) {
	f := float64(visitors) / longVisitors
	n := func(x int) int { return max(int(float64(x)*f), 100) }
	r := func(x int64) int64 { return max(int64(float64(x)*f), 60) }
	var rows []Row
	sec := func(d time.Duration) float64 { return d.Seconds() }

	// A burst after a trickle, in a room with the defaults.
	c := momentRoom("trickle", 0, 0, 0)
	c.RoomConfig = room.DefaultConfig()
	c.RoomConfig.OriginURL, c.RoomConfig.ClientEnqueuePerMinute = "http://127.0.0.1:9/origin", 0
	c.Waves = []sim.Wave{{N: int(trickleFor / trickleEvery), Shape: sim.Even, Spread: trickleFor}, {N: trickleBurst, At: trickleFor, Shape: sim.Burst}}
	res, s, err := playCrowd(ctx, c, "")
	if err != nil {
		return rows, fmt.Errorf("trickle: %w", err)
	}
	rows = append(rows,
		row(fmt.Sprintf("burst of %d after a trickle: grants lost by visitors polling as told", trickleBurst), float64(res.LostGrants()), "", float64(res.Granted()), atMost(0)),
		row("burst after a trickle: invariant violations", violations(s), "", 0, atMost(0)))

	// Lone visitors in a quiet room.
	c = momentRoom("lone", 0, 0, 0)
	c.RoomConfig = room.DefaultConfig()
	c.RoomConfig.OriginURL, c.RoomConfig.ClientEnqueuePerMinute = "http://127.0.0.1:9/origin", 0
	c.CloseTab, c.NoConsume, c.Leave = 0, 0, 0
	c.Waves = []sim.Wave{{N: loneVisitors, Shape: sim.Even, Spread: loneVisitors * loneEvery}}
	res, s, err = playCrowd(ctx, c, "")
	if err != nil {
		return rows, fmt.Errorf("lone: %w", err)
	}
	rows = append(rows, row(fmt.Sprintf("%d lone visitors, one every %s: join → grant seen p99", loneVisitors, loneEvery),
		sec(sim.QuantileDuration(res.SeenDelays(), 0.99)), "s", 1, atMost(3)),
		row("lone visitors: invariant violations", violations(s), "", 0, atMost(0)))

	// A change of pace mid-crowd.
	c = momentRoom("pace", paceVisitors, paceFrom, paceMaxActive)
	c.Changes = []sim.Change{{At: paceAt, Body: fmt.Sprintf(`{"admitPerMinute":%d}`, paceTo)}}
	res, s, err = playCrowd(ctx, c, "")
	if err != nil {
		return rows, fmt.Errorf("pace: %w", err)
	}
	ratios, base := res.MarkETARatios(0)
	label := fmt.Sprintf("pace %d → %d/min at %s (%d in 10 s): first ETA after it ÷ the wait", paceFrom, paceTo, paceAt, paceVisitors)
	logf("moments: pace change: %d visitors waiting told an ETA after it", len(ratios))
	rows = append(rows,
		row(label+", p10", sim.Quantile(ratios, 0.1), "", sim.Quantile(base, 0.1), within(0.67, 1.5)),
		row(label+", p90", sim.Quantile(ratios, 0.9), "", sim.Quantile(base, 0.9), within(0.67, 1.5)),
		row("pace change: invariant violations", violations(s), "", 0, atMost(0)))

	// The crowds: ETA at the join, and the polls' peak.
	for _, cr := range []struct {
		name           string
		visitors, rate int
		res            **sim.Result
	}{{"long", longVisitors, longRate, &measured.Long}, {"short", shortVisitors, shortRate, &measured.Short}} {
		vn, vr := scaled(cr.visitors, visitors, longVisitors, int64(cr.rate))
		if *cr.res == nil {
			res, s, err := playCrowd(ctx, crowdConfig(cr.name, vn, vr), "")
			if err != nil {
				return rows, fmt.Errorf("%s crowd: %w", cr.name, err)
			}
			if cr.name == "long" {
				measureLong(res, s)
			} else {
				measured.Short = res
			}
		}
		res := *cr.res
		ratios, base := res.JoinETARatios()
		label := fmt.Sprintf("crowd %d at %d/min: ETA at join ÷ wait", vn, vr)
		rows = append(rows,
			row(label+", p10", sim.Quantile(ratios, 0.1), "", sim.Quantile(base, 0.1), within(0.67, 1.5)),
			row(label+", p90", sim.Quantile(ratios, 0.9), "", sim.Quantile(base, 0.9), within(0.67, 1.5)),
			pollPeakRow(fmt.Sprintf("crowd %d at %d/min", vn, vr), res))
	}

	// The pre-queue's opening.
	pq, err := prequeueRows(ctx, n(prequeueVisitors), r(prequeueRate))
	rows = append(rows, pq...)
	if err != nil {
		return rows, err
	}

	// A pause, then a resume.
	c = momentRoom("pause", pauseVisitors, pauseRate, pauseRate)
	c.Changes = []sim.Change{{At: pauseAt, Body: `{"mode":"paused"}`}, {At: pauseAt + pauseFor, Body: `{"mode":"queue"}`}}
	res, s, err = playCrowd(ctx, c, "")
	if err != nil {
		return rows, fmt.Errorf("pause: %w", err)
	}
	for k, what := range []string{"pause", "resume"} {
		shown, poll, via, unseen := res.MarkDelays(k)
		logf("moments: %s: %d waiting, %d shown by the status, %d never shown (walked away)", what, len(shown)+unseen, via, unseen)
		// A figure: the rule (the row after it) is the goal, and a far
		// visitor's page reads about once a minute.
		rows = append(rows, row(fmt.Sprintf("%d at %d/min, paused at %s for %s: the %s shown, p95", pauseVisitors, pauseRate, pauseAt, pauseFor, what),
			sec(sim.QuantileDuration(shown, 0.95)), "s", sec(sim.QuantileDuration(poll, 0.95)), nil))
	}
	for k, what := range []string{"pause", "resume"} {
		stopped := time.Duration(0)
		if k == 0 {
			stopped = pauseFor // the wait that remained at the pause, without the pause
		}
		shares, base := res.MarkShares(k, stopped)
		logf("moments: %s: %d waiting and later granted; shown p50 %.2f, p95 %.2f, max %.2f of the rule's bound",
			what, len(shares), sim.Quantile(shares, 0.5), sim.Quantile(shares, 0.95), sim.Quantile(shares, 1))
		rows = append(rows, row(fmt.Sprintf("%d at %d/min, paused at %s for %s: the %s shown, p95, as a share of the remaining wait (floor 10 s, cap 60 s)",
			pauseVisitors, pauseRate, pauseAt, pauseFor, what), sim.Quantile(shares, 0.95), "", sim.Quantile(base, 0.95), atMost(1)))
	}
	rows = append(rows, row("pause and resume: invariant violations", violations(s), "", 0, atMost(0)))
	rows = append(rows, tenMillionEdgeRow())

	// What the long crowd's API path and the page's status reads cost.
	lr := measured.Long
	ls := lr.Summarize()
	lr.Replay(&ls, 3*time.Second)
	rows = append(rows, row(fmt.Sprintf("crowd %d at %d/min: API requests per visitor-minute waiting", len(lr.Visitors), lr.Config.RoomConfig.AdmitPerMinute),
		ls.RequestsPerWaitMinute, "req/min", ls.FixedRequestsPerWaitMinute, atMost(0.7)))
	in, err := measuredCostInput()
	if err != nil {
		return rows, err
	}
	api := total(costPerMillion(in))
	fixed := in
	fixed.WaitRequests = measured.FixedPerMinute * costWaitMinutes
	fixedCost := total(costPerMillion(fixed))
	in.StatusReads, in.StatusBytes = measured.LongStatusReads, measured.StatusBytes
	items := costPerMillion(in)
	fmt.Fprintf(os.Stderr, "cost of %d visitors making %.2f requests and %.1f status reads in a %.0f-minute wait (measured):\n",
		costVisitors, in.WaitRequests, in.StatusReads, costWaitMinutes)
	writeCost(os.Stderr, items)
	if measured.CostAPIPath == 0 { // the cost part did not run: its rows here
		page, err := pageRow()
		if err != nil {
			return rows, err
		}
		rows = append(rows, row(costAPIPathLabel, api, "$", fixedCost, atMost(costGoalDollars)), page)
	}
	rows = append(rows, row(fmt.Sprintf("cost per 1,000,000 visitors waiting 20 min, with the page's status reads (%.1f a visitor)", in.StatusReads),
		total(items), "$", api+todaysReadsIn20Minutes*perRead(in.StatusBytes), atMost(costWithReadsGoalDollars)))
	perMinute := lr.StatusReadsPerMinute()
	logf("moments: crowd %d: %.2f status reads per visitor-minute waiting (the 7 s page: %.2f)", len(lr.Visitors), perMinute, 60/7.0)
	rows = append(rows,
		row("cost per 1,000,000 visitor-minutes waiting, API path", perRequestCost(in)*measured.LongPerMinute, "$",
			perRequestCost(in)*measured.FixedPerMinute, atMost(costPerMinuteAPIGoal)),
		row(fmt.Sprintf("cost per 1,000,000 visitor-minutes waiting, the page's status reads (%.2f a minute)", perMinute), perRead(in.StatusBytes)*perMinute, "$",
			perRead(in.StatusBytes)*60/7.0, nil))
	return rows, nil
}

// pollPeakRow is a crowd's peak poll rate over any peakWindow seconds beside
// its mean, from its first arrival to the end of its last wait.
func pollPeakRow(label string, res *sim.Result) Row {
	from, to := res.Span()
	return pollPeakRowFrom(label, res, from, to, ratioAtMost(2))
}

// pollPeakRowFrom is pollPeakRow over the seconds [from, to) of the run, with goal.
func pollPeakRowFrom(label string, res *sim.Result, from, to int, goal func(*Row)) Row {
	peak, mean := res.Log.Peak(sim.KindSet(sim.KindPoll), peakWindow, from, to)
	// The polls' course on stderr: the rate of each 30 s of the span.
	var b strings.Builder
	for i := from; i < to; i += 30 {
		fmt.Fprintf(&b, " %.0f", float64(res.Log.Total(sim.KindSet(sim.KindPoll), i, min(i+30, to)))/float64(min(30, to-i)))
	}
	logf("moments: %s: polls a second, each 30 s from the first arrival:%s", label, b.String())
	return row(fmt.Sprintf("%s: peak %d-s poll rate (baseline: the mean)", label, peakWindow), peak, "polls/s", mean, goal)
}

// prequeueRows plays a pre-queue of visitors joining over prequeueFor before
// the opening, admitted rate a minute after it: opening → place seen (p50,
// p99) against the first API answer after the opening; the API's peak
// second after the opening against the stage throttle; the polls' peak.
func prequeueRows(ctx context.Context, visitors int, rate int64) ([]Row, error) {
	c := crowdConfig(fmt.Sprintf("prequeue-%d", visitors), visitors, rate)
	c.Waves = []sim.Wave{{N: visitors, Shape: sim.Steady, Spread: prequeueFor}}
	c.OpensAfter = prequeueFor
	res, s, err := playCrowd(ctx, c, "")
	if err != nil {
		return nil, fmt.Errorf("pre-queue: %w", err)
	}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	shown, poll, via, unseen := res.MarkDelays(len(res.Marks) - 1)
	logf("moments: pre-queue of %d: %d waiting at the opening, %d placed by the status, %d never placed (walked away)", visitors, len(shown)+unseen, via, unseen)
	label := fmt.Sprintf("pre-queue of %d, %d/min after the opening", visitors, rate)
	_, to := res.Span()
	open := res.Log.SecondOf(res.OpensAt)
	peak, mean := res.Log.Peak(sim.APIKinds, 1, open, to)
	return []Row{
		row(label+": opening → place seen p50", sec(sim.QuantileDuration(shown, 0.5)), "s", sec(sim.QuantileDuration(poll, 0.5)), atMost(5)),
		row(label+": opening → place seen p99", sec(sim.QuantileDuration(shown, 0.99)), "s", sec(sim.QuantileDuration(poll, 0.99)), atMost(30)),
		row(label+": peak API requests in a second after the opening ÷ the stage throttle", peak/stackAPIRateLimit, "", mean/stackAPIRateLimit, atMost(openingPeakShare)),
		quotaShareRow(label+": peak API requests in a second after the opening ÷ the quota docs/DEPLOY.md asks for", visitors, peak, mean),
		// From the opening: the pre-queue's polls wait for it (their mean over
		// the joins before it says little). A figure: the goal is the
		// crowds' and the million's.
		pollPeakRowFrom(label+", from the opening", res, open, to, nil),
		row(label+": invariant violations", violations(s), "", 0, atMost(0)),
		row(label+": simulation wall time", sec(s.Wall), "s", 0, nil),
	}, nil
}

// benchMillionPrequeue is the pre-queue's rows with the million's crowd and rate.
func benchMillionPrequeue(ctx context.Context, rate int64) ([]Row, error) {
	return prequeueRows(ctx, millionVisitors, rate)
}
