package main

import (
	"context"
	"fmt"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/sim"
)

// The origin's health (docs/BENCHMARKS.md, "The origin's health"):
// a sale whose booking site (sim.Origin) slows to half the room's
// admitPerMinute and later recovers, played twice in virtual time on real
// Redis: in a room whose pace follows the site's Vestibule-Load
// (admitPerMinuteMin), and, as the baseline, in a room without
// admitPerMinuteMin, which ignores the header and admits at its setting.
type originScenario struct {
	Rate     int64         // admitPerMinute; admitPerMinuteMin is a tenth of it
	Visitors int           // in a 10 s burst: enough to wait past the recovery's climb
	Healthy  float64       // the site's capacity before the slowdown and after the recovery (bookings a minute)
	Slow     time.Duration // when the site's capacity falls to Rate ÷ 2
	Recover  time.Duration // when it comes back to Healthy
}

// originBench is the table's scenario: the room climbs from its floor to
// 600 a minute in its first 3 minutes (a new room starts at
// admitPerMinuteMin), the site takes 900 until 4 minutes in, then 300 for
// two and a half minutes, then 900 again.
var originBench = originScenario{Rate: 600, Visitors: 5_000, Healthy: 900, Slow: 4 * time.Minute, Recover: 6*time.Minute + 30*time.Second}

const (
	// climbTime is the pace's climb from admitPerMinuteMin to admitPerMinute
	// (lua/lib.lua CLIMB_MS; docs/ENGINE.md, "Steering").
	climbTime = 3 * time.Minute
	// etaMinWait: ETAs told with less wait than this to the grant seen are
	// left out of the ETA rows (a tick or two: the ratio of seconds says nothing).
	etaMinWait = 30 * time.Second
)

// originRun is one play of the scenario.
type originRun struct {
	res    *sim.Result
	sum    sim.Summary
	origin *sim.Origin
}

func playOrigin(ctx context.Context, sc originScenario, steered bool) (originRun, error) {
	rc := room.DefaultConfig()
	rc.AdmitPerMinute, rc.MaxActive = sc.Rate, 2*sc.Rate
	if steered {
		rc.AdmitPerMinuteMin = sc.Rate / 10
	}
	rc.OriginURL, rc.ClientEnqueuePerMinute = "http://127.0.0.1:9/origin", 0
	o := &sim.Origin{Capacity: sc.Healthy, Changes: []sim.OriginChange{
		{At: sc.Slow, Capacity: float64(sc.Rate) / 2}, {At: sc.Recover, Capacity: sc.Healthy}}}
	name := "origin-fixed"
	if steered {
		name = "origin-steered"
	}
	// Every visitor lands and books: the site's load is the room's pace.
	c := sim.Config{Visitors: sc.Visitors, Shape: sim.Burst, Seed: 41, ThinkMin: 10 * time.Second, ThinkMax: 40 * time.Second,
		Room: "bench-" + name, RoomConfig: rc, Workers: workers, MaxDuration: time.Hour, Origin: o}
	res, s, err := playCrowd(ctx, c, "")
	return originRun{res, s, o}, err
}

// benchOrigin plays the table's scenario.
func benchOrigin(ctx context.Context) ([]Row, error) { return originRows(ctx, originBench) }

