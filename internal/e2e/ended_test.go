package e2e

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
)

// The end of a visit: a visitor taken to the site who comes back to the
// waiting page, against a scripted room.

// waitOrigin waits until the tab has gone to the scripted room's origin page.
func waitOrigin(t *testing.T, ctx context.Context, navigations iter.Seq2[page.EventFrameNavigated, error], s *scripted) {
	t.Helper()
	for ev, err := range navigations {
		if err != nil {
			t.Fatalf("never reached the origin: %v; page shows %s", err, pageSummary(ctx))
		}
		if ev.Frame.ParentID == "" && strings.HasPrefix(ev.Frame.URL, s.srv.URL+"/origin/") {
			return
		}
	}
}

// admittedReply is a scripted room's admission, to its /origin/ page.
func admittedReply(s *scripted) map[string]any {
	return map[string]any{"state": "admitted", "position": 0, "waiting": 0, "etaSeconds": 0, "pollAfterMs": 0,
		"entryToken": "entry.token.sig", "originUrl": s.srv.URL + "/origin/",
		"grantExpiresAt": time.Now().Add(2 * time.Minute).UTC().Format(time.RFC3339)}
}

// TestVisitEnded: a visitor admitted and taken to the site who comes back to
// the waiting page (the site's "leave", the gate when the session ends) is
// told the visit has ended, in English and Korean, with the button to join
// again, which joins; not that the turn is used in another tab, and without
// joining by itself.
func TestVisitEnded(t *testing.T) {
	var s *scripted
	s = scriptedRoom(t, func(n int) map[string]any {
		if n == 0 {
			return admittedReply(s)
		}
		return map[string]any{"state": "waiting", "position": 3, "etaSeconds": 30, "ratePerMinute": 6, "pollAfterMs": 60000}
	})
	v := visitor(t)
	navigations := chromedp.Events(v, page.FrameNavigated)
	do(t, v, chromedp.Navigate(pageURL(s.srv.URL, "ended")))
	waitOrigin(t, v, navigations, s)

	do(t, v, chromedp.Navigate(pageURL(s.srv.URL, "ended")))
	waitState(t, v, "ended", wait)
	if got := text(t, v, "title"); got != "Your visit has ended" {
		t.Errorf("title %q", got)
	}
	if got := text(t, v, "lead"); got != "Your turn was used. To come back, join the line again." {
		t.Errorf("lead %q", got)
	}
	if browsertest.Eval[bool](t, v, `document.getElementById("rejoin").hidden`) {
		t.Errorf("no button to join again: %s", pageSummary(v))
	}
	if browsertest.Eval[bool](t, v, `document.body.innerText.includes("another tab")`) {
		t.Errorf("the page says the turn is used in another tab: %s", pageSummary(v))
	}
	waitJS(t, v, `document.getElementById("announce").textContent.includes("Your visit has ended")`, wait)
	chooseLang(t, v, "ko")
	waitJS(t, v, `document.documentElement.lang === "ko"`, wait)
	if got := text(t, v, "title") + " " + text(t, v, "lead"); got != "방문이 끝났습니다 입장 차례를 이미 사용했습니다. 다시 들어오시려면 줄을 다시 서 주세요." {
		t.Errorf("Korean: %q", got)
	}
	chooseLang(t, v, "en")
	waitJS(t, v, `document.documentElement.lang === "en"`, wait)
	// A refresh says the same, still without joining.
	do(t, v, chromedp.Reload())
	waitState(t, v, "ended", wait)
	if n := s.requests(); n != 1 {
		t.Errorf("%d place requests; the ended visit joined again by itself", n)
	}

	do(t, v, chromedp.Click(chromedp.ID("rejoin")))
	waitState(t, v, "waiting", wait)
	if got := ticketOf(t, v, "ended"); got != fakeTicket || s.requests() != 2 {
		t.Errorf("after \"join again\": ticket %q after %d place requests; want a new join", got, s.requests())
	}
}

// TestVisitEndedInAnotherTab: a tab open while the other one takes the
// visitor to the site says the turn is used in another tab, and keeps saying
// so when it takes the lead; the tab that went to the site, back on the
// waiting page, says the visit has ended.
func TestVisitEndedInAnotherTab(t *testing.T) {
	var mu sync.Mutex
	admitted := false
	var s *scripted
	s = scriptedRoom(t, func(n int) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		if admitted {
			return admittedReply(s)
		}
		return map[string]any{"state": "waiting", "position": 2, "etaSeconds": 2, "pollAfterMs": 1000}
	})
	v := visitor(t)
	first, _ := tab(t, v)
	navigations := chromedp.Events(first, page.FrameNavigated)
	do(t, first, chromedp.Navigate(pageURL(s.srv.URL, "tabs")))
	waitJS(t, first, `document.body.dataset.state === "waiting" && document.body.dataset.leader === "1"`, wait)
	second, _ := tab(t, v)
	do(t, second, chromedp.Navigate(pageURL(s.srv.URL, "tabs")))
	waitJS(t, second, `document.body.dataset.state === "waiting" && document.body.dataset.leader === "0"`, wait)

	mu.Lock()
	admitted = true
	mu.Unlock()
	waitOrigin(t, first, navigations, s)
	// The first tab left the page: the second leads now, and still says where the turn went.
	waitJS(t, second, `document.body.dataset.leader === "1"`, wait)
	if got := browsertest.Eval[string](t, second, `document.body.dataset.state + ": " + document.getElementById("lead").textContent`); got != "admitted: Your turn is being used in another tab or window of this browser." {
		t.Errorf("the tab left behind shows %q", got)
	}
	// Back on the waiting page, the first tab (following the second) says the visit has ended.
	do(t, first, chromedp.Navigate(pageURL(s.srv.URL, "tabs")))
	waitState(t, first, "ended", wait)
	if got := browsertest.Eval[string](t, second, `document.body.dataset.state`); got != "admitted" {
		t.Errorf("the tab left behind changed to %q", got)
	}
}
