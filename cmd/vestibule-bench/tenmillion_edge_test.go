package main

import (
	"math"
	"testing"
	"time"
)

// The 10,000,000 crowd's shape and the edge's reads over it: at the 7 s page
// every waiting visitor reads 1/7 a second (about 1.36 million a second for
// 9.5 million), and a page at a fixed cadence sums to waiting × its rate.
func TestTenMillionEdge(t *testing.T) {
	if w := tenMillionWaiting(time.Minute); math.Abs(w-(2_000_000-50_000)) > 1 {
		t.Errorf("waiting after a minute: %.0f", w)
	}
	if w := tenMillionWaiting(10 * time.Minute); math.Abs(w-9_500_000) > 1 {
		t.Errorf("waiting after ten minutes: %.0f", w)
	}
	peak, at := tenMillionEdgePeak(todaysReadsPerSecond)
	if at != 10*time.Minute || math.Abs(peak-9_500_000*todaysReadsPerSecond(0)) > 1 {
		t.Errorf("the 7 s page's peak %.0f at %v", peak, at)
	}
	if peak < 1_300_000 || peak > 1_400_000 {
		t.Errorf("the 7 s page's peak %.0f a second, the issue says about 1.4 million", peak)
	}
	if r := tenMillionEdgeRow(); r.Value > edgePeakShare || r.Baseline < 5 {
		t.Errorf("row %+v", r)
	}
}
