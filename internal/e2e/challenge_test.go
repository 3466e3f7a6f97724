package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestJoinChallenge: in a room that asks a proof of work of every fresh join,
// the page solves the challenge by itself (in a worker) and joins; a refresh
// keeps the place without solving again.
func TestJoinChallenge(t *testing.T) {
	s := stack(t, "")
	room := redistest.Room(t)
	putRoom(t, s, room, baseSettings(s))
	fillRoom(t, s, room) // the room is full: our visitor waits
	putRoom(t, s, room, settings{"joinChallengeBits": 16})

	// The API refuses a join without the work.
	if code, _, body := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/"+room+"/enqueue", "", nil); code != 403 || body["challenge"] == nil {
		t.Fatalf("enqueue without a solution: %d %v", code, body)
	}

	v := visitor(t)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "waiting", wait)
	ms, err := strconv.Atoi(browsertest.Eval[string](t, v, `document.body.dataset.challenge || ""`))
	if err != nil {
		t.Fatalf("the page joined without solving the challenge (dataset %q)", browsertest.Eval[string](t, v, `document.body.dataset.challenge || ""`))
	}
	t.Logf("the page solved a 16-bit challenge in %d ms (each bit more doubles it)", ms)
	// In the worker beside the bundle, not on the page's thread after the worker failed to load.
	if got := browsertest.Eval[bool](t, v, `performance.getEntriesByType("resource")
		.some(e => new URL(e.name).pathname === "/challenge-worker.js" && e.responseStatus === 200)`); !got {
		t.Error("the page did not load /challenge-worker.js")
	}
	ticket := ticketOf(t, v, room)

	// A refresh is a poll with the ticket: no new challenge.
	time.Sleep(600 * time.Millisecond) // past the minimum poll interval
	do(t, v, chromedp.Reload())
	waitState(t, v, "waiting", wait)
	if got := ticketOf(t, v, room); got != ticket {
		t.Error("the refresh lost the place")
	}
	if got := browsertest.Eval[string](t, v, `document.body.dataset.challenge || ""`); got != "" {
		t.Errorf("the refresh solved a challenge again (%s ms)", got)
	}
}
