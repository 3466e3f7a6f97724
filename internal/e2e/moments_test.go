package e2e

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The moments of a visit the page follows through the room's status between
// polls (watch.js): against scripted rooms whose status answers the tests
// change.

// TestPrequeueOpening: a pre-queue across its opening. The countdown never
// shows 00:00: from the opening the page says the line is opening; it reads
// the room's status a few seconds after the opening, computes its draw from
// the seed the status reveals and the visitor id of its ticket, and shows the
// place the draw gives, "about", counting down, with no poll; a page that
// cannot read its visitor id shows that it is finding the place, until the
// poll gives it.
func TestPrequeueOpening(t *testing.T) {
	const line = 200_000
	// The browser first, then the opening (5–6 s from now, as the server
	// writes it): a browser slow to start does not load the page after it.
	a, b := visitor(t), visitor(t)
	do(t, a, chromedp.Navigate("about:blank"))
	do(t, b, chromedp.Navigate("about:blank"))
	opens := time.Now().Add(6 * time.Second).Truncate(time.Second)
	opensAt := opens.UTC().Format(time.RFC3339)
	// A seed whose draw for the visitor is in the middle of the line, where
	// the draw tells the place within a tenth.
	const visitorID = "hG3k2cQ_visitor-id0123"
	var seed string
	var d float64
	for i := 0; ; i++ {
		seed = fmt.Sprintf("%032x", i)
		if d = room.DrawOf(seed, visitorID); d > 0.2 && d < 0.8 {
			break
		}
	}
	want := int(math.Floor(d*line)) + 1
	status := map[string]any{"opensAt": opensAt, "waiting": line, "admitPerMinute": 600, "ratePerMinute": 600,
		"claimTTLSeconds": 120, "drawCommitment": room.DrawCommitment(seed), "drawSeed": seed}
	prequeue := func(extra map[string]any) map[string]any {
		r := map[string]any{"state": "prequeue", "position": 0, "waiting": line, "etaSeconds": nil, "opensAt": opensAt, "pollAfterMs": 60000}
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	drawn := scriptedRoom(t, func(int) map[string]any {
		return prequeue(map[string]any{"ticket": ticketShape(3, "opening", visitorID)})
	})
	drawn.setStatus(status)
	// Without a visitor id to draw from (an opaque ticket), the server's
	// poll, planned after the opening, gives the place.
	unshared := scriptedRoom(t, func(n int) map[string]any {
		if n == 0 {
			return prequeue(map[string]any{"pollAfterMs": int(time.Until(opens.Add(10*time.Second)) / time.Millisecond)})
		}
		return map[string]any{"state": "waiting", "position": 480, "waiting": line, "etaSeconds": 48, "ratePerMinute": 600, "pollAfterMs": 60000}
	})
	unshared.setStatus(status)
	shared := drawn

	beforeLoad(t, a, watchPage)
	beforeLoad(t, b, watchPage)
	do(t, a, chromedp.Navigate(pageURL(shared.srv.URL, "opening")))
	do(t, b, chromedp.Navigate(pageURL(unshared.srv.URL, "opening")))
	waitState(t, a, "prequeue", wait)
	waitState(t, b, "prequeue", wait)
	// The opening's read comes within 6 s of it (and a second of the clock's
	// correction, a Date header being whole seconds).
	waitState(t, a, "waiting", time.Until(opens.Add(9*time.Second)))
	waitJS(t, b, `+document.body.dataset.polls >= 2 && document.body.dataset.state === "waiting"`, time.Until(opens.Add(15*time.Second)))
	// A few samples of each page after the last change.
	for _, v := range []context.Context{a, b} {
		n := browsertest.Eval[int](t, v, `__samples.length`)
		waitJS(t, v, fmt.Sprintf(`__samples.length >= %d`, n+3), wait)
	}

	check := func(name string, got []sample, first func(sample)) time.Time {
		t.Helper()
		placed := -1
		for i, g := range got {
			if g.Countdown == "00:00" {
				t.Errorf("%s: sample %d (%v after the opening) shows 00:00", name, i, g.time().Sub(opens))
			}
			if placed < 0 && g.State == "waiting" {
				placed = i
			}
		}
		if placed < 0 {
			t.Fatalf("%s: never shown waiting: %+v", name, got)
		}
		p := got[placed]
		after := p.time().Sub(opens)
		t.Logf("%s: placed %v after the opening: %+v", name, after.Round(time.Millisecond), p)
		if after > 8*time.Second || after < 0 {
			t.Errorf("%s: shown waiting %v after the opening, want within 8 s of it", name, after)
		}
		if p.Polls != 1 {
			t.Errorf("%s: placed after %d requests, want the join alone (no poll)", name, p.Polls)
		}
		// Between the opening (a second's correction aside) and the place,
		// the page said it was opening; before, it counted down.
		seen := false
		for _, g := range got[:placed] {
			if g.time().After(opens.Add(1500*time.Millisecond)) && g.Countdown != "Opening now…" {
				t.Errorf("%s: %v after the opening the countdown shows %q: %+v", name, g.time().Sub(opens), g.Countdown, g)
			}
			seen = seen || g.Countdown == "Opening now…"
		}
		if after > 2*time.Second && !seen {
			t.Errorf("%s: the page never said the line was opening", name)
		}
		first(p)
		return p.time()
	}
	placed := check("with its draw", browsertest.Eval[[]sample](t, a, `__samples`), func(p sample) {
		// ⌊draw × 200,000⌋ + 1, counting down at 10 a second.
		if n := shownPosition(t, p.Pos); !p.About || n > want || n < want-100 {
			t.Errorf("first shown as %+v, want about %d", p, want)
		}
	})
	waitJS(t, a, `document.body.dataset.counting === "1" && document.getElementById("announce").textContent.includes("about number ")`, wait)
	if n := shared.requests(); n != 1 {
		t.Errorf("with its draw: %d place requests, want the join alone", n)
	}
	// Before the place: the join's read of the room's page, and the opening's.
	var before []time.Duration
	for _, r := range shared.statusReads() {
		if !r.After(placed) {
			before = append(before, r.Sub(opens).Round(time.Millisecond))
		}
	}
	if len(before) > 2 || len(before) == 0 || before[len(before)-1] < 0 {
		t.Errorf("with its draw: status reads at %v from the opening before the place; want the join's and one after the opening", before)
	}
	got := browsertest.Eval[[]sample](t, b, `__samples`)
	check("without a visitor id", got, func(p sample) {
		if p.Pos != "–" || p.About || p.Note != "Finding your place…" || p.ETA != "–" {
			t.Errorf("first shown as %+v, want the place unknown, finding it", p)
		}
	})
	last := got[len(got)-1]
	if n := shownPosition(t, last.Pos); n > 480 || n < 400 || last.Note != "" {
		t.Errorf("after the poll: %+v, want 480 or counted down from it", last)
	}
}

// TestPaceChange: the status's pace changes while the page counts down
// between polls. Slower (60 → 1 a minute): the wait shown follows within a
// read (minutes, not "under 1 min"), stays so, and the poll planned stays
// where it was; faster (1 → 600 with a poll planned 5 minutes away): a poll
// comes a second after the read that saw it. From the first change the page
// runs on virtual time: its seconds are counted, not waited for.
func TestPaceChange(t *testing.T) {
	s := scriptedRoom(t, func(n int) map[string]any {
		if n == 0 {
			return map[string]any{"state": "waiting", "position": 7, "etaSeconds": 7, "ratePerMinute": 60, "pollAfterMs": 300000}
		}
		return map[string]any{"state": "waiting", "position": 1, "etaSeconds": 1, "ratePerMinute": 600, "pollAfterMs": 300000}
	})
	s.setStatus(map[string]any{"ratePerMinute": 60})
	v := visitor(t)
	beforeLoad(t, v, watchPage)
	do(t, v, chromedp.Navigate(pageURL(s.srv.URL, "pace")))
	waitState(t, v, "waiting", wait)
	// At 60 a minute, 7 reaches the front within seconds: under a minute.
	waitJS(t, v, `document.getElementById("eta").textContent === "Under 1 min"`, wait)

	s.setStatus(map[string]any{"ratePerMinute": 1})
	slower := pageNow(t, v)
	took := advanceUntil(t, v, `/^\d+–\d+ min$/.test(document.getElementById("eta").textContent)`, 10*time.Second)
	t.Logf("slower: shown %v after the change", took)
	// The wait is the place shown at the new pace: a minute for each.
	ok, err := chromedp.Run(v, chromedp.Evaluate[bool](`import("/js/format.js").then(f => {
		const pos = +document.getElementById("position").textContent;
		return document.getElementById("eta").textContent === f.etaRange(pos * 60);
	})`, chromedp.EvalAwaitPromise))
	if err != nil || !ok {
		t.Errorf("the wait shown is not the place shown at one a minute (%v): %s", err, pageSummary(v))
	}
	// Ten seconds of the page's time at the slower pace, a read or two more.
	// (The place counted down to 1 meanwhile, a minute from the turn at the
	// new pace: the page brings its poll forward to 18–36 s after the read, as
	// it should, so the test looks no further.)
	advance(t, v, 10*time.Second)
	if n := len(after(browsertest.Eval[[]float64](t, v, `__reads`), slower)); n < 2 {
		t.Errorf("%d status reads in the %v after the slower pace, want one every 7 s ± 1 s", n, took+10*time.Second)
	}
	shown := false
	for _, g := range browsertest.Eval[[]sample](t, v, `__samples`) {
		if float64(g.At) < slower {
			continue
		}
		if shown && !minutes.MatchString(g.ETA) {
			t.Errorf("after the slower pace was shown, the wait went back to %q", g.ETA)
			break
		}
		shown = shown || minutes.MatchString(g.ETA)
	}
	if n := s.requests(); n != 1 {
		t.Errorf("%d place requests: a slower pace must leave the poll where it was", n)
	}

	s.setStatus(map[string]any{"ratePerMinute": 600})
	faster := pageNow(t, v)
	advanceUntil(t, v, `__asks.length > 1`, 12*time.Second) // the poll planned is 5 minutes away
	saw := after(browsertest.Eval[[]float64](t, v, `__reads`), faster)[0]
	polled := browsertest.Eval[[]float64](t, v, `__asks`)[1]
	// At place 1 the new wait is 0.1 s: the poll comes a second after the read.
	gap := time.Duration(polled-saw) * time.Millisecond
	t.Logf("faster: read %v after the change, polled %v after the read", time.Duration(saw-faster)*time.Millisecond, gap)
	if gap < time.Second || gap > 1500*time.Millisecond {
		t.Errorf("the poll came %v after the read that saw the faster pace, want a second", gap)
	}
	advanceUntil(t, v, `+document.body.dataset.polls === 2`, 5*time.Second)
}

// TestPauseResumeByStatus: a pause and a resume seen in the status show on
// the page within a read, without a poll; near the turn (90 s away) the
// status is read every 7 s ± 1 s while the page is visible, not at all for a
// while when hidden, and at once when it is visible again. From the pause the
// page runs on virtual time.
func TestPauseResumeByStatus(t *testing.T) {
	s := scriptedRoom(t, func(int) map[string]any {
		return map[string]any{"state": "waiting", "position": 9, "etaSeconds": 90, "ratePerMinute": 6, "pollAfterMs": 300000}
	})
	s.setStatus(map[string]any{"ratePerMinute": 6})
	v := visitor(t)
	// The page draws its planned poll at 30–60 % of the wait, at random:
	// fixed at 30 %, it falls inside the hidden minute below, never beside a
	// visibility change, so a place request at one is the change's own.
	beforeLoad(t, v, watchPage, backgroundHooks, `Math.random = () => 0;`)
	do(t, v, chromedp.Navigate(pageURL(s.srv.URL, "pause")))
	waitState(t, v, "waiting", wait)

	s.setStatus(map[string]any{"mode": "paused"})
	advanceUntil(t, v, `document.body.dataset.state === "paused"`, 10*time.Second)
	if got := text(t, v, "title"); got != "The line is paused" {
		t.Errorf("paused title %q", got)
	}
	if n := shownPosition(t, text(t, v, "position")); n > 9 || n < 7 || text(t, v, "eta") != "–" {
		t.Errorf("paused at %d (wait %q); want the place shown when it paused, no wait", n, text(t, v, "eta"))
	}
	advanceUntil(t, v, `document.getElementById("announce").textContent.includes("paused")`, 5*time.Second)
	paused, pausedAt := text(t, v, "position"), pageNow(t, v)
	// Twenty seconds of the page's time paused: at 6 a minute a count would
	// have moved the place twice.
	advance(t, v, 20*time.Second)
	for _, g := range browsertest.Eval[[]sample](t, v, `__samples`) {
		if float64(g.At) >= pausedAt && g.Pos != paused {
			t.Errorf("paused, the place moved from %s to %s", paused, g.Pos)
			break
		}
	}
	if c := browsertest.Eval[string](t, v, `document.body.dataset.counting`); c != "0" {
		t.Errorf("paused, the page is counting (%q)", c)
	}

	s.setStatus(map[string]any{"ratePerMinute": 6})
	advanceUntil(t, v, `document.body.dataset.state === "waiting"`, 10*time.Second)
	advanceUntil(t, v, `document.body.dataset.counting === "1" && /^\d+–\d+ min$/.test(document.getElementById("eta").textContent)`, 5*time.Second)
	advanceUntil(t, v, `document.getElementById("announce").textContent.includes("in line")`, 5*time.Second)
	if n := s.requests(); n != 1 {
		t.Errorf("%d place requests: the pause and the resume came through the status, with no poll", n)
	}
	reads := browsertest.Eval[[]float64](t, v, `__reads`)
	for i := 1; i < len(reads); i++ {
		if gap := reads[i] - reads[i-1]; gap < 5900 || gap > 8100 {
			t.Errorf("status read %d came %.0f ms after the one before, want 7 s ± 1 s", i, gap)
		}
	}

	// Hidden: read once a minute, so not in the next 45 s (at 7 s, six
	// reads); visible again after more than 7 s: read at once.
	browsertest.Eval[bool](t, v, `__hide(true)`)
	hidden := pageNow(t, v)
	advance(t, v, 45*time.Second)
	if n := len(after(browsertest.Eval[[]float64](t, v, `__reads`), hidden)); n != 0 {
		t.Errorf("%d status reads in the 45 s the page was hidden", n)
	}
	browsertest.Eval[bool](t, v, `__hide(false)`)
	back := pageNow(t, v)
	advance(t, v, 1500*time.Millisecond)
	if r := after(browsertest.Eval[[]float64](t, v, `__reads`), back); len(r) == 0 {
		t.Errorf("no status read within 1.5 s of the page becoming visible again")
	} else {
		t.Logf("read %v after the page was visible again", time.Duration(r[0]-back)*time.Millisecond)
	}
	// The visibility changes bring no poll: the only place request after the
	// join is the one the count plans near the turn (30–60 % of the wait).
	asks := browsertest.Eval[[]float64](t, v, `__asks`)
	if len(asks) > 2 {
		t.Errorf("%d place requests, want the join and at most the poll the count plans", len(asks))
	}
	for _, at := range asks[1:] {
		if math.Abs(at-hidden) < 1000 || at >= back {
			t.Errorf("a place request %.0f ms after the page was hidden (visible again at %.0f ms)", at-hidden, back-hidden)
		}
	}
}

// TestFarPauseWithinTheRule: a visitor 30 minutes from the turn (30,000 at
// 1,000 a minute) reads the status about once a minute, not every 7 s, and a
// pause made just after one of those reads is still shown within the rule
// (max(10 s, 10 % of the 30 minutes), at most 60 s). The page runs on
// virtual time, so the minutes pass without the test waiting for them.
func TestFarPauseWithinTheRule(t *testing.T) {
	s := scriptedRoom(t, func(int) map[string]any {
		return map[string]any{"state": "waiting", "position": 30000, "etaSeconds": 1800, "ratePerMinute": 1000, "pollAfterMs": 300000}
	})
	s.setStatus(map[string]any{"ratePerMinute": 1000, "waiting": 40000})
	v := visitor(t)
	beforeLoad(t, v, watchPage)
	do(t, v, chromedp.Navigate(pageURL(s.srv.URL, "far")))
	waitState(t, v, "waiting", wait)

	// Three minutes of the page's time: about three reads (one every 57 s ± 1 s).
	advance(t, v, 3*time.Minute)
	reads := browsertest.Eval[[]float64](t, v, `__reads`)
	if len(reads) < 2 || len(reads) > 4 {
		t.Fatalf("%d status reads in 3 minutes 30 minutes from the turn, want about 3 (7 s apart would be 25)", len(reads))
	}
	for i := 1; i < len(reads); i++ {
		if gap := reads[i] - reads[i-1]; gap < 55900 || gap > 58100 {
			t.Errorf("read %d came %.0f ms after the one before, want 57 s ± 1 s", i, gap)
		}
	}
	// Paused just after a read (the worst moment): shown at the next one,
	// within 60 s of the page's time.
	last := len(reads)
	for browsertest.Eval[int](t, v, `__reads.length`) == last {
		advance(t, v, time.Second)
	}
	s.setStatus(map[string]any{"mode": "paused", "ratePerMinute": 1000, "waiting": 40000})
	pausedAt := browsertest.Eval[float64](t, v, `Date.now()`)
	for range 70 {
		if browsertest.Eval[string](t, v, `document.body.dataset.state`) == "paused" {
			break
		}
		advance(t, v, time.Second)
	}
	shown := browsertest.Eval[float64](t, v, `document.body.dataset.state === "paused" ? Date.now() : 0`)
	if shown == 0 {
		t.Fatalf("the pause was not shown within 70 s of the page's time; page shows %s", pageSummary(v))
	}
	delay := time.Duration(shown-pausedAt) * time.Millisecond
	t.Logf("paused just after a read; shown %v later (the rule: 60 s)", delay)
	if delay > 60*time.Second {
		t.Errorf("the pause was shown %v after it, past the rule's 60 s", delay)
	}
	if delay < 30*time.Second {
		t.Errorf("the pause was shown %v after it: the page read sooner than its cadence", delay)
	}
	if n := s.requests(); n != 1 {
		t.Errorf("%d place requests; want the join alone (the poll is 5 minutes away)", n)
	}
}
