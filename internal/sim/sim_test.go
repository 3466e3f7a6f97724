package sim

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// A small crowd in virtual time against real Redis: everyone who does not
// abandon is admitted, nobody consumes twice, FIFO order holds, and the room
// never holds more than maxActive.
func TestVirtualCrowd(t *testing.T) {
	d, cfg := virtualRoom(t, redistest.Single(t), 20, 600)
	cfg.ClientEnqueuePerMinute = 0 // the whole crowd comes from one address
	c := Config{
		Visitors: 200, Shape: Burst, Seed: 7,
		CloseTab: 0.1, NoConsume: 0.05, Leave: 0.05,
		ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
		Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour,
	}
	res, err := Run(context.Background(), d, d.AdminKey, c)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summarize()
	res.Replay(&s, 3*time.Second)
	if testing.Verbose() {
		s.WriteTable(os.Stdout)
	}
	if s.Stopped || s.Outcomes["pending"] != 0 || s.Outcomes["failed"] != 0 {
		for _, v := range res.Visitors {
			if v.LastError != "" {
				t.Logf("visitor %d: %s", v.ID, v.LastError)
				break
			}
		}
		t.Fatalf("run did not finish cleanly: %v", s.Outcomes)
	}
	if s.NotAdmitted != 0 || s.DoubleConsumes != 0 || s.ReplaysAllowed != 0 || s.Inversions != 0 {
		t.Errorf("invariants: notAdmitted=%d doubleConsumes=%d replaysAllowed=%d inversions=%d",
			s.NotAdmitted, s.DoubleConsumes, s.ReplaysAllowed, s.Inversions)
	}
	// A page that follows pollAfterMs is never refused (429) nor failed (5xx).
	if s.Errors != 0 {
		for _, v := range res.Visitors {
			if v.Errors > 0 {
				t.Logf("visitor %d (%s): %s", v.ID, v.Behavior, v.LastError)
				break
			}
		}
		t.Errorf("%d request errors, want 0", s.Errors)
	}
	if s.MeanWait <= 0 {
		t.Errorf("mean wait %s, want > 0", s.MeanWait)
	}
	if s.MaxInUse > cfg.MaxActive || s.MaxInUse == 0 {
		t.Errorf("highest admitted+active %d, want 1..%d", s.MaxInUse, cfg.MaxActive)
	}
	if s.Outcomes["completed"] == 0 || s.Outcomes["abandoned"] == 0 {
		t.Errorf("the crowd should both complete and abandon: %v", s.Outcomes)
	}
	// The adaptive page must cost less than a page polling every 3 s.
	if s.RequestsPerWaitMinute >= s.FixedRequestsPerWaitMinute {
		t.Errorf("adaptive %.2f requests per visitor-minute, fixed 3 s %.2f", s.RequestsPerWaitMinute, s.FixedRequestsPerWaitMinute)
	}
	// The line of requests against the wait passes through the crowd's means:
	// at the mean wait it gives the mean requests per visitor who waited.
	var waited int
	for _, v := range res.Visitors {
		if !v.EnqueuedAt.IsZero() && !v.EndWaitAt.IsZero() {
			waited++
		}
	}
	if got, want := s.RequestsAt(s.MeanWait.Minutes())*float64(waited), float64(s.WaitRequests); math.Abs(got-want) > 0.01*want {
		t.Errorf("line at the mean wait × visitors = %.1f requests, the crowd made %.0f", got, want)
	}
	// Polls are most of the waiting requests, and fewer than all of them
	// (each visitor enqueued once).
	if s.PollsPerWaitMinute <= 0 || s.PollsPerWaitMinute >= s.RequestsPerWaitMinute {
		t.Errorf("polls %.2f per visitor-minute, all waiting requests %.2f", s.PollsPerWaitMinute, s.RequestsPerWaitMinute)
	}
	if err := res.Chart(t.TempDir()+"/crowd.png", "test"); err != nil {
		t.Errorf("chart: %v", err)
	}
}

