// Package cadence is how often the waiting page reads the room's status
// between its polls (static/js/watch.js readDelay, docs/PAGE.md): as often as
// the visitor's remaining wait asks, so that a change is shown within
// ShownWithin of it. The simulator plays it (internal/sim) and the quotas
// count its reads at the edge (infra/quota); static's TestWatch holds the
// page's constants and read delays to it, so a drift fails a test.
package cadence

import (
	"math"
	"time"
)

const (
	// ShownFloor, ShownShare and ShownCap are the rule: a change is shown
	// within max(ShownFloor, ShownShare × the remaining wait), at most ShownCap.
	ShownFloor = 10 * time.Second
	ShownShare = 0.1
	ShownCap   = 60 * time.Second
	// WaitTrust: the page plans its reads by this share of the remaining wait
	// it estimates, which errs long by up to about 15 % (static/js/watch.js
	// WAIT_TRUST).
	WaitTrust = 0.85
	// ReadMargin: a read comes this much before the rule's bound (the edge's
	// cached second, a late timer), and up to ReadSpread sooner still,
	// uniformly: 7 s ± 1 s near the turn, 57 s ± 1 s ten minutes from it.
	ReadMargin = 2 * time.Second
	ReadSpread = 2 * time.Second
)

// ShownWithin is how soon a change must be shown to a visitor whose
// remaining wait is remaining (0 or less: unknown, the floor).
func ShownWithin(remaining time.Duration) time.Duration {
	return max(ShownFloor, min(ShownCap, time.Duration(ShownShare*float64(remaining))))
}

// ReadInterval is the wait before a visible page's next status read for a
// remaining wait it estimates (0: unknown) and u uniform in [0, 1):
// ShownWithin of WaitTrust of it, less ReadMargin and (1 − u) × ReadSpread
// (static/js/watch.js readDelay).
func ReadInterval(remaining time.Duration, u float64) time.Duration {
	return ShownWithin(time.Duration(WaitTrust*float64(remaining))) - ReadMargin - time.Duration((1-u)*float64(ReadSpread))
}

// ReadsPerSecond is the status reads a second of one visible page whose
// remaining wait is remaining: the mean of 1 ÷ ReadInterval over its
// uniform spread.
func ReadsPerSecond(remaining time.Duration) float64 {
	hi := ReadInterval(remaining, 1).Seconds()
	lo := ReadInterval(remaining, 0).Seconds()
	return math.Log(hi/lo) / (hi - lo)
}

// LineReads is the status reads a second of a line of waiting visible pages
// admitted perSecond a second: the page at place p has p ÷ perSecond seconds
// left and reads ReadsPerSecond of that, summed (as an integral) over the
// places 0 to waiting. Near the front every page reads at the floor's pace,
// far back at the cap's, in between at a pace that falls with the place; a
// line admitting nobody has no known wait, and reads at the floor's pace.
func LineReads(waiting, perSecond float64) float64 {
	margin, spread := ReadMargin.Seconds(), ReadSpread.Seconds()
	at := func(bound float64) float64 { return math.Log((bound-margin)/(bound-margin-spread)) / spread }
	floor, ceil := ShownFloor.Seconds(), ShownCap.Seconds()
	switch {
	case waiting <= 0:
		return 0
	case perSecond <= 0:
		return waiting * at(floor)
	}
	// The bound is ShownShare × WaitTrust × p ÷ perSecond between the places
	// near and far; below near it is the floor, beyond far the cap.
	k := ShownShare * WaitTrust / perSecond
	near, far := floor/k, ceil/k
	reads := math.Min(waiting, near) * at(floor)
	if waiting > near {
		// ∫ ln((kp − m) ÷ (kp − m − s)) ÷ s dp = [G(kp − m) − G(kp − m − s)] ÷ (k s),
		// G(x) = x ln x − x.
		g := func(x float64) float64 { return x*math.Log(x) - x }
		prim := func(p float64) float64 { return (g(k*p-margin) - g(k*p-margin-spread)) / (k * spread) }
		reads += prim(math.Min(waiting, far)) - prim(near)
	}
	if waiting > far {
		reads += (waiting - far) * at(ceil)
	}
	return reads
}
