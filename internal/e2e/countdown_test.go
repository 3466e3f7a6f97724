package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
)

// TestCountdownBetweenPolls: a visitor far back is told to come back after a
// while; in between, the place and the estimate count down on screen (said to
// be "about"), without a request and without a word in the live region; the
// next answer corrects them, upwards too; a paused room does not count; the
// count stops at 1, never 0, until the server says otherwise.
func TestCountdownBetweenPolls(t *testing.T) {
	replies := []map[string]any{
		// Far back: 20 let in a second; come back in 8 s. The wait, 3–7 min,
		// shows 3–6 min once under 277 s.
		{"state": "waiting", "position": 5560, "etaSeconds": 278, "pollAfterMs": 8000},
		// Fewer got in than the rate promised (5,400 by now; 5,460 after any
		// second past the fifth): the place goes up to 5,470, and the rate falls
		// to one every 10 s.
		{"state": "waiting", "position": 5470, "etaSeconds": 54700, "pollAfterMs": 4000},
		// Paused: nothing counts, whatever the ETA.
		{"state": "paused", "position": 5440, "etaSeconds": 272, "pollAfterMs": 3000},
		// A full room: nobody admitted in the last minute (ratePerMinute 0), the
		// ETA from the configured rate. Nothing counts.
		{"state": "waiting", "position": 5430, "etaSeconds": 272, "ratePerMinute": 0, "pollAfterMs": 3000},
		// Near the front at 3 a second (the measured rate, 180 a minute): 1
		// within a second, and not below.
		{"state": "waiting", "position": 3, "etaSeconds": 1, "ratePerMinute": 180, "pollAfterMs": 4000},
		// Then a long wait that counts slowly, for the accessibility check.
		{"state": "waiting", "position": 40, "etaSeconds": 400, "pollAfterMs": 600000},
	}
	answered := map[int]bool{5560: true, 5470: true, 5440: true, 5430: true, 3: true, 40: true}
	s := scriptedRoom(t, func(n int) map[string]any { return replies[min(n, len(replies)-1)] })
	v := visitor(t)
	beforeLoad(t, v, watchPage)
	do(t, v, chromedp.Navigate(pageURL(s.srv.URL, "far")))
	waitState(t, v, "waiting", wait)
	// The "notify me" button is offered while the browser has not been asked.
	if p := browsertest.Eval[string](t, v, `Notification.permission`); p == "default" {
		if browsertest.Eval[bool](t, v, `document.getElementById("notify").hidden`) {
			t.Errorf("no \"notify me\" button while notifications were never asked for")
		}
	} else {
		t.Logf("notifications are %q in this browser: no button to check", p)
	}
	// The last answer: a slow count from 40, which stays put long enough to
	// check the page's accessibility while it counts.
	waitJS(t, v, `+document.body.dataset.polls >= 6 && +document.getElementById("position").textContent <= 40`, 3*wait)
	checkAxe(t, v)   // "about", the counting line and the "notify me" button
	var got []sample // the places shown, each change once
	for _, g := range browsertest.Eval[[]sample](t, v, `__samples`) {
		g.At = 0
		if g.Pos != "" && g.Pos != "–" && (len(got) == 0 || got[len(got)-1] != g) {
			got = append(got, g)
		}
	}
	said := browsertest.Eval[[]string](t, v, `__said`)
	t.Logf("shown: %v", got)
	t.Logf("said: %q", said)

	var (
		prev                                        = 0
		fell, etaMoved, pace, rose, front, pz, full bool
		firstETA                                    = ""
	)
	for i, g := range got {
		n := shownPosition(t, g.Pos)
		// Never under 1; never up but to what an answer said; counted only
		// while waiting; a paused place stands still.
		if n < 1 {
			t.Errorf("shown[%d] = %+v: below 1 before the server said admitted", i, g)
		}
		if i > 0 && n > prev && !answered[n] {
			t.Errorf("shown[%d] = %+v: the place rose from %d, to a value no answer said", i, g, prev)
		}
		if g.About && g.State != "waiting" {
			t.Errorf("shown[%d] = %+v: counted while not waiting", i, g)
		}
		if g.State == "paused" {
			pz = true
			if n != 5440 || g.About {
				t.Errorf("shown[%d] = %+v: a paused place moved or was counted", i, g)
			}
		}
		// Before the first poll was sent (only the enqueue): the place fell,
		// marked "about", the wait's range moved, and the line gave the pace.
		if g.Polls == 1 && g.State == "waiting" {
			if firstETA == "" {
				firstETA = g.ETA
			}
			if n < 5560 {
				fell = fell || g.About
				pace = pace || strings.Contains(g.Updated, "about 1,200 a minute")
			}
			etaMoved = etaMoved || g.ETA != firstETA
		}
		// A full room's place stands still, whatever its ETA says.
		if g.State == "waiting" && g.Polls == 4 {
			full = true
			if n != 5430 || g.About {
				t.Errorf("shown[%d] = %+v: counted in a room that admitted nobody in the last minute", i, g)
			}
		}
		// The second answer replaced the count, up from what was counted.
		if n == 5470 && prev < 5470 {
			rose = true
		}
		// Near the front: 1, counted down from 3 before the sixth request.
		if n == 1 && g.Polls == 5 && g.About {
			front = true
		}
		prev = n
	}
	if !fell {
		t.Errorf("the place did not count down before the first poll")
	}
	if !etaMoved {
		t.Errorf("the estimate (%s) did not move before the first poll", firstETA)
	}
	if !pace {
		t.Errorf("the line under the card never gave the pace it counts at (about 1,200 a minute)")
	}
	if !rose {
		t.Errorf("the second answer (5,470) did not replace the count below it")
	}
	if !pz {
		t.Errorf("the paused answer was never shown")
	}
	if !full {
		t.Errorf("the full room's answer (ratePerMinute 0) was never shown")
	}
	if !front {
		t.Errorf("the count from 3 at 3 a second never showed 1 before the next poll")
	}
	// The live region spoke when the state changed, with the places answers
	// gave, never with a counted one.
	if len(said) == 0 || !strings.Contains(said[0], "5,560") {
		t.Errorf("first announcement %q, want the first answer's place (5,560)", said)
	}
	for _, m := range said {
		if strings.Contains(m, "number") && !strings.Contains(m, "5,560") && !strings.Contains(m, "5,470") && !strings.Contains(m, "5,430") &&
			!strings.Contains(m, "number 3 ") && !strings.Contains(m, "number 40 ") {
			t.Errorf("announced %q: a counted place, not one the server gave", m)
		}
	}
	s.checkPace()
}

