package e2e

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

const wait = 15 * time.Second

func pageURL(base, room string) string { return base + "/?room=" + url.QueryEscape(room) }

func ticketOf(t *testing.T, ctx context.Context, room string) string {
	t.Helper()
	return browsertest.Eval[string](t, ctx, `(JSON.parse(localStorage.getItem("vestibule:ticket:`+room+`")) || {}).ticket || ""`)
}

// place checks that the last reply (the view the page stores) gave the
// position want, and that the page shows it or a count down from it: at
// least 1, with the people ahead one fewer.
func place(t *testing.T, ctx context.Context, room string, want int) {
	t.Helper()
	got := browsertest.Eval[map[string]int](t, ctx, `(() => {
		const n = id => +document.getElementById(id).textContent.replace(/\D/g, "");
		return {replied: (JSON.parse(localStorage.getItem("vestibule:view:`+room+`")) || {}).position || 0,
			shown: n("position"), ahead: n("ahead")};
	})()`)
	if got["replied"] != want || got["shown"] < 1 || got["shown"] > want || got["ahead"] != got["shown"]-1 {
		t.Errorf("place: the reply said %d, the page shows %d with %d ahead; want %d, or counted down from it with one fewer ahead",
			got["replied"], got["shown"], got["ahead"], want)
	}
}

func text(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	return browsertest.Eval[string](t, ctx, `document.getElementById("`+id+`").textContent`)
}

// TestJourney: join → position shown → a refresh keeps the place → admitted →
// lands on the hand-integration origin with the token in the fragment → the
// origin consumes it.
func TestJourney(t *testing.T) {
	s := stack(t, "")
	id := redistest.Room(t)
	room := "spring-concert-" + id[len(id)-6:] // it shows in the screenshots
	putRoom(t, s, room, baseSettings(s))
	fillRoom(t, s, room)
	// Two visitors ahead of ours, so the page has people ahead to show.
	enqueueAPI(t, s, room)
	enqueueAPI(t, s, room)

	v := visitor(t)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "waiting", wait)
	// The reply's place, 3, or counted down from it between polls at the rate
	// the reply's ETA implies (countdown_test.go tests the count).
	place(t, v, room, 3)
	if got := text(t, v, "waiting"); got != "3" {
		t.Errorf("waiting total = %q, want 3", got)
	}
	if got := text(t, v, "eta"); !regexp.MustCompile(`\d|minute|moment`).MatchString(got) {
		t.Errorf("estimated wait = %q, want a range", got)
	}
	ticket := ticketOf(t, v, room)
	if ticket == "" {
		t.Fatal("no ticket in localStorage")
	}
	// The page shows the reference a visitor gives support, and support finds
	// the visitor by it (docs/OPERATING.md, "Support lookup").
	ref := browsertest.Eval[string](t, v, `document.getElementById("support-ref").textContent`)
	visitorID := regexp.MustCompile(`[A-Za-z0-9_-]{16,}`).FindString(ref)
	if visitorID == "" {
		t.Fatalf("the page shows no support reference: %q", ref)
	}
	if code, _, who := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+room+"/visitors?ref="+visitorID, s.AdminKey(), nil); code != 200 || who["state"] != "waiting" {
		t.Errorf("support lookup of the page's reference %q: %d %v, want the visitor waiting", visitorID, code, who)
	}
	// The page is three objects, each a CloudFront request: index.html, its CSS and the
	// bundle (`make page`); the API calls are not objects of the page.
	if got := browsertest.Eval[string](t, v, `performance.getEntriesByType("resource")
		.map(e => new URL(e.name)).filter(u => u.origin === location.origin && !u.pathname.startsWith("/api/"))
		.map(u => u.pathname).sort().join(" ")`); got != "/waiting.css /waiting.js" {
		t.Errorf("the page loaded %q besides itself, want /waiting.css /waiting.js", got)
	}
	screenshot(t, v, "screenshot-waiting.png")

	// A refresh keeps the place: the same ticket, the same position.
	do(t, v, chromedp.Reload())
	waitState(t, v, "waiting", wait)
	if got := ticketOf(t, v, room); got != ticket {
		t.Errorf("ticket changed across a refresh")
	}
	place(t, v, room, 3)

	// Room for everyone: the next tick admits the two ahead and our visitor.
	cfg := baseSettings(s)
	cfg["maxActive"] = 10
	navigations := chromedp.Events(v, page.FrameNavigated)
	putRoom(t, s, room, cfg)
	// The page learns of the grant at its next poll: with one admission measured
	// in the last minute its ETA is minutes, so that poll may be up to half the
	// heartbeat window (15 s) away.
	waitState(t, v, "admitted", wait+15*time.Second)
	screenshot(t, v, "screenshot-admitted.png")
	if got := text(t, v, "title"); got != "It's your turn" {
		t.Errorf("title = %q", got)
	}

	// The page moves to the origin with the entry token in the fragment. The
	// origin page wipes the fragment at once, so the URL is read from the
	// navigation event rather than from the address bar afterwards.
	origin := s.ManualOriginURL() + "/"
	var landed string
	for ev, err := range navigations {
		if err != nil {
			t.Fatalf("never reached the origin %s: %v; page shows %s", origin, err, pageSummary(v))
		}
		if ev.Frame.ParentID == "" && strings.HasPrefix(ev.Frame.URL, origin) {
			landed = ev.Frame.URL + ev.Frame.URLFragment
			break
		}
	}
	u, err := url.Parse(landed)
	if err != nil {
		t.Fatal(err)
	}
	if frag, _ := url.ParseQuery(u.Fragment); strings.Count(frag.Get("token"), ".") != 2 {
		t.Errorf("origin URL %s carries no entry token (a JWT) in its fragment", landed)
	}
	if u.RawQuery != "" {
		t.Errorf("the token must not travel in the query string: %s", landed)
	}
	// The origin consumed the token (server to server) and shows the session.
	waitJS(t, v, `document.getElementById("out") && document.getElementById("out").dataset.state === "session"`, wait)
	if got := text(t, v, "room"); got != room {
		t.Errorf("origin session room = %q, want %q", got, room)
	}
	// Back at the waiting page, the spent ticket is gone and the finished
	// visit is shown rather than a new place taken (moments_test.go tests the
	// ended state).
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "ended", wait)
	if got := ticketOf(t, v, room); got != "" {
		// The ticket is spent; a later visit to the waiting page starts anew.
		t.Errorf("ticket still stored after admission")
	}
}

