package sim

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// A crowd that arrives behind a visitor lengthens the sweep's pass that
// evicts them once they closed the tab: the pass is over the queue as it is
// when their silence ends, not as they last saw it. A burst of 1,200 into a
// room admitting 60 a minute, the engine sweeping 20 places a tick (so the
// passes take as long as a 100,000 crowd's at 2,000): a visitor who joined
// at place 400 and closed the tab at once is silent for 5 minutes and the
// grace, when some 800 still wait behind the front, a pass of 45 ticks where
// its own answer's waiting gave 23. Every closed tab must be evicted within
// the pass of the queue as it was (none late), and some must have been held
// past a pass of what they saw (the bound the simulator used to check, which
// this crowd broke).
func TestClosedTabsBehindAGrowingCrowd(t *testing.T) {
	const batch, rate = 20, 60
	d, err := NewVirtual(redistest.Single(t), time.Now().Truncate(time.Second), time.Second, WithEvictBatch(batch))
	if err != nil {
		t.Fatal(err)
	}
	cfg := room.DefaultConfig()
	cfg.MaxActive, cfg.AdmitPerMinute, cfg.OriginURL = 60, rate, "http://127.0.0.1:9/origin"
	cfg.ClientEnqueuePerMinute, cfg.HeartbeatTTLSeconds = 0, 10
	c := Config{
		Visitors: 1200, Shape: Burst, Seed: 7,
		CloseTab: 0.3, AbandonAfter: 10 * time.Second,
		ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
		Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour, NoWatch: true,
	}
	res := runClosedTabs(t, d, c, 200)
	ev := res.Summarize().Evictions
	// Held (by a probe's look) past their silence and a pass of the queue
	// they saw at the join, their last answer.
	past := 0
	for _, v := range res.Visitors {
		if v.Behavior != CloseTab || v.Outcome != Abandoned || v.silent == 0 || v.WaitPolls > 0 || v.heldAt.IsZero() {
			continue
		}
		seen := v.silent + time.Duration(SweepTicks(v.JoinPos, batch, rate))*time.Second
		if v.heldAt.Sub(v.LastAnswer) > seen {
			past++
		}
	}
	if past == 0 {
		t.Errorf("no closed tab held past a pass of the queue it saw: the crowd does not grow the pass")
	}
	t.Logf("%d closed tabs, held at most %.2f of their bound, %d past a pass of the queue they saw; evicted at most %v after the last answer",
		ev.Closed, ev.Worst, past, ev.MaxDelay)
}
