package sim

import (
	"context"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// In a room whose settings do not change, the page's watch (its status
// reads between polls) moves no poll: the same crowd with and without it
// makes the same polls and sees its grants as soon. The bench's
// 10,000,000-visitor on-sale plays the crowd without the watch on that
// ground (cmd/vestibule-bench, tenmillion.go).
func TestWatchMovesNoPollOfASteadyRoom(t *testing.T) {
	rdb := redistest.Single(t)
	run := func(noWatch bool) *Result {
		d, cfg := virtualRoom(t, rdb, 60, 60)
		cfg.ClientEnqueuePerMinute = 0
		c := Config{
			Waves: []Wave{{N: 150, Shape: Steady, Spread: time.Minute}, {N: 450, At: time.Minute, Shape: Steady, Spread: 4 * time.Minute}},
			Seed:  11, CloseTab: 0.1, NoConsume: 0.05, Leave: 0.05,
			ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
			Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour, NoWatch: noWatch,
		}
		res, err := Run(context.Background(), d, d.AdminKey, c)
		if err != nil {
			t.Fatal(err)
		}
		if s := res.Summarize(); !s.OK() || s.Errors != 0 {
			t.Fatalf("no watch %v: invariants %+v", noWatch, s)
		}
		return res
	}
	watched, plain := run(false), run(true)
	// The two runs' batches start at different instants (a batch runs what
	// is due within the driver's granularity, and the status reads are
	// events too), so a poll may land up to 50 ms apart and see the grant
	// one poll sooner or later: a visitor's polls may differ by one, and the
	// crowd's not by more than 3 %. That is three times the runs' own noise:
	// the same crowd without the watch made 1,005 to 1,015 polls over nine
	// runs, with it 1,010 to 1,016. A watch that moved polls would move one for
	// each visitor who reads the status: hundreds, not tens.
	reads, polls, plainPolls, moved := 0, 0, 0, 0
	for i, v := range watched.Visitors {
		w := plain.Visitors[i]
		reads += v.StatusReads
		polls += v.WaitPolls
		plainPolls += w.WaitPolls
		if v.WaitPolls != w.WaitPolls {
			moved++
		}
		if v.WaitPolls > w.WaitPolls+1 || w.WaitPolls > v.WaitPolls+1 || v.Outcome != w.Outcome {
			t.Errorf("visitor %d: %d polls (%s) with the watch, %d (%s) without", i, v.WaitPolls, v.Outcome, w.WaitPolls, w.Outcome)
		}
	}
	if reads == 0 {
		t.Fatal("the watched crowd read no status")
	}
	t.Logf("%d polls with the watch (%d status reads), %d without; %d visitors' differ by one", polls, reads, plainPolls, moved)
	if d := polls - plainPolls; d*100 > 3*plainPolls || -d*100 > 3*plainPolls {
		t.Errorf("%d polls with the watch, %d without", polls, plainPolls)
	}
	ws, ps := watched.Summarize(), plain.Summarize()
	if d := ws.SeenP99 - ps.SeenP99; d > 100*time.Millisecond || d < -100*time.Millisecond {
		t.Errorf("grant→seen p99 %s with the watch, %s without", ws.SeenP99, ps.SeenP99)
	}
}