// TestTwoTabs: a second tab shows the same place without polling; when the
// leading tab closes, the other one takes over.
func TestTwoTabs(t *testing.T) {
	s := stack(t, "")
	room := redistest.Room(t)
	cfg := baseSettings(s)
	cfg["heartbeatTTLSeconds"] = 10 // the minimum: polls at least every 3.3 s
	putRoom(t, s, room, cfg)
	fillRoom(t, s, room)

	v := visitor(t)
	first, closeFirst := tab(t, v)
	firstReqs := countRequests(first)
	do(t, first, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, first, "waiting", wait)
	waitJS(t, first, `document.body.dataset.leader === "1"`, wait)

	second, _ := tab(t, v)
	secondReqs := countRequests(second)
	do(t, second, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, second, "waiting", wait)
	if a, b := ticketOf(t, first, room), ticketOf(t, second, room); a == "" || a != b {
		t.Fatalf("tabs hold different tickets")
	}
	if a, b := text(t, first, "position"), text(t, second, "position"); a != "1" || a != b {
		t.Errorf("positions: first tab %q, second tab %q; want both 1", a, b)
	}

	// Let a few polls happen: the first tab polls, the second only follows. Four polls take
	// at least 10 s of real time by design (one each 3.3 s), two thirds of wait: awaited with a
	// deadline of its own, so a loaded machine's late timers do not decide the verdict.
	const pollsWait = 60 * time.Second
	before := firstReqs.get("poll")
	waitJS(t, first, `+document.body.dataset.polls >= 4`, pollsWait)
	if firstReqs.get("poll") <= before {
		t.Errorf("the leading tab sent no poll requests")
	}
	if n := secondReqs.get("poll") + secondReqs.get("enqueue"); n != 0 {
		t.Errorf("the following tab sent %d API requests, want 0", n)
	}
	if got := browsertest.Eval[string](t, second, `document.body.dataset.leader`); got != "0" {
		t.Errorf("second tab leader = %q, want 0", got)
	}
	// Close the leader: the second tab takes over with the same ticket.
	ticket := ticketOf(t, first, room)
	closeFirst()
	waitJS(t, second, `document.body.dataset.leader === "1" && +document.body.dataset.polls >= 2`, pollsWait)
	if secondReqs.get("poll")+secondReqs.get("enqueue") == 0 {
		t.Errorf("the new leader sent no requests")
	}
	if got := ticketOf(t, second, room); got != ticket {
		t.Errorf("the ticket changed when the leader closed")
	}
	if got := text(t, second, "position"); got != "1" {
		t.Errorf("position after takeover = %q, want 1", got)
	}
}

