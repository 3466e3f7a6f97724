package cadence

import (
	"math"
	"testing"
	"time"
)

// The cadence is the page's: 7 s ± 1 s near the turn, 57 s ± 1 s far from it.
func TestReadInterval(t *testing.T) {
	for _, c := range []struct {
		remaining time.Duration
		u         float64
		want      time.Duration
	}{
		{0, 0, 6 * time.Second}, {0, 0.5, 7 * time.Second}, {time.Minute, 1, 8 * time.Second},
		{time.Hour, 0, 56 * time.Second}, {time.Hour, 0.5, 57 * time.Second},
		{5 * time.Minute, 0.5, time.Duration(0.085*300*float64(time.Second)) - 3*time.Second},
	} {
		if got := ReadInterval(c.remaining, c.u); got != c.want {
			t.Errorf("ReadInterval(%v, %v) = %v, want %v", c.remaining, c.u, got, c.want)
		}
	}
}

// LineReads is what summing ReadsPerSecond place by place gives, in each of
// the three stretches of the line (floor, share, cap) and across them.
func TestLineReadsIsTheCadenceSummed(t *testing.T) {
	per := 50_000.0 / 60
	for _, waiting := range []float64{1_000, 80_000, 300_000, 2_000_000} {
		sum := 0.0
		for p := 0.5; p < waiting; p++ {
			sum += ReadsPerSecond(time.Duration(p / per * float64(time.Second)))
		}
		if got := LineReads(waiting, per); math.Abs(got-sum) > 1e-4*sum {
			t.Errorf("%.0f waiting: %.2f reads a second, the cadence summed %.2f", waiting, got, sum)
		}
	}
	if LineReads(0, per) != 0 {
		t.Error("an empty line reads")
	}
	if got, want := LineReads(1_000, 0), 1_000*ReadsPerSecond(0); math.Abs(got-want) > 1e-9 {
		t.Errorf("a line admitting nobody reads %.2f a second, want %.2f (the floor's pace)", got, want)
	}
}
