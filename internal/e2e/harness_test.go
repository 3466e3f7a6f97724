package e2e

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
)

// The harness of the page's tests against a scripted room (countdown_test.go,
// moments_test.go): the room, what the page records, and the page's virtual
// time.

// fakeTicket is what the scripted server hands out: not a JWT, with
// characters a JWT never has, so the page must keep and send it as it is.
const fakeTicket = "v9.opaque~ticket/with+odd=chars"

// scripted is a waiting room whose answers the test writes: the page (the
// real static/) against an API that says what the test needs, when the test
// wants (a far-back place, a long pollAfterMs, an admission on cue).
type scripted struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reply  func(n int) map[string]any // the n-th place request's answer (0: the enqueue)
	times  []time.Time                // when each place request arrived
	after  []int                      // the pollAfterMs each answer carried
	status map[string]any             // what the status route answers besides room, mode and pageVersion (setStatus)
	reads  []time.Time                // when each status read arrived
}

func scriptedRoom(t *testing.T, reply func(n int) map[string]any) *scripted {
	t.Helper()
	s := &scripted{t: t, reply: reply}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(repoPath(t, "static"))))
	mux.HandleFunc("/origin/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>origin</title><p id="origin">the booking site</p>`)
	})
	mux.HandleFunc("GET /api/rooms/{room}/status", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reads = append(s.reads, time.Now())
		body := map[string]any{"room": r.PathValue("room"), "mode": "queue", "pageVersion": "scripted"}
		for k, v := range s.status {
			body[k] = v
		}
		s.mu.Unlock()
		writeJSON(w, 200, body)
	})
	given := fakeTicket // the ticket the last answer gave
	place := func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		want := given
		s.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/poll") && r.Header.Get("Authorization") != "Bearer "+want {
			t.Errorf("a poll carried %q, not the ticket as it was given", r.Header.Get("Authorization"))
			writeJSON(w, 401, map[string]any{"error": map[string]any{"code": "invalid_ticket"}})
			return
		}
		s.mu.Lock()
		n := len(s.times)
		s.times = append(s.times, time.Now())
		body := map[string]any{"room": r.PathValue("room"), "ticket": fakeTicket, "waiting": 8000, "pageVersion": "scripted"}
		for k, v := range s.reply(n) {
			body[k] = v
		}
		given, _ = body["ticket"].(string)
		ms, _ := body["pollAfterMs"].(int)
		s.after = append(s.after, ms)
		s.mu.Unlock()
		writeJSON(w, 200, body)
	}
	mux.HandleFunc("POST /api/rooms/{room}/enqueue", place)
	mux.HandleFunc("GET /api/rooms/{room}/poll", place)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// requests is how many place requests (enqueue, poll) the server answered.
func (s *scripted) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

// setStatus sets what the status route answers from now on (over room,
// mode "queue" and pageVersion "scripted", which it may replace).
func (s *scripted) setStatus(m map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = m
}

// statusReads is when each status read arrived.
func (s *scripted) statusReads() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reads)
}

// checkPace fails the test when the page asked sooner than an answer told it to.
func (s *scripted) checkPace() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i < len(s.times); i++ {
		if gap := s.times[i].Sub(s.times[i-1]); gap < time.Duration(s.after[i-1])*time.Millisecond {
			s.t.Errorf("request %d came %v after the answer that said pollAfterMs %d", i, gap, s.after[i-1])
		}
	}
}

func shownPosition(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		t.Fatalf("position shows %q, not a number", s)
	}
	return n
}

// watchPage runs in the page before its scripts: it records what the page
// shows at every change of the document and every 200 ms (__samples), every
// announcement of the live region (__said), and when the page asked for the
// room's status (__reads) and for its place (__asks), all by the page's
// clock (this machine's, or the virtual one once a test advances it). The
// test judges the page from this record, not from what it reads when it gets
// round to it, so a slow machine cannot blur "between two polls".
const watchPage = `(() => {
	window.__samples = []; window.__said = []; window.__reads = []; window.__asks = [];
	const f = window.fetch;
	window.fetch = (u, ...a) => {
		const s = String(u);
		if (s.includes("/status")) __reads.push(Date.now());
		else if (s.includes("/enqueue") || s.includes("/poll")) __asks.push(Date.now());
		return f(u, ...a);
	};
	const $ = id => document.getElementById(id);
	const note = () => {
		const b = document.body.dataset;
		__samples.push({at: Date.now(), state: b.state, polls: +b.polls,
			countdown: $("countdown-box").hidden ? "" : $("countdown").textContent,
			pos: $("place").hidden ? "" : $("position").textContent, about: !$("approx").hidden,
			note: $("place-note").hidden ? "" : $("place-note").textContent,
			eta: $("eta").textContent, title: $("title").textContent, updated: $("updated").textContent});
	};
	document.addEventListener("readystatechange", () => {
		if (document.readyState !== "interactive") return;
		new MutationObserver(note).observe(document.body, {childList: true, characterData: true, subtree: true, attributes: true});
		new MutationObserver(() => __said.push($("announce").textContent)).observe($("announce"), {childList: true, characterData: true, subtree: true});
		setInterval(note, 200);
	});
})()`