// TestPrequeue: before opensAt the page counts down; at opening it moves on.
func TestPrequeue(t *testing.T) {
	s := stack(t, "")
	room := redistest.Room(t)
	cfg := baseSettings(s)
	cfg["maxActive"] = 10
	cfg["heartbeatTTLSeconds"] = 10
	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	cfg["opensAt"] = opens.Format(time.RFC3339)
	putRoom(t, s, room, cfg)

	v := visitor(t)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "prequeue", wait)
	waitJS(t, v, `!document.getElementById("countdown-box").hidden`, wait)
	cd := text(t, v, "countdown")
	m := regexp.MustCompile(`^(?:(\d+):)?(\d\d):(\d\d)$`).FindStringSubmatch(cd)
	if m == nil {
		t.Fatalf("countdown %q is not [h:]mm:ss", cd)
	}
	h, _ := strconv.Atoi(m[1])
	mm, _ := strconv.Atoi(m[2])
	ss, _ := strconv.Atoi(m[3])
	left := time.Duration(h*3600+mm*60+ss) * time.Second
	if want := time.Until(opens); left > want+2*time.Second || left < want-10*time.Second {
		t.Errorf("countdown shows %s, want about %s", left, want.Round(time.Second))
	}
	// It counts down by itself, without a request per second.
	waitJS(t, v, `document.getElementById("countdown").textContent !== `+strconv.Quote(cd), wait)

	// Open the room now: the visitor leaves the pre-queue and is let in. The
	// page, an hour before the opening it knew, reads the status about once a
	// minute (the rule: a change shown within 10 % of the wait, at most 60 s).
	cfg["opensAt"] = time.Now().Add(time.Second).UTC().Format(time.RFC3339)
	putRoom(t, s, room, cfg)
	waitJS(t, v, `document.body.dataset.state === "admitted" || !location.href.includes("room=")`, 65*time.Second)
}

// TestPausedClosedLeave: the paused and closed states, the leave button and
// rejoining, and the language switch.
func TestPausedClosedLeave(t *testing.T) {
	s := stack(t, "")
	v, room := pausedVisitor(t, s)
	if got := text(t, v, "position"); got != "1" {
		t.Errorf("paused position = %q, want 1", got)
	}
	first := ticketOf(t, v, room)

	// Leave: the ticket is forgotten and the page offers to join again.
	do(t, v, chromedp.Click(chromedp.ID("leave")))
	waitState(t, v, "left", wait)
	if got := ticketOf(t, v, room); got != "" {
		t.Errorf("ticket kept after leaving")
	}
	do(t, v, chromedp.Click(chromedp.ID("rejoin")))
	waitState(t, v, "paused", wait)
	if got := ticketOf(t, v, room); got == "" || got == first {
		t.Errorf("rejoining did not give a new ticket")
	}

	// Korean on request; the choice survives a reload.
	chooseLang(t, v, "ko")
	waitJS(t, v, `document.documentElement.lang === "ko"`, wait)
	if got := text(t, v, "title"); got != "대기열이 잠시 멈췄습니다" {
		t.Errorf("Korean title = %q", got)
	}
	do(t, v, chromedp.Reload())
	waitState(t, v, "paused", wait)
	waitJS(t, v, `document.documentElement.lang === "ko" && document.getElementById("lang").value === "ko"`, wait)
	chooseLang(t, v, "en")

	putRoom(t, s, room, map[string]any{"mode": "closed"}) // the PUT merges over the room's settings
	waitState(t, v, "closed", wait)
	if got := text(t, v, "title"); got != "This line is closed" {
		t.Errorf("closed title = %q", got)
	}
	// The live region said so, at once.
	waitJS(t, v, `document.getElementById("announce").textContent.includes("closed")`, wait)
}

// TestRedisOutage: Redis goes away; the page says it is reconnecting, keeps
// its ticket, and carries on when Redis is back.
func TestRedisOutage(t *testing.T) {
	srv, err := redistest.Start("appendonly", "yes", "appendfsync", "always")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s := stack(t, "redis://"+srv.Addr)
	v, room := pausedVisitor(t, s)
	ticket := ticketOf(t, v, room)

	srv.Stop()
	waitJS(t, v, `document.body.dataset.reconnecting === "1" && !document.getElementById("notice").hidden`, wait)
	if got := text(t, v, "notice"); !strings.Contains(got, "Reconnecting") {
		t.Errorf("notice = %q", got)
	}
	if got := ticketOf(t, v, room); got != ticket {
		t.Errorf("ticket lost during the outage")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitJS(t, v, `document.body.dataset.reconnecting === "0" && document.body.dataset.state === "paused"`, 30*time.Second)
	if got := ticketOf(t, v, room); got != ticket {
		t.Errorf("ticket changed after recovery")
	}
	if got := text(t, v, "position"); got != "1" {
		t.Errorf("position after recovery = %q, want 1", got)
	}
}

// pausedVisitor opens the page of a new paused room (heartbeat 10 s) in a new
// browser and waits until it shows the paused state.
func pausedVisitor(t *testing.T, s *localstack.Stack) (context.Context, string) {
	t.Helper()
	room := redistest.Room(t)
	cfg := baseSettings(s)
	cfg["mode"] = "paused"
	cfg["heartbeatTTLSeconds"] = 10
	putRoom(t, s, room, cfg)
	v := visitor(t)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "paused", wait)
	return v, room
}
