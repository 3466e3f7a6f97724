package main

import (
	"fmt"
	"math"
	"time"

	"github.com/vestibule-dev/vestibule/internal/sim"
)

// The 10,000,000 on-sale's crowd (issue 40): tenMillionFirst join in the
// first minute, the rest evenly over the next nine, tenMillionRate admitted
// a minute from the first second. cloudFrontRequestQuota is CloudFront's
// default request rate per distribution (requests a second).
const (
	tenMillion             = 10_000_000
	tenMillionFirst        = 2_000_000
	cloudFrontRequestQuota = 250_000
	edgePeakShare          = 0.8
)

// todaysReadsPerSecond is one visible page's status reads a second at the
// fixed cadence the page had before it followed the wait: 7 s ± 1 s.
func todaysReadsPerSecond(time.Duration) float64 { return math.Log(8.0/6.0) / 2 }

// tenMillionWaiting is how many of the crowd wait at t after the first join.
func tenMillionWaiting(t time.Duration) float64 {
	s := t.Seconds()
	joined := float64(tenMillion)
	switch {
	case s < 60:
		joined = tenMillionFirst * s / 60
	case s < 600:
		joined = tenMillionFirst + (tenMillion-tenMillionFirst)*(s-60)/540
	}
	return max(0, joined-tenMillionRate*s/60)
}

// edgeReads is the status reads a second of n waiting visible pages at
// places 1 … n of a line admitted rate a minute, each at perPage of its
// remaining wait (place × 60 ÷ rate s), summed over bands of places.
func edgeReads(n, rate float64, perPage func(time.Duration) float64) float64 {
	const band = 1000.0
	total := 0.0
	for p := 0.0; p < n; p += band {
		k := min(band, n-p)
		mid := p + k/2
		total += k * perPage(time.Duration(mid*60/rate*float64(time.Second)))
	}
	return total
}

// tenMillionEdgePeak is the crowd's busiest second of status reads with
// every page visible (a hidden tab reads once a minute), from the cadence
// (perPage) over its shape, every 10 s of its first 20 minutes: the line is
// longest when the joins end, and each place's cadence depends only on its
// remaining wait.
func tenMillionEdgePeak(perPage func(time.Duration) float64) (peak float64, at time.Duration) {
	for t := time.Duration(0); t <= 20*time.Minute; t += 10 * time.Second {
		if r := edgeReads(tenMillionWaiting(t), tenMillionRate, perPage); r > peak {
			peak, at = r, t
		}
	}
	return peak, at
}

// tenMillionEdgeRow: the 10,000,000 crowd's peak status reads a second at
// the edge (CloudFront's cache answers them) ÷ CloudFront's default quota,
// against the same crowd at the 7 s cadence.
func tenMillionEdgeRow() Row {
	peak, at := tenMillionEdgePeak(sim.ReadsPerSecond)
	base, _ := tenMillionEdgePeak(todaysReadsPerSecond)
	logf("moments: 10,000,000 waiting: status reads peak at %.0f a second, %v after the first join (%.0f waiting; the 7 s page %.0f)",
		peak, at, tenMillionWaiting(at), base)
	return row(fmt.Sprintf("peak edge requests a second, %s waiting (status reads, cached) ÷ %s", "10,000,000", "250,000"),
		peak/cloudFrontRequestQuota, "", base/cloudFrontRequestQuota, atMost(edgePeakShare))
}
