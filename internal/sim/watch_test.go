package sim

import (
	"context"
	"encoding/json"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
	"maps"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/cadence"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// scripted answers the status route with the answer the test sets, and
// counts the calls.
type scripted struct {
	mu     sync.Mutex
	answer map[string]any
	calls  atomic.Int64
}

func (s *scripted) set(a map[string]any) { s.mu.Lock(); s.answer = a; s.mu.Unlock() }

func (s *scripted) Do(_ context.Context, method, path, _ string, _ []byte) (int, []byte, int, error) {
	s.calls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(s.answer)
	return 200, b, 0, nil
}

func testEnv(tr Transport, start time.Time) *env {
	return &env{tr: tr, room: "r", watch: true, edge: &edgeCache{}, log: NewRequestLog(start, time.Hour)}
}

// The log counts by kind and second, concurrently, and finds the peak window.
func TestRequestLog(t *testing.T) {
	start := time.Unix(1000, 0)
	l := NewRequestLog(start, time.Minute)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				// Seconds 0..9 get 100 polls each in all; second 20 gets 8 × 100 enqueues.
				l.Add(KindPoll, start.Add(time.Duration((w*1000+i)%10)*time.Second+time.Millisecond))
			}
			for range 100 {
				l.Add(KindEnqueue, start.Add(20*time.Second+500*time.Millisecond))
			}
		}()
	}
	wg.Wait()
	polls := KindSet(KindPoll)
	if n := l.Total(polls, 0, l.Seconds()); n != 8000 {
		t.Errorf("polls %d, want 8000", n)
	}
	if n := l.Second(3, polls); n != 800 {
		t.Errorf("second 3: %d polls, want 800", n)
	}
	if n := l.Second(20, KindSet(KindEnqueue, KindPoll)); n != 800 {
		t.Errorf("second 20: %d, want 800", n)
	}
	// Polls: 800 a second for 10 s, then nothing, over 40 s: peak 800 (10-s window), mean 200.
	if peak, mean := l.Peak(polls, 10, 0, 40); peak != 800 || mean != 200 {
		t.Errorf("peak %v mean %v, want 800 and 200", peak, mean)
	}
	// All API kinds, 1-s window: the enqueue second is the peak.
	if peak, _ := l.Peak(APIKinds, 1, 0, 40); peak != 800 {
		t.Errorf("1-s peak %v, want 800", peak)
	}
	// Out of span: clamped, never a panic.
	l.Add(KindPoll, start.Add(-time.Hour))
	l.Add(KindPoll, start.Add(time.Hour))
	if kindOf("POST", "/api/rooms/x/leave") != KindLeave || kindOf("GET", "/api/rooms/x/status") != KindStatusFetched ||
		kindOf("POST", "/api/consume") != KindConsume || kindOf("POST", "/api/events/e/holds") != KindOther {
		t.Error("kindOf")
	}
}

// The edge serves an answer younger than a second from its cache; an older
// one is fetched once, however many read at that instant.
func TestEdgeCache(t *testing.T) {
	start := time.Unix(1000, 0)
	tr := &scripted{answer: map[string]any{"mode": "queue", "waiting": 5, "ratePerMinute": 600}}
	e := testEnv(tr, start)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); e.edge.read(ctx, e, start) }()
	}
	wg.Wait()
	if tr.calls.Load() != 1 {
		t.Fatalf("%d fetches for 50 reads at one instant, want 1", tr.calls.Load())
	}
	if s := e.edge.read(ctx, e, start.Add(999*time.Millisecond)); s == nil || s.Waiting != 5 || tr.calls.Load() != 1 {
		t.Errorf("a read 999 ms later: %+v, %d fetches", s, tr.calls.Load())
	}
	tr.set(map[string]any{"mode": "paused", "waiting": 7})
	if s := e.edge.read(ctx, e, start.Add(time.Second)); s == nil || s.Mode != "paused" || tr.calls.Load() != 2 {
		t.Errorf("a read 1 s later: %+v, %d fetches", s, tr.calls.Load())
	}
	all := KindSet(KindStatusCached, KindStatusFetched)
	if c, f := e.log.Total(KindSet(KindStatusCached), 0, 10), e.log.Total(KindSet(KindStatusFetched), 0, 10); c != 50 || f != 2 || e.log.Total(all, 0, 10) != 52 {
		t.Errorf("log: %d cached, %d fetched; want 50 and 2", c, f)
	}
	if e.edge.fetches.Load() != 2 || e.edge.fetchBytes.Load() == 0 {
		t.Errorf("fetches %d, bytes %d", e.edge.fetches.Load(), e.edge.fetchBytes.Load())
	}
}

