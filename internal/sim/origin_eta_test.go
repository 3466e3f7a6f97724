package sim

import (
	"testing"
	"time"
)

// ETARatiosWithin keeps only the waits that lie wholly in [from, to): an
// ETA told in it to a visitor seen granted after to is left out, which
// ETARatios counts.
func TestETARatiosWithinLeavesOutWaitsPastTheSpell(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	o := &Origin{}
	o.begin(t0)
	in := &Visitor{ID: 1, SeenAt: t0.Add(100 * time.Second)}
	out := &Visitor{ID: 2, SeenAt: t0.Add(300 * time.Second)}
	o.told(1, t0.Add(10*time.Second), 90, 90)   // 90 s told, 90 s waited
	o.told(2, t0.Add(10*time.Second), 580, 580) // 580 s told, 290 s waited: past the spell
	from, to := t0, t0.Add(200*time.Second)
	if all, _ := o.ETARatios([]*Visitor{in, out}, from, to, 30*time.Second); len(all) != 2 {
		t.Fatalf("ETARatios: %v, want both", all)
	}
	all, worst := o.ETARatiosWithin([]*Visitor{in, out}, from, to, 30*time.Second)
	if len(all) != 1 || all[0] != 1 || len(worst) != 1 {
		t.Errorf("ETARatiosWithin: %v (worst %v), want [1]", all, worst)
	}
}