type sample struct {
	At        int64  `json:"at"`
	State     string `json:"state"`
	Polls     int    `json:"polls"`
	Countdown string `json:"countdown"`
	Pos       string `json:"pos"`
	About     bool   `json:"about"`
	Note      string `json:"note"`
	ETA       string `json:"eta"`
	Title     string `json:"title"`
	Updated   string `json:"updated"`
}

func (s sample) time() time.Time { return time.UnixMilli(s.At) }

// minutes is a wait shown in minutes ("4–8 min"), not "Under 1 min".
var minutes = regexp.MustCompile(`^\d+–\d+ min$`)

// beforeLoad adds scripts that run in every document of the tab before its own.
func beforeLoad(t *testing.T, ctx context.Context, scripts ...string) {
	t.Helper()
	for _, src := range scripts {
		if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
			t.Fatal(err)
		}
	}
}

// backgroundHooks runs in the page before its scripts: it records the
// notifications made and the tones started, and lets the test hide the page
// (headless Chromium has no window to put behind another).
const backgroundHooks = `(() => {
	window.__notes = []; window.__tones = 0; window.__audio = 0;
	const N = window.Notification;
	if (N) window.Notification = class extends N {
		constructor(title, options) { window.__notes.push({title, body: options && options.body}); super(title, options); }
	};
	const start = OscillatorNode.prototype.start;
	OscillatorNode.prototype.start = function (...a) { window.__tones++; return start.apply(this, a); };
	const AC = window.AudioContext;
	window.AudioContext = class extends AC { constructor(...a) { super(...a); window.__audio++; } };
	window.__hide = hidden => {
		Object.defineProperty(document, "visibilityState", {configurable: true, get: () => hidden ? "hidden" : "visible"});
		Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
		document.hasFocus = () => !hidden;
		document.dispatchEvent(new Event("visibilitychange"));
		return true;
	};
})()`

// ticketShape is a ticket in the layout of internal/token (format, seq,
// draw, iat, exp, room, visitor, a tag) that no server signed: the page reads
// the visitor id from it, as from any ticket, and sends it back as it is.
func ticketShape(format byte, roomID, visitorID string) string {
	b := []byte{format}
	b = binary.BigEndian.AppendUint64(b, 7)
	b = binary.BigEndian.AppendUint64(b, 0x0123456789abcdef) // a masked draw
	b = binary.BigEndian.AppendUint64(b, uint64(time.Now().Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(time.Now().Add(time.Hour).Unix()))
	b = append(b, byte(len(roomID)))
	b = append(b, roomID...)
	b = append(b, byte(len(visitorID)))
	b = append(b, visitorID...)
	b = append(b, make([]byte, 32)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// advance runs the page's virtual time d forward, firing its timers as they
// fall due and standing still while a request is under way (so an answer is
// handled at the virtual instant it would be in real time, give or take the
// server's milliseconds); it returns when the budget is spent, and virtual
// time then stands still until the next advance. Once a test advances a
// page, it waits for it with advanceUntil, not waitJS (chromedp's Poll runs
// on the page's timers).
func advance(t *testing.T, v context.Context, d time.Duration) {
	t.Helper()
	spent := chromedp.Events(v, emulation.VirtualTimeBudgetExpired)
	budget := float64(d.Milliseconds())
	if _, err := chromedp.Call(v, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{
		Policy: emulation.VirtualTimePolicyPauseIfNetworkFetchesPending, Budget: &budget,
	}); err != nil {
		t.Fatal(err)
	}
	for _, err := range spent {
		if err != nil {
			t.Fatalf("virtual time: %v", err)
		}
		return
	}
}

// pageNow is the page's clock (ms since the epoch).
func pageNow(t *testing.T, v context.Context) float64 {
	t.Helper()
	return browsertest.Eval[float64](t, v, `Date.now()`)
}

// advanceUntil runs the page's virtual time forward a quarter of a second at
// a time until js is true in the page, and returns how much of the page's
// time that took; the test fails when it is not true within limit of it.
func advanceUntil(t *testing.T, v context.Context, js string, limit time.Duration) time.Duration {
	t.Helper()
	from := pageNow(t, v)
	for {
		if browsertest.Eval[bool](t, v, js) {
			return time.Duration(pageNow(t, v)-from) * time.Millisecond
		}
		if pageNow(t, v)-from >= float64(limit.Milliseconds()) {
			t.Fatalf("not true within %v of the page's time: %s; page shows %s", limit, js, pageSummary(v))
		}
		advance(t, v, 250*time.Millisecond)
	}
}

// after is what the page's record holds from the page's time at on.
func after(times []float64, at float64) []float64 {
	var out []float64
	for _, x := range times {
		if x >= at {
			out = append(out, x)
		}
	}
	return out
}