// newWatcher is a visitor waiting at pos, told at pace at `at`, next poll at pollAt.
func newWatcher(at time.Time, pos, pace float64, pollAt time.Time) *Visitor {
	v := &Visitor{rng: rand.New(rand.NewPCG(1, 2)), pollAt: pollAt, phase: waiting}
	v.view = view{state: "waiting", pos: pos, at: at, pace: pace}
	return v
}

// What the page does with each status answer (docs/PAGE.md): a pause shows at
// once and leaves the poll; a resume and a new pace count on from the place
// shown at the new pace and bring the poll forward; the opening places a
// pre-queue visitor by its share of the line.
func TestWatchReactions(t *testing.T) {
	start := time.Unix(1000, 0)
	ctx := context.Background()
	tr := &scripted{}
	e := testEnv(tr, start)
	e.applied.Store(1) // one mark, at start

	// Waiting at 1,000, counted down at 600 a minute: 60 s later, about 400.
	now := start.Add(time.Minute)
	poll := start.Add(5 * time.Minute)
	v := newWatcher(start, 1000, 600, poll)

	tr.set(map[string]any{"mode": "paused", "waiting": 900, "ratePerMinute": 600})
	v.watch(ctx, e, now)
	if v.view.state != "paused" || v.view.pos != 400 || !v.pollAt.Equal(poll) {
		t.Fatalf("pause: view %+v, poll %v (want paused at 400, poll unchanged)", v.view, v.pollAt.Sub(start))
	}
	if m := v.Marks[0]; !m.ShownAt.Equal(now) || m.ShownVia != ViaStatus || !m.ETAAt.IsZero() {
		t.Errorf("pause: mark %+v", m)
	}
	if d := v.watchAt.Sub(now); d < 6*time.Second || d > 8*time.Second {
		t.Errorf("next read %v later, want 7 s ± 1 s (40 s from the turn)", d)
	}
	// Still paused a minute later: the place holds, nothing moves.
	later := now.Add(time.Minute)
	v.watch(ctx, e, later)
	if v.view.pos != 400 || !v.pollAt.Equal(poll) {
		t.Errorf("paused: %+v", v.view)
	}

	// The resume: waiting at 400, at the status's pace; poll within U(0.3, 0.6) × eta.
	tr.set(map[string]any{"mode": "queue", "waiting": 900, "ratePerMinute": 300})
	e.applied.Store(2)
	resume := later.Add(2 * time.Second) // past the cached answer's second
	v.watch(ctx, e, resume)
	eta := 400.0 * 60 / 300 // 80 s
	if v.view.state != "waiting" || v.view.pace != 300 || v.view.pos != 400 {
		t.Fatalf("resume: view %+v", v.view)
	}
	if d := v.pollAt.Sub(resume).Seconds(); d < 0.3*eta || d > 0.6*eta {
		t.Errorf("resume: poll %.1f s later, want %.0f–%.0f", d, 0.3*eta, 0.6*eta)
	}
	if m := v.Marks[1]; !m.ShownAt.Equal(resume) || m.ETA != eta || m.ETAPos != 400 {
		t.Errorf("resume: mark %+v", m)
	}

	// A new pace: counted from the place shown (400 − 300 × 0.5 = 250 after 30 s).
	tr.set(map[string]any{"mode": "queue", "waiting": 900, "ratePerMinute": 60})
	e.applied.Store(3)
	change := resume.Add(30 * time.Second)
	scheduled := v.pollAt
	v.watch(ctx, e, change)
	if v.view.pos != 250 || v.view.pace != 60 {
		t.Fatalf("pace: view %+v", v.view)
	}
	if m := v.Marks[2]; m.ETA != 250 || !m.ETAAt.Equal(change) {
		t.Errorf("pace: mark %+v", m)
	}
	if !v.pollAt.Equal(scheduled) { // the one scheduled (≤ 48 s after the resume) is sooner than 75 s
		t.Errorf("pace: poll moved from %v to %v", scheduled.Sub(start), v.pollAt.Sub(start))
	}
	// The same pace again: nothing.
	before := v.view
	v.watch(ctx, e, change.Add(7*time.Second))
	if v.view.at != before.at {
		t.Errorf("the same pace changed the view: %+v", v.view)
	}
	// Near the front, a poll is never sooner than a second.
	v = newWatcher(change, 1, 600, change.Add(time.Hour))
	tr.set(map[string]any{"mode": "queue", "waiting": 900, "ratePerMinute": 6000})
	at := change.Add(3 * time.Second)
	v.watch(ctx, e, at)
	if !v.pollAt.Equal(at.Add(time.Second)) {
		t.Errorf("front: poll %v after the read, want 1 s", v.pollAt.Sub(at))
	}
}