// originRows plays sc in both rooms and makes the rows: the pace's fall
// under the slowed site's capacity, the site's p95 latency after it, the
// ETAs told from the slowdown on, the grants lost, the climb back after the
// recovery and its highest pace.
func originRows(ctx context.Context, sc originScenario) ([]Row, error) {
	steered, err := playOrigin(ctx, sc, true)
	if err != nil {
		return nil, fmt.Errorf("origin, steered room: %w", err)
	}
	fixed, err := playOrigin(ctx, sc, false)
	if err != nil {
		return nil, fmt.Errorf("origin, fixed room: %w", err)
	}
	slowCap := float64(sc.Rate) / 2
	spell := sc.Recover - sc.Slow
	sec := func(d time.Duration) float64 { return d.Seconds() }
	// Seconds from the slowdown until the pace is at or under the slowed
	// capacity; the whole spell when it never is in it.
	under := func(r originRun) time.Duration {
		at, ok := sim.PaceFirst(r.res, sc.Slow, func(p float64) bool { return p <= slowCap })
		if !ok || at > sc.Recover {
			return spell
		}
		return at - sc.Slow
	}
	su, fu := under(steered), under(fixed)
	// The site's p95 from the instant the steered pace got under its
	// capacity to the recovery, in both rooms, over its target: twice the
	// slowed service time (a booking waiting no longer than it is served).
	target := 2 * steered.origin.ServiceAt(steered.res.Start.Add(sc.Slow))
	p95 := func(r originRun) time.Duration {
		return r.origin.LatencyQuantile(r.res.Start.Add(sc.Slow+su), r.res.Start.Add(sc.Recover), 0.95)
	}
	sp, fp := p95(steered), p95(fixed)
	// What the room admitted a minute over the same span, over the slowed
	// capacity: the share of the site's throughput the pace used.
	used := func(r originRun) float64 {
		from, to := r.res.Start.Add(sc.Slow+su), r.res.Start.Add(sc.Recover)
		var n int64
		for _, a := range r.res.Admissions {
			if !a.At.Before(from) && a.At.Before(to) {
				n += a.N
			}
		}
		return float64(n) / to.Sub(from).Minutes() / slowCap
	}
	// The ETAs told from the slowdown to the end: a visitor counts once if
	// any ETA told to them lies outside the band.
	etas := func(r originRun) (share, worst float64, told, outside int) {
		_, w := r.origin.ETARatios(r.res.Visitors, r.res.Start.Add(sc.Slow), r.res.End.Add(time.Second), etaMinWait)
		outside, worst = sim.OutsideBand(w, 0.67, 1.5)
		if len(w) > 0 {
			share = float64(outside) / float64(len(w))
		}
		return share, worst, len(w), outside
	}
	ss, sw, st, so := etas(steered)
	fs, fw, ft, fo := etas(fixed)
	// The same of the waits that lie wholly in one spell of the site's health
	// as the room knows it: from the steered pace under the slowed capacity to
	// the recovery, or from the steered pace's first climb after the recovery
	// on (the load is the last 10 s: the room learns of a recovery seconds
	// late), each from a status answer the edge cached (sim.EdgeMaxAge) after
	// the room knew. What the room could know when it told them.
	knew := sc.Recover
	if at, ok := sim.PaceFirst(steered.res, sc.Recover, func(p float64) bool { return p > sim.PaceMax(steered.res, sc.Recover, sc.Recover+time.Second) }); ok {
		knew = at
	}
	slowKnown, knew := sc.Slow+su+sim.EdgeMaxAge, knew+sim.EdgeMaxAge
	oneSpell := func(r originRun) (share, worst float64, told, outside int) {
		_, a := r.origin.ETARatiosWithin(r.res.Visitors, r.res.Start.Add(slowKnown), r.res.Start.Add(sc.Recover), etaMinWait)
		_, b := r.origin.ETARatiosWithin(r.res.Visitors, r.res.Start.Add(knew), r.res.End.Add(time.Second), etaMinWait)
		w := append(a, b...)
		outside, worst = sim.OutsideBand(w, 0.67, 1.5)
		if len(w) > 0 {
			share = float64(outside) / float64(len(w))
		}
		return share, worst, len(w), outside
	}
	ws, ww, wt, wo := oneSpell(steered)
	logOutliers(steered, slowKnown, sc.Recover, "steered, the slow spell")
	logOutliers(steered, knew, steered.res.End.Sub(steered.res.Start)+time.Second, "steered, after the recovery")
	fws, fww, _, _ := oneSpell(fixed)
	back, ok := sim.PaceFirst(steered.res, sc.Recover, func(p float64) bool { return p >= 0.9*float64(sc.Rate) })
	if !ok {
		back = steered.res.End.Sub(steered.res.Start) - sc.Recover
	} else {
		back -= sc.Recover
	}
	top := sim.PaceMax(steered.res, 0, steered.res.End.Sub(steered.res.Start)+time.Second) / float64(sc.Rate)
	logf("origin: steered: pace under %.0f/min %s after the slowdown, at 90 %% of %d/min %s after the recovery; p95 %s (the slow spell's whole: %s) against the target %s",
		slowCap, su, sc.Rate, back, sp, steered.origin.LatencyQuantile(steered.res.Start.Add(sc.Slow), steered.res.Start.Add(sc.Recover), 0.95), target)
	logf("origin: fixed: p95 %s (the slow spell's whole: %s)", fp, fixed.origin.LatencyQuantile(fixed.res.Start.Add(sc.Slow), fixed.res.Start.Add(sc.Recover), 0.95))
	logf("origin: ETAs told from the slowdown on (waits of %s or more): steered %d of %d visitors outside [0.67, 1.5] (worst %.2f), fixed %d of %d (worst %.2f)",
		etaMinWait, so, st, sw, fo, ft, fw)
	logf("origin: ETAs of waits within one spell of the site's health (the climb began %s after the recovery): steered %d of %d visitors outside [0.67, 1.5] (worst %.2f)", knew-sc.Recover, wo, wt, ww)
	logPaceCourse(steered.res, "steered")
	for _, r := range []struct {
		what string
		run  originRun
	}{{"steered", steered}, {"fixed", fixed}} {
		logLatencyCourse(r.run, sc, r.what)
		logETAPhases(r.run, sc, r.what)
	}

	label := fmt.Sprintf("origin slows to %.0f/min under a room of %d/min", slowCap, sc.Rate)
	return []Row{
		row(label+": seconds until the pace is at or under it", sec(su), "s", sec(fu), atMost(30)),
		row(label+": the origin's p95 latency after that ÷ its target", sec(sp)/sec(target), "", sec(fp)/sec(target), atMost(1)),
		row(label+": admissions a minute after that ÷ its capacity", used(steered), "", used(fixed), nil),
		row(label+": share of visitors told an ETA outside 0.67–1.5× of the wait that followed", ss, "", fs, nil), // a figure: the whole sale spans the slowdown
		row(label+": the worst ETA told ÷ the wait that followed", sw, "", fw, nil),
		row(label+": share of visitors told an ETA outside 0.67–1.5× of a wait within one spell of its health", ws, "", fws, atMost(0)),
		row(label+": the worst ETA told ÷ a wait within one spell of its health", ww, "", fww, within(0.67, 1.5)),
		row(label+": grants lost", float64(steered.res.LostGrants()), "", float64(fixed.res.LostGrants()), atMost(0)),
		row(label+": invariant violations", violations(steered.sum), "", violations(fixed.sum), atMost(0)),
		row(fmt.Sprintf("origin health back to %.0f/min: seconds until the pace is at 90 %% of %d/min", sc.Healthy, sc.Rate), sec(back), "s", 0, atMost(sec(climbTime+30*time.Second))),
		row(fmt.Sprintf("origin health back to %.0f/min: highest pace ÷ admitPerMinute", sc.Healthy), top, "", 0, atMost(1)),
	}, nil
}

