package main

import (
	"math"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/quota"
)

// The edge row is quota's model of the 10,000,000 crowd: its busiest second
// of status reads comes when the joins end (9.5 million waiting), the second
// after the busiest of CloudFront's peak that quota.For counts (DEPLOY.md's
// "about 191,000 reads a second"), and reads as many within a quarter of a
// thousandth; at the 7 s page every waiting visitor would read 1/7 a second
// (about 1.36 million a second).
func TestTenMillionEdge(t *testing.T) {
	peak, at, waiting := tenMillionEdgePeak()
	need := quota.For(tenMillion)
	if at != need.OnSale.PeakAt+1 || math.Abs(peak/need.OnSale.Peak.StatusReads-1) > 2.5e-3 {
		t.Errorf("the edge's peak %.0f at %d s; quota.For's busiest second %d s reads %.0f", peak, at, need.OnSale.PeakAt, need.OnSale.Peak.StatusReads)
	}
	if math.Abs(waiting-9_500_000) > 1 {
		t.Errorf("%.0f waiting at the peak", waiting)
	}
	r := tenMillionEdgeRow()
	if r.Value != peak/quota.DefaultCloudFrontRPS || r.Value > edgePeakShare {
		t.Errorf("row %+v for a peak of %.0f", r, peak)
	}
	if base := r.Baseline * quota.DefaultCloudFrontRPS; base < 1_300_000 || base > 1_400_000 {
		t.Errorf("the 7 s page's peak %.0f a second, the issue says about 1.4 million", base)
	}
}
