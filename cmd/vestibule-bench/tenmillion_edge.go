package main

import (
	"fmt"
	"math"

	"github.com/vestibule-dev/vestibule/infra/quota"
)

// tenMillion is the 10,000,000 on-sale's crowd: quota.OnSale's
// shape, a fifth joining in the first minute, the rest over the next nine,
// admitted quota.OnSaleAdmitPerMinute a minute from the first second.
const (
	tenMillion    = 10_000_000
	edgePeakShare = 0.8
)

// todaysReadsPerSecond is one visible page's status reads a second at the
// fixed cadence the page had before it followed the wait: 7 s ± 1 s.
func todaysReadsPerSecond() float64 { return math.Log(8.0/6.0) / 2 }

// tenMillionEdgePeak is the crowd's busiest second of status reads with
// every page visible (a hidden tab reads once a minute), as infra/quota
// counts them at the edge (the page's cadence over the line waiting then,
// cadence.LineReads): the second, from the first join, and the waiting then.
func tenMillionEdgePeak() (reads float64, at int, waiting float64) {
	for t, s := range quota.OnSale(tenMillion).Seconds() {
		if s.StatusReads > reads {
			reads, at, waiting = s.StatusReads, t, s.Waiting
		}
	}
	return reads, at, waiting
}

// tenMillionEdgeRow: the 10,000,000 crowd's peak status reads a second at
// the edge (CloudFront's cache answers them) ÷ CloudFront's default quota,
// against the same line at the 7 s cadence.
func tenMillionEdgeRow() Row {
	peak, at, waiting := tenMillionEdgePeak()
	base := waiting * todaysReadsPerSecond()
	logf("moments: 10,000,000 waiting: status reads peak at %.0f a second, %d s after the first join (%.0f waiting; the 7 s page %.0f)",
		peak, at, waiting, base)
	return row(fmt.Sprintf("peak edge requests a second, %s waiting (status reads, cached) ÷ %s", "10,000,000", "250,000"),
		peak/quota.DefaultCloudFrontRPS, "", base/quota.DefaultCloudFrontRPS, atMost(edgePeakShare))
}