// The page's cadence (static/js/watch.js readDelay): a visitor's next status
// read comes at the rule's bound for its remaining wait less 2–4 s: 7 s ± 1 s
// near the turn, 57 s ± 1 s ten minutes and more from it; and every interval,
// with the edge's second and a late second, keeps the rule.
func TestWatchCadence(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		pos, pace float64
		lo, hi    time.Duration
	}{
		{30_000, 1_000, 56 * time.Second, 58 * time.Second}, // 30 minutes
		{5_000, 1_000, 21 * time.Second, 24 * time.Second},  // 5 minutes: within 10 % of 85 % of it
		{50, 60, 6 * time.Second, 8 * time.Second},          // 50 s: the floor
		{50, 0, 6 * time.Second, 8 * time.Second},           // no pace: the floor
	} {
		for i := range 50 {
			v := newWatcher(now, c.pos, c.pace, now.Add(time.Hour))
			v.rng = rand.New(rand.NewPCG(uint64(i), 9))
			v.scheduleWatch(now)
			if d := v.watchAt.Sub(now); d < c.lo || d > c.hi {
				t.Fatalf("place %v at %v a minute: next read %v later, want %v–%v", c.pos, c.pace, d, c.lo, c.hi)
			}
		}
	}
	// Paused at a place 20 minutes away: a resume is shown within a minute.
	v := newWatcher(now, 20_000, 1_000, now.Add(time.Hour))
	v.view.state = "paused"
	v.scheduleWatch(now.Add(time.Hour))
	if d := v.watchAt.Sub(now.Add(time.Hour)); d < 56*time.Second || d > 58*time.Second {
		t.Errorf("paused 20 minutes away: next read %v later", d)
	}
	// A pre-queue 15 minutes before its opening: a minute's reads, and the
	// opening's read within 6 s of it once it is nearer than the next.
	v = newWatcher(now, 0, 0, now.Add(time.Hour))
	v.view = view{state: "prequeue", opensAt: now.Add(15 * time.Minute)}
	v.scheduleWatch(now)
	if d := v.watchAt.Sub(now); d < 56*time.Second || d > 58*time.Second {
		t.Errorf("pre-queue 15 minutes before the opening: next read %v later", d)
	}
	v.scheduleWatch(now.Add(15*time.Minute - 5*time.Second))
	if d := v.watchAt.Sub(v.view.opensAt); d < 0 || d >= OpeningRead {
		t.Errorf("the opening's read %v after it", d)
	}
	for r := time.Duration(0); r <= 2*time.Hour; r += 5 * time.Second {
		if worst := cadence.ReadInterval(r, 0.999999) + EdgeMaxAge + time.Second; worst > cadence.ShownWithin(r) {
			t.Fatalf("remaining %v: a read %v late, the rule %v", r, worst, cadence.ShownWithin(r))
		}
	}
	if cadence.ShownWithin(0) != 10*time.Second || cadence.ShownWithin(5*time.Minute) != 30*time.Second || cadence.ShownWithin(time.Hour) != time.Minute {
		t.Error("ShownWithin")
	}
}