// TestBackgroundTurn: a visitor who allowed notifications and clicked on the
// page once waits in a tab in the background. When the poll says admitted,
// the tab's title changes, a tone plays and a notification says it is their
// turn; the tab holds the turn until the visitor is back, then goes to the
// site with the token; it never polled sooner than it was told.
func TestBackgroundTurn(t *testing.T) {
	var admit sync.Mutex
	admitted := false
	var s *scripted
	s = scriptedRoom(t, func(n int) map[string]any {
		admit.Lock()
		defer admit.Unlock()
		if !admitted {
			return map[string]any{"state": "waiting", "position": 2, "etaSeconds": 2, "pollAfterMs": 1500}
		}
		return map[string]any{"state": "admitted", "position": 0, "waiting": 0, "etaSeconds": 0, "pollAfterMs": 0,
			"entryToken": "entry.token.sig", "originUrl": s.srv.URL + "/origin/",
			"grantExpiresAt": time.Now().Add(2 * time.Minute).UTC().Format(time.RFC3339)}
	})
	v := visitor(t)
	beforeLoad(t, v, backgroundHooks)
	// The visitor allowed notifications for the room's site (as the "notify
	// me" button would have asked).
	if _, err := chromedp.CallBrowser(v, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: "granted",
		Origin: s.srv.URL, BrowserContextID: chromedp.FromContext(v).BrowserContextID,
	}); err != nil {
		t.Fatal(err)
	}
	navigations := chromedp.Events(v, page.FrameNavigated)
	do(t, v, chromedp.Navigate(pageURL(s.srv.URL, "background")))
	waitState(t, v, "waiting", wait)
	// Allowed already: no button, a line saying a notification will come.
	waitJS(t, v, `document.getElementById("notify").hidden && !document.getElementById("notify-note").hidden`, wait)
	if n := browsertest.Eval[int](t, v, `__audio`); n != 0 {
		t.Errorf("%d audio contexts made before the visitor did anything", n)
	}
	checkAxe(t, v) // the line that says a notification will come
	do(t, v, chromedp.Click(chromedp.ID("title")))
	waitJS(t, v, `__audio === 1`, wait)

	waitJS(t, v, `__hide(true)`, wait)
	before := s.requests()
	waitJS(t, v, fmt.Sprintf(`+document.body.dataset.polls >= %d`, before+1), wait) // it goes on polling, hidden
	admit.Lock()
	admitted = true
	admit.Unlock()

	waitJS(t, v, `document.title.startsWith("★ It's your turn")`, wait)
	waitJS(t, v, `__notes.length === 1 && __tones > 0`, wait)
	note := browsertest.Eval[map[string]string](t, v, `__notes[0]`)
	if title := browsertest.Eval[string](t, v, `document.title`); note["title"] != title || note["body"] == "" {
		t.Errorf("notification %v; want the title %q and a line to come back", note, title)
	}
	// Hidden, it holds the turn: still here after 3 s of the page's own time,
	// twice the 1.5 s a visible tab waits. The page runs on virtual time from
	// here: its timers fire as they fall due, without waiting for the clock,
	// and time stops when the budget is spent (so nothing polls for the test
	// in the page: chromedp's Poll runs on the page's timers).
	advance(t, v, 3*time.Second)
	if got := browsertest.Eval[string](t, v, `location.pathname + " " + document.body?.dataset.state`); got != "/ admitted" {
		t.Errorf("a hidden tab moved on before its visitor came back: %s", got)
	}

	// Back: it goes to the site, with the token in the fragment, 1.5 s of
	// its time later (well before the hold's own deadline).
	if !browsertest.Eval[bool](t, v, `__hide(false)`) {
		t.Fatal("could not show the page again")
	}
	advance(t, v, 2*time.Second)
	var landed string
	for ev, err := range navigations {
		if err != nil {
			t.Fatalf("never reached the origin: %v; page shows %s", err, pageSummary(v))
		}
		if ev.Frame.ParentID == "" && strings.HasPrefix(ev.Frame.URL, s.srv.URL+"/origin/") {
			landed = ev.Frame.URL + ev.Frame.URLFragment
			break
		}
	}
	if !strings.HasSuffix(landed, "#token=entry.token.sig") {
		t.Errorf("landed on %s, want the token in the fragment", landed)
	}
	s.checkPace()
}
