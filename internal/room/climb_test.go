package room

import (
	"math"
	"testing"
)

// Minutes and Passed are each other's inverse on a climb, before and after
// its top, and a place's own pace lies between the climb's rate and its top,
// higher the farther back: the near places pass at about the rate, the far
// nearer the top.
func TestAClimbPassesPlacesAsItRises(t *testing.T) {
	c := Climb{RatePerMinute: 60, SlopePerMinute: 180, TopPerMinute: 600}
	// Three minutes to the top, passing 60·3 + 180·9/2 = 990 places on the way.
	if m := c.Minutes(990); math.Abs(m-3) > 1e-9 {
		t.Errorf("990 places in %v minutes, want 3", m)
	}
	if m := c.Minutes(990 + 600); math.Abs(m-4) > 1e-9 {
		t.Errorf("1,590 places in %v minutes, want 4 (a minute at the top after it)", m)
	}
	last := 0.0
	for _, p := range []float64{1, 10, 100, 500, 990, 5000} {
		m := c.Minutes(p)
		if got := c.Passed(m); math.Abs(got-p) > 1e-6*p {
			t.Errorf("Passed(Minutes(%v)) = %v", p, got)
		}
		own := c.PaceAt(p)
		if own < c.RatePerMinute || own > c.TopPerMinute || own <= last {
			t.Errorf("place %v: own pace %v, want within 60..600 and above the nearer place's %v", p, own, last)
		}
		last = own
	}
	if a := c.After(1); a.RatePerMinute != 240 || c.After(10).RatePerMinute != 600 {
		t.Errorf("a minute on: %v a minute; ten: %v; want 240 and the top, 600", a.RatePerMinute, c.After(10).RatePerMinute)
	}
	flat := Climb{RatePerMinute: 600, TopPerMinute: 600}
	if flat.Minutes(300) != 0.5 || flat.PaceAt(300) != 600 {
		t.Errorf("at its top: 300 places in %v minutes at %v a minute, want 0.5 at 600", flat.Minutes(300), flat.PaceAt(300))
	}
}