// A far visitor's first read comes a far wait after its join, as the page's
// (its first view, not an empty one, sets it); a poll that finds the place
// near brings a read planned far away to the near cadence.
func TestWatchFollowsTheView(t *testing.T) {
	start := time.Unix(1000, 0)
	e := testEnv(&scripted{}, start)
	v := &Visitor{rng: rand.New(rand.NewPCG(5, 6)), phase: waiting}
	v.scheduleWatch(start) // at the join, before the answer is shown
	pace := 1000.0
	v.showPlace(e, start, place{State: "waiting", Position: 30_000, RatePerMinute: &pace})
	if d := v.watchAt.Sub(start); d < 56*time.Second {
		t.Fatalf("first read %v after a join 30 minutes from the turn", d)
	}
	v.showPlace(e, start.Add(10*time.Second), place{State: "waiting", Position: 40, RatePerMinute: &pace})
	if !v.watchAt.Equal(start.Add(10 * time.Second)) {
		t.Errorf("a place 2 s from the turn, 10 s after the watch began: the next read %v after it, want at once", v.watchAt.Sub(start))
	}
}

func TestWatchOpening(t *testing.T) {
	start := time.Unix(1000, 0)
	ctx := context.Background()
	opens := start.Add(time.Minute)
	const line = 1_000_000
	status := func(o map[string]any) map[string]any {
		a := map[string]any{"mode": "queue", "waiting": line, "ratePerMinute": 600, "admitPerMinute": 600, "claimTTLSeconds": 120, "opensAt": opens}
		maps.Copy(a, o)
		return a
	}
	tr := &scripted{answer: status(nil)}
	e := testEnv(tr, start)
	poll := opens.Add(3 * time.Minute)
	tk, err := token.NewTickets([]byte("ticket-secret-of-the-watch-test-0123"), "vestibule").
		Issue(room.Ticket{Room: "r", Visitor: "hG3k2cQ_visitor-id0123", Seq: 7, Draw: 0.5}, start, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	replied := opens.Add(-30 * time.Second)
	v := &Visitor{rng: rand.New(rand.NewPCG(3, 4)), pollAt: poll, phase: waiting, ticket: tk}
	v.view = view{state: "prequeue", opensAt: opens, repliedAt: replied}

	// Before the opening: nothing changes; the read after the opening is moved
	// within OpeningRead of it.
	now := opens.Add(-3 * time.Second)
	v.watch(ctx, e, now)
	if v.view.state != "prequeue" || !v.pollAt.Equal(poll) {
		t.Fatalf("before the opening: %+v", v.view)
	}
	if v.watchAt.Before(opens) || !v.watchAt.Before(opens.Add(OpeningRead)) {
		t.Errorf("the opening's read at %v, want within %v after it", v.watchAt.Sub(opens), OpeningRead)
	}
	// An opening moved earlier brings the poll to just after it, by a place
	// drawn at random (the draw is secret until the opening).
	earlier := opens.Add(-5 * time.Second)
	tr.set(status(map[string]any{"opensAt": earlier}))
	v.watch(ctx, e, now.Add(-10*time.Second)) // the cache holds the old answer until then: read after it
	if d := v.pollAt.Sub(earlier).Seconds(); d < 0.3*1/10 || d > 0.6*line/10 || !v.view.opensAt.Equal(earlier) {
		t.Errorf("earlier opening: poll %.1f s after it; view %+v", d, v.view)
	}
	// Open: the page places itself by the draw the seed gives its visitor id,
	// and its poll comes at the end of its last answer's budget (its place's
	// wait is far longer).
	e.applied.Store(0)
	seed := "3f9c1e0a7b6d5c4e3f2a1b0c9d8e7f60"
	d := room.DrawOf(seed, "hG3k2cQ_visitor-id0123")
	tr.set(status(map[string]any{"opensAt": earlier, "drawSeed": seed}))
	at := earlier.Add(2 * time.Second)
	v.watch(ctx, e, at)
	place := math.Floor(d*line) + 1
	if v.view.state != "waiting" || v.view.pos != place || v.view.pace != 600 || !v.pollAt.Equal(replied.Add(maxPollAfter-budgetMargin)) {
		t.Errorf("open: view %+v (want place %v), poll %v after the last answer", v.view, place, v.pollAt.Sub(replied))
	}
	// A line of seven: the draw cannot tell the place; nothing is shown, the
	// poll comes within 1–3 s.
	v.view = view{state: "prequeue", opensAt: earlier, repliedAt: replied}
	v.pollAt = poll
	tr.set(status(map[string]any{"opensAt": earlier, "drawSeed": seed, "waiting": 7}))
	at = at.Add(10 * time.Second)
	v.watch(ctx, e, at)
	if v.view.state != "prequeue" || v.pollAt.Before(at.Add(time.Second)) || v.pollAt.After(at.Add(3*time.Second)) {
		t.Errorf("a line of 7: view %+v, poll %v after the read", v.view, v.pollAt.Sub(at))
	}
	if pos, _, sure := estimatePlace(0.45, 7); pos != 4 || sure {
		t.Errorf("estimatePlace(0.45, 7) = %v, sure %v; want 4, not sure", pos, sure)
	}
	if pos, _, _ := estimatePlace(0.9999999, 10); pos != 10 {
		t.Errorf("estimatePlace past the end: %v", pos)
	}
}

// A crowd in virtual time through a pause, a resume and a change of pace:
// every visitor waiting at each change sees it on the page within a status
// read (≤ 8 s, plus the edge's second), mostly through the status, long before
// its next poll; and without the watch only the polls show it.
func TestVirtualCrowdChanges(t *testing.T) {
	for _, watch := range []bool{true, false} {
		d, cfg := virtualRoom(t, redistest.Single(t), 100, 300)
		c := Config{
			Visitors: 600, Shape: Burst, Seed: 3, CloseTab: 0.1, Leave: 0.05,
			ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
			Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour, NoWatch: !watch,
			Changes: []Change{{At: 30 * time.Second, Body: `{"mode":"paused"}`}, {At: 60 * time.Second, Body: `{"mode":"queue"}`},
				{At: 90 * time.Second, Body: `{"admitPerMinute":600}`}},
		}
		res, err := Run(context.Background(), d, d.AdminKey, c)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summarize()
		if !s.OK() || s.Errors != 0 || s.Outcomes["failed"] != 0 {
			t.Fatalf("watch %v: run not clean: %v, errors %d", watch, s.Outcomes, s.Errors)
		}
		if len(res.Marks) != 3 || res.LostGrants() != 0 || res.Granted() == 0 {
			t.Fatalf("marks %d, lost %d, granted %d", len(res.Marks), res.LostGrants(), res.Granted())
		}
		for k := range res.Marks {
			shown, poll, via, unseen := res.MarkDelays(k)
			if len(shown) == 0 {
				t.Fatalf("watch %v, change %d: nobody waiting saw it", watch, k)
			}
			p95, polled := QuantileDuration(shown, 0.95), QuantileDuration(poll, 0.95)
			t.Logf("watch %v, change %d: %d waiting, shown p95 %v (%d via status, %d unseen), next poll p95 %v",
				watch, k, len(shown), p95, via, unseen, polled)
			switch {
			case watch && p95 > cadence.ShownFloor:
				t.Errorf("change %d shown at p95 %v, want within a read", k, p95)
			case watch && via < len(shown)/2:
				t.Errorf("change %d: %d of %d shown by the status", k, via, len(shown))
			case !watch && via != 0:
				t.Errorf("no watch, yet %d shown by the status", via)
			}
		}
		// Each change shown within the rule for the wait that remained (the
		// pause's minute left out of it), at p95.
		for k, stopped := range []time.Duration{30 * time.Second, 0, 0} {
			shares, base := res.MarkShares(k, stopped)
			if len(shares) == 0 || len(base) == 0 {
				t.Fatalf("watch %v, change %d: no shares", watch, k)
			}
			if p95 := Quantile(shares, 0.95); watch && p95 > 1 {
				t.Errorf("change %d shown at p95 %.2f of the rule's bound", k, p95)
			}
		}
		// The pace change tells ETAs at the new pace.
		if ratios, base := res.MarkETARatios(2); len(ratios) == 0 || len(base) == 0 {
			t.Errorf("no ETA ratios after the pace change")
		}
		reads := res.Log.Total(KindSet(KindStatusCached, KindStatusFetched), 0, res.Log.Seconds())
		fetched := res.Log.Total(KindSet(KindStatusFetched), 0, res.Log.Seconds())
		if watch && (reads == 0 || fetched > int64(s.Span/time.Second)+2 || res.StatusBodyBytes() == 0) {
			t.Errorf("status reads %d, fetched %d over %v", reads, fetched, s.Span)
		}
		if !watch && reads != 0 {
			t.Errorf("no watch, yet %d status reads", reads)
		}
		polls := res.Log.Total(KindSet(KindPoll), 0, res.Log.Seconds())
		var waitPolls int64
		for _, v := range res.Visitors {
			waitPolls += int64(v.WaitPolls)
		}
		if polls != waitPolls {
			t.Errorf("log has %d polls, the visitors counted %d", polls, waitPolls)
		}
	}
}

// A pre-queue crowd: visitors join over a minute before the opening, and the
// page of each places itself within a few seconds of it, from the status.
func TestVirtualPrequeueOpening(t *testing.T) {
	d, cfg := virtualRoom(t, redistest.Single(t), 200, 600)
	c := Config{
		Waves: []Wave{{N: 400, Shape: Steady, Spread: time.Minute}}, Seed: 9,
		ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second, OpensAfter: time.Minute,
		Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour,
	}
	res, err := Run(context.Background(), d, d.AdminKey, c)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summarize()
	if !s.OK() || s.Errors != 0 || len(res.Marks) != 1 || res.Marks[0].Change != -1 {
		t.Fatalf("run not clean: %+v, marks %+v", s, res.Marks)
	}
	shown, poll, via, _ := res.MarkDelays(0)
	if len(shown) < 350 {
		t.Fatalf("%d pre-queue visitors at the opening", len(shown))
	}
	p50, p99 := QuantileDuration(shown, 0.5), QuantileDuration(shown, 0.99)
	t.Logf("opening → place seen p50 %v p99 %v (%d via status); first API answer p50 %v", p50, p99, via, QuantileDuration(poll, 0.5))
	if p99 > OpeningRead+cadence.ShownFloor {
		t.Errorf("place seen p99 %v", p99)
	}
	for _, v := range res.Visitors {
		if v.JoinETA >= 0 {
			t.Fatalf("visitor %d told an ETA in the pre-queue: %v", v.ID, v.JoinETA)
		}
	}
}

// Waves: a trickle evenly spaced, then a burst.
func TestCrowdWaves(t *testing.T) {
	start := time.Unix(0, 0)
	vs := Crowd(Config{Waves: []Wave{{N: 6, Shape: Even, Spread: 2 * time.Minute}, {N: 100, At: 2 * time.Minute}}}, start)
	if len(vs) != 106 {
		t.Fatalf("%d visitors", len(vs))
	}
	for i := range 6 {
		if got := vs[i].Arrive.Sub(start); got != time.Duration(i)*20*time.Second {
			t.Errorf("trickle %d at %v", i, got)
		}
	}
	for _, v := range vs[6:] {
		if d := v.Arrive.Sub(start); d < 2*time.Minute || d >= 2*time.Minute+10*time.Second {
			t.Errorf("burst visitor at %v", d)
		}
	}
	// Without waves, the same crowd as before (the figures of earlier runs hold).
	a := Crowd(Config{Visitors: 50, Seed: 4, CloseTab: 0.3}, start)
	b := Crowd(Config{Waves: []Wave{{N: 50, Shape: Burst}}, Seed: 4, CloseTab: 0.3}, start)
	for i := range a {
		if a[i].Arrive != b[i].Arrive || a[i].Behavior != b[i].Behavior || a[i].Think != b[i].Think {
			t.Fatalf("visitor %d differs with one wave", i)
		}
	}
}

// While the pace climbs, the page judges its place by the place's own pace
// on the climb (the status's ratePerMinute is the back of the line's): a
// place told its own pace is not polled sooner, and counts down on the climb,
// faster and faster; a poll answer at the climb's pace for its place counts
// on the climb the page last read, as it is by then.
func TestWatchCountsAPlaceDownOnTheClimb(t *testing.T) {
	start := time.Unix(1000, 0)
	ctx := context.Background()
	tr := &scripted{}
	e := testEnv(tr, start)
	climb := room.Climb{RatePerMinute: 60, SlopePerMinute: 180, TopPerMinute: 600}
	own := climb.PaceAt(60) // about 110 a minute; place 801's is about 301
	poll := start.Add(time.Minute)
	v := newWatcher(start, 60, own, poll)
	tr.set(map[string]any{"mode": "queue", "waiting": 800, "ratePerMinute": 301,
		"climb": map[string]float64{"ratePerMinute": 60, "slopePerMinute": 180, "topPerMinute": 600}})
	v.watch(ctx, e, start)
	if !v.pollAt.Equal(poll) {
		t.Errorf("a place told its own pace on the climb polled %v after the read, want its poll kept (%v)", v.pollAt.Sub(start), poll.Sub(start))
	}
	if v.view.climb == nil || *v.view.climb != climb || math.Abs(v.view.pace-own) > 1e-9 {
		t.Fatalf("view %+v, want counting on the climb at its own pace %.1f", v.view, own)
	}
	// In 10 s the climb passes 60/6 + 180/72 = 12.5 places, not 110/6.
	if got := v.view.estimate(start.Add(10 * time.Second)); math.Abs(got-(60-12.5)) > 1e-9 {
		t.Errorf("10 s on: place %.2f, want 47.5", got)
	}
	// A poll answer 30 s later at place 30, told the pace the climb (as it is
	// by then) gives place 30: counted on that climb.
	at := start.Add(30 * time.Second)
	later := climb.After(0.5)
	w := onClimb(v.seen, at, 30, later.PaceAt(30))
	if w == nil || *w != later {
		t.Errorf("a poll answer on the climb counts on %+v, want %+v", w, later)
	}
	if onClimb(v.seen, at, 30, 30) != nil || onClimb(v.seen, start.Add(3*time.Minute), 30, later.PaceAt(30)) != nil {
		t.Error("an answer at another pace, or long after the read, counts on the climb")
	}
	// The climb ends at the top: the place counts at the status's pace.
	tr.set(map[string]any{"mode": "queue", "waiting": 800, "ratePerMinute": 600})
	v.view.pace = 600
	v.watch(ctx, e, start.Add(5*time.Second))
	if v.view.climb != nil || v.view.pace != 600 || !v.pollAt.Equal(poll) {
		t.Errorf("after the climb: view %+v, poll %v; want off the climb at 600, the poll kept", v.view, v.pollAt.Sub(start))
	}
}