// logPaceCourse writes the pace every 10 s of a run on stderr.
func logPaceCourse(res *sim.Result, what string) {
	var line []byte
	next := time.Duration(0)
	for _, s := range res.Samples {
		if s.At >= next {
			line = fmt.Appendf(line, " %.0f", s.Pace)
			next += 10 * time.Second
		}
	}
	logf("origin: %s: the pace each 10 s:%s", what, line)
	line = nil
	n, next := int64(0), 10*time.Second
	for _, a := range res.Admissions {
		for a.At.Sub(res.Start) >= next {
			line = fmt.Appendf(line, " %d", n*6)
			n, next = 0, next+10*time.Second
		}
		n += a.N
	}
	logf("origin: %s: the admissions a minute each 10 s:%s", what, line)
}

// logLatencyCourse writes the site's p95 latency of each 15 s from the
// slowdown to a minute after the recovery on stderr.
func logLatencyCourse(r originRun, sc originScenario, what string) {
	var line []byte
	for at := sc.Slow; at < sc.Recover+time.Minute; at += 15 * time.Second {
		p := r.origin.LatencyQuantile(r.res.Start.Add(at), r.res.Start.Add(at+15*time.Second), 0.95)
		line = fmt.Appendf(line, " %.1f", p.Seconds())
	}
	logf("origin: %s: the site's p95 latency (s) each 15 s from the slowdown:%s", what, line)
}

// logETAPhases writes, for the ETAs told in the slow spell and after the
// recovery, how many lay under 0.67 and over 1.5 of the wait that followed.
func logETAPhases(r originRun, sc originScenario, what string) {
	for _, ph := range []struct {
		name     string
		from, to time.Time
	}{
		{"before the slowdown", r.res.Start, r.res.Start.Add(sc.Slow)},
		{"in the slow spell", r.res.Start.Add(sc.Slow), r.res.Start.Add(sc.Recover)},
		{"after the recovery", r.res.Start.Add(sc.Recover), r.res.End.Add(time.Second)},
	} {
		all, _ := r.origin.ETARatios(r.res.Visitors, ph.from, ph.to, etaMinWait)
		under, over := 0, 0
		for _, x := range all {
			if x < 0.67 {
				under++
			} else if x > 1.5 {
				over++
			}
		}
		logf("origin: %s: ETAs told %s: %d, %d under 0.67 of the wait, %d over 1.5; p10 %.2f, p50 %.2f, p90 %.2f",
			what, ph.name, len(all), under, over, sim.Quantile(all, 0.1), sim.Quantile(all, 0.5), sim.Quantile(all, 0.9))
	}
}

// logOutliers writes on stderr each ETA told in [from, to) of the run, to a
// visitor granted within it, that lies outside 0.67–1.5× of the wait that
// followed: when, from what place, at what pace (told, and the room's rate
// and why sampled then), and the pace the wait came to (place × 60 ÷ wait).
func logOutliers(r originRun, from, to time.Duration, what string) {
	for _, t := range r.origin.TellingsWithin(r.res.Visitors, r.res.Start.Add(from), r.res.Start.Add(to), etaMinWait) {
		if x := t.Ratio(); x >= 0.67 && x <= 1.5 {
			continue
		}
		at := t.At.Sub(r.res.Start)
		var smp sim.Sample
		for _, s := range r.res.Samples {
			if s.At > at {
				break
			}
			smp = s
		}
		logf("origin: %s: outlier: visitor %d told at %s from place %.0f: ETA %.0f s at %.0f/min (room: rate %.0f, told %.0f, %s); waited %.0f s (%.0f/min): ratio %.2f",
			what, t.Visitor, at.Round(time.Second), t.Pos, t.ETA, t.Pos*60/t.ETA, smp.Pace, smp.Told, smp.Why, t.Wait.Seconds(), t.Pos*60/t.Wait.Seconds(), t.Ratio())
	}
}
