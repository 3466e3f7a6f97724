package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// &lang= in the page's address picks the page's language over the
// browser's; and in a pre-queue the page shows the visitor's lottery
// reference (visitor id and draw, as their ticket holds them) with the
// command that checks it.
func TestLangParamAndDrawReference(t *testing.T) {
	s := stack(t, "")
	room := redistest.Room(t)
	cfg := baseSettings(s)
	cfg["opensAt"] = time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	putRoom(t, s, room, cfg)

	// An English browser asking for Korean.
	ko := visitor(t)
	do(t, ko, chromedp.Navigate(pageURL(s.URL(), room)+"&lang=ko"))
	waitState(t, ko, "prequeue", wait)
	if got := text(t, ko, "title"); got != "곧 대기열이 열립니다" {
		t.Errorf("title with &lang=ko = %q", got)
	}
	if got := browsertest.Eval[string](t, ko, `document.documentElement.lang`); got != "ko" {
		t.Errorf("html lang = %q", got)
	}
	tk, ok := token.PeekTicket(ticketOf(t, ko, room))
	if !ok || tk.Draw <= 0 {
		t.Fatalf("no pre-queue ticket: %+v", tk)
	}
	waitJS(t, ko, `document.getElementById("draw-ref").checkVisibility()`, wait)
	ref := text(t, ko, "draw-ref")
	for _, want := range []string{tk.Visitor, fmt.Sprintf("%.6f", tk.Draw), "vestibule verify-draw --room " + room + " --visitor " + tk.Visitor, "추첨"} {
		if !strings.Contains(ref, want) {
			t.Errorf("the draw reference %q lacks %q", ref, want)
		}
	}

	// A Korean browser asking for English.
	en := visitorIn(t, "ko-KR,ko")
	do(t, en, chromedp.Navigate(pageURL(s.URL(), room)+"&lang=en"))
	waitState(t, en, "prequeue", wait)
	if got := text(t, en, "title"); got != "The line opens soon" {
		t.Errorf("title with &lang=en in a Korean browser = %q", got)
	}
	checkAxe(t, en)
}