// The least-squares line recovers an exact line, and a constant without a slope.
func TestLineFit(t *testing.T) {
	xs := []float64{0.5, 3, 7, 20}
	var ys []float64
	for _, x := range xs {
		ys = append(ys, 2.5+0.2*x)
	}
	if a, b := fitLine(xs, ys); math.Abs(a-2.5) > 1e-9 || math.Abs(b-0.2) > 1e-9 {
		t.Errorf("line %.6f + %.6f x, want 2.5 + 0.2 x", a, b)
	}
	if a, b := fitLine([]float64{4, 4}, []float64{3, 5}); a != 4 || b != 0 {
		t.Errorf("one x: %v + %v x, want 4 + 0 x", a, b)
	}
	if a, b := fitLine(nil, nil); a != 0 || b != 0 {
		t.Errorf("no points: %v + %v x", a, b)
	}
}

// Inversions counts a visitor granted ahead of an earlier ticket.
func TestInversions(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	vs := []*Visitor{
		{Seq: 1, GrantAt: at(10)},
		{Seq: 2, GrantAt: at(10)},
		{Seq: 3, GrantAt: at(9)},                     // ahead of 1 and 2
		{Seq: 4, GrantAt: at(5), Behavior: CloseTab}, // abandoners are excluded
		{Seq: 5, GrantAt: at(11)},
	}
	if got := Inversions(vs); got != 1 {
		t.Errorf("Inversions = %d, want 1", got)
	}
}

// virtualRoom is a virtual driver over rdb starting on this whole second,
// ticking every second, and a room's settings with the defaults but
// maxActive, admitPerMinute and an origin that nothing listens on.
func virtualRoom(t *testing.T, rdb redis.UniversalClient, maxActive, rate int64) (*Virtual, room.Config) {
	t.Helper()
	d, err := NewVirtual(rdb, time.Now().Truncate(time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg := room.DefaultConfig()
	cfg.MaxActive, cfg.AdmitPerMinute, cfg.OriginURL = maxActive, rate, "http://127.0.0.1:9/origin"
	return d, cfg
}

// A visitor who closes the tab is evicted within the bound docs/ENGINE.md
// states: the budget of the last answer (rounded up to its class), the grace
// and a pass of the sweep. In a 20-minute wait the far places are given the
// far budget, so some closed tabs are held longer than the near budget and
// the grace allow (the old engine evicted them all by then), and none past
// their own bound.
func TestClosedTabsEvictedWithinTheBound(t *testing.T) {
	d, cfg := virtualRoom(t, redistest.Single(t), 30, 30)
	cfg.ClientEnqueuePerMinute = 0
	c := Config{
		Visitors: 600, Shape: Burst, Seed: 3,
		CloseTab: 0.2, AbandonAfter: 30 * time.Second,
		ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
		Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour, NoWatch: true,
	}
	ev := runClosedTabs(t, d, c, 60).Summarize().Evictions
	grace := time.Duration(cfg.HeartbeatTTLSeconds) * time.Second
	// The near budget's class, the grace, and a minute for the sweep and the probes.
	near := time.Duration(room.ToldMS(room.ToldClass(room.MaxPollAfter.Milliseconds())))*time.Millisecond + grace + time.Minute
	if ev.MaxDelay <= near {
		t.Errorf("closed tabs evicted at most %v after their last answer: none held past the near budget (%v with the grace and a minute)", ev.MaxDelay, near)
	}
}

// runClosedTabs runs crowd c on d and checks its closed tabs: more than min
// of them, every one seen evicted, none held past its bound.
func runClosedTabs(t *testing.T, d *Virtual, c Config, min int) *Result {
	t.Helper()
	res, err := Run(context.Background(), d, d.AdminKey, c)
	if err != nil {
		t.Fatal(err)
	}
	ev := res.Summarize().Evictions
	if ev.Closed < min || ev.Observed != ev.Closed {
		t.Fatalf("%d closed tabs, %d seen evicted: want over %d, all seen", ev.Closed, ev.Observed, min)
	}
	if ev.Late != 0 {
		t.Errorf("%d of %d closed tabs held past their bound", ev.Late, ev.Observed)
	}
	return res
}
