package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/room"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// browser opens a browser context of its own in the one headless Chromium the
// tests share (browsertest).
func browser(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browsertest.Browser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 900)); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	return ctx
}

func waitJS(t *testing.T, ctx context.Context, js string, limit time.Duration) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](js,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(limit)))
	if err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.replace(/\s+/g, " ").slice(0, 600)`))
		t.Fatalf("waiting for %s: %v; page shows %s", js, err, text)
	}
}

// consoleClock is the instant the console's tests start their page's clock
// at (fixClock): late morning, when the time axis' labels are among the
// widest ("11:03am" beside a date).
var consoleClock = time.Date(2026, 11, 27, 11, 3, 50, 0, time.UTC)

// fixClock starts the tab's clock at the instant at, in UTC and the en-US
// locale, whatever the hour and zone the test runs in: Date.now() and new
// Date() count from at as real time passes. It applies to the pages the tab
// opens after it.
func fixClock(t *testing.T, ctx context.Context, at time.Time) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "UTC"}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en_US"}); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`(() => {
		const Real = Date, off = %d - Real.now();
		class Fixed extends Real {
			constructor(...a) { if (a.length === 0) super(Real.now() + off); else super(...a); }
			static now() { return Real.now() + off; }
		}
		globalThis.Date = Fixed;
	})()`, at.UnixMilli())
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		t.Fatal(err)
	}
}

// axisSpans are the spans of time the console's chart axis is checked at:
// from 10 s (a page just opened) to 26 h (the day of history it starts
// from), each 3% longer than the one before, so that every choice of tick
// spacing the axis makes is met near the width where it starts.
func axisSpans() []float64 {
	var spans []float64
	for s := 10.0; s < 26*3600; s *= 1.03 {
		spans = append(spans, s)
	}
	return spans
}

// axisOverlaps sets the time axis of room's chart to each of axisSpans(),
// ending at consoleClock, and lists the labels that run together: each must
// be further from its neighbour than it is wide, and 8 px, measured in the
// font the axis draws with. It leaves the chart at its last span (the next
// refresh rescales it).
func axisOverlaps(t *testing.T, ctx context.Context, room string) string {
	t.Helper()
	js, _ := json.Marshal(map[string]any{"room": room, "end": consoleClock.Unix(), "spans": axisSpans()})
	return browsertest.Eval[string](t, ctx, `(({room, end, spans}) => {
		const u = window.__consoleCharts?.get(room);
		if (!u) return "no chart";
		const ax = u.axes[0];
		const c = document.createElement('canvas').getContext('2d');
		c.font = ax.font[0];
		const px = uPlot.pxRatio || 1;
		// A label may have two lines (the time, and the date under it).
		const width = (v) => Math.max(...String(v).split("\n").map((l) => c.measureText(l).width)) / px;
		const bad = [];
		for (const span of spans) {
			u.batch(() => u.setScale('x', {min: end - span, max: end}));
			const splits = ax._splits || [], vals = ax._values || [];
			if (splits.length === 0) bad.push(span + " s: no label");
			for (let i = 1; i < splits.length; i++) {
				const gap = u.valToPos(splits[i], 'x') - u.valToPos(splits[i-1], 'x');
				const w = Math.max(width(vals[i-1]), width(vals[i]));
				if (gap < w + 8) bad.push(Math.round(span) + " s: " + JSON.stringify(vals[i-1]) + "|" + JSON.stringify(vals[i]) + " gap " + Math.round(gap) + " < " + Math.round(w + 8));
			}
		}
		return bad.join(", ");
	})(`+string(js)+`)`)
}

// axeScript is axe-core's axe.min.js as `make deps-axe` installed it
// (testkit.AxeCore).
func axeScript(t *testing.T) string {
	t.Helper()
	return testkit.AxeCore(t)
}

// The console served by `vestibule console`: the figures of a room with
// visitors appear, its chart is drawn, pausing it through the confirmation
// changes the room's mode, and axe-core finds no serious or critical
// accessibility problem.
func TestConsoleInBrowser(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, map[string]any{"maxActive": 2, "admitPerMinute": 600, "claimTTLSeconds": 600})
	enqueue(t, s, id, 5)
	noticeRoom := newRoom(t, s, map[string]any{"claimTTLSeconds": 60, "notifiedClaimTTLSeconds": 600})
	ctx := browser(t)
	fixClock(t, ctx, consoleClock)
	var exceptions []string
	var emu sync.Mutex
	go func() {
		for ev, err := range chromedp.Events(ctx, runtime.ExceptionThrown) {
			if err != nil {
				return
			}
			emu.Lock()
			d := ev.ExceptionDetails
			desc := d.Text
			if d.Exception != nil {
				desc += " " + d.Exception.Description
			}
			exceptions = append(exceptions, fmt.Sprintf("%s at %s:%d", desc, d.URL, d.LineNumber))
			emu.Unlock()
		}
	}()

	url := startConsole(t, s)
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"&every=0.3")); err != nil {
		t.Fatal(err)
	}
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, id)
	waitJS(t, ctx, card+` !== null`, 10*time.Second)
	// Two admitted (maxActive 2), three waiting, as the engine says.
	waitJS(t, ctx, card+`.querySelector('[data-figure="waiting"]').textContent === "3"`, 10*time.Second)
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-figure="active"]').textContent`); got != "0" {
		t.Errorf("active figure %q", got)
	}
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-figure="held"]').textContent`); got != "2 / 2 (100%)" {
		t.Errorf("admitted + active figure %q", got)
	}
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-figure="admitted"]').textContent`); got != "2" {
		t.Errorf("admitted figure %q", got)
	}
	// Notices: off in a room without them; counted in one that offers them.
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-figure="notices"]').textContent`); got != "off" {
		t.Errorf("notices figure of a room without them %q", got)
	}
	noticeCard := fmt.Sprintf(`document.querySelector('[data-room=%q] [data-figure="notices"]')`, noticeRoom)
	waitJS(t, ctx, noticeCard+`?.textContent === "0 / 0 · 0 (0 waiting to be told)"`, 10*time.Second)
	if browsertest.Eval[bool](t, ctx, `document.getElementById('keyform').checkVisibility()`) {
		t.Error("the console through vestibule console asks for an admin key")
	}
	// The busiest room first.
	if got := browsertest.Eval[string](t, ctx, `document.querySelector('.room').dataset.room`); got != id {
		t.Errorf("first card %q, want the busiest room %s", got, id)
	}
	if got := browsertest.Eval[string](t, ctx, `document.getElementById('target').textContent`); !strings.Contains(got, s.URL()) {
		t.Errorf("target %q", got)
	}
	// The chart: once a few samples are in, the canvas carries the series'
	// lines; active (0 here) is drawn in its own red (#9b1c1c), which
	// neither the grid nor the axes use.
	waitJS(t, ctx, card+`.dataset.samples >= 3`, 10*time.Second)
	waitJS(t, ctx, `(() => { const c = `+card+`.querySelector('canvas');
		if (!c || c.width < 200) return false;
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let red = 0;
		for (let i = 0; i < d.length; i += 4) {
			if (Math.abs(d[i] - 155) < 30 && d[i+1] < 70 && d[i+2] < 70 && d[i+3] > 200) red++;
		}
		return red > 100; })()`, 10*time.Second)
	// E2E_OUT=dir keeps a screenshot of the console.
	if dir := os.Getenv("E2E_OUT"); dir != "" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "console.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Pause: the dialog asks first; Cancel changes nothing. A probe counts
	// the console's writes (every fetch but a GET): a write the cancel made
	// would start in the click's own microtasks, before the next script the
	// test evaluates, so the count read after it is final.
	browsertest.Eval[any](t, ctx, `(() => {
		window.__writes = 0;
		const f = window.fetch;
		window.fetch = (u, o) => { if ((o?.method || 'GET') !== 'GET') window.__writes++; return f(u, o); };
	})()`)
	pause := chromedp.CSS(fmt.Sprintf(`[data-room=%q] [data-action="pause"]`, id))
	if err := chromedp.Do(ctx, chromedp.Click(pause)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.getElementById('confirm').open`, 5*time.Second)
	if got := browsertest.Eval[string](t, ctx, `document.getElementById('confirm-title').textContent`); got != "Pause room "+id+"?" {
		t.Errorf("dialog title %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-cancel"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `!document.getElementById('confirm').open`, 5*time.Second)
	if n := browsertest.Eval[int](t, ctx, `window.__writes`); n != 0 {
		t.Fatalf("the cancelled pause sent %d writes", n)
	}
	if m := mode(t, s, id); m != "queue" {
		t.Fatalf("cancelled pause changed the mode to %s", m)
	}
	if err := chromedp.Do(ctx, chromedp.Click(pause)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.getElementById('confirm').open`, 5*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, card+`.dataset.mode === "paused"`, 5*time.Second)
	if n := browsertest.Eval[int](t, ctx, `window.__writes`); n != 1 { // the probe sees a write
		t.Errorf("the confirmed pause sent %d writes, want 1", n)
	}
	if m := mode(t, s, id); m != "paused" {
		t.Fatalf("mode after pausing from the console: %s", m)
	}
	if got := browsertest.Eval[string](t, ctx, `document.getElementById('status').textContent`); got != "Room "+id+" paused." {
		t.Errorf("status %q", got)
	}
	// Focus lands on what undoes it (Pause is disabled now).
	waitJS(t, ctx, `document.activeElement?.dataset.action === "resume"`, 5*time.Second)
	// submit types value into the card's input (a selector), submits the
	// card's form (a selector) and accepts the confirmation, whose text must
	// contain want.
	submit := func(input, value, form, want string) {
		t.Helper()
		js, _ := json.Marshal([]string{input, value})
		browsertest.Eval[any](t, ctx, fmt.Sprintf(`(([sel, value]) => { const i = %s.querySelector(sel); i.focus(); i.value = value; i.dispatchEvent(new Event('input', {bubbles: true})); })(%s)`, card, js))
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-room=%q] %s button`, id, form)))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, `document.getElementById('confirm').open`, 5*time.Second)
		if got := browsertest.Eval[string](t, ctx, `document.getElementById('confirm-text').textContent`); !strings.Contains(got, want) {
			t.Errorf("confirm text %q, want it to contain %q", got, want)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
			t.Fatal(err)
		}
	}
	// Capacity through the form and its confirmation.
	submit(`[data-setting="maxActive"]`, "4", ".settings", "maxActive 2 → 4")
	waitJS(t, ctx, card+`.querySelector('[data-figure="held"]').textContent.includes("/ 4")`, 5*time.Second)

	// The waiting page's message, set live from the console, one text per
	// language; the confirmation shows both. Each is typed as an operator
	// types (an input event): a card refreshes its forms until one is edited,
	// so a value set without it is lost to the next refresh.
	typeInto := func(sel, value string) {
		browsertest.Eval[any](t, ctx, fmt.Sprintf(`(() => { const i = %s.querySelector(%q); i.value = %q; i.dispatchEvent(new Event('input', {bubbles: true})); })()`, card, sel, value))
	}
	typeInto(`[data-message="ko"]`, "10시에 문을 엽니다")
	// (and Japanese, one of the page's other languages, folded under "other languages")
	typeInto(`.more-langs [data-message="ja"]`, "10時に開場します")
	submit(`[data-message="en"]`, "Doors open at 10:00", ".page-form", "Japanese: \"10時に開場します\"")
	waitJS(t, ctx, `document.getElementById('status').textContent === "Room `+id+`: message changed."`, 5*time.Second)
	// The title the same way, in English only: the message stays.
	submit(`[data-title="en"]`, "Spring Tour", ".title-form", "Korean: no title")
	waitJS(t, ctx, `document.getElementById('status').textContent === "Room `+id+`: title changed."`, 5*time.Second)
	if code, m := admin(t, s, "GET", id, nil); code != 200 || fmt.Sprint(m["config"].(map[string]any)["page"]) != "map[message:map[en:Doors open at 10:00 ja:10時に開場します ko:10시에 문을 엽니다] title:map[en:Spring Tour]]" {
		t.Errorf("the room's page after the console's change: %d %v", code, m["config"])
	}
	// Both languages show back in the form.
	waitJS(t, ctx, card+`.querySelector('[data-message="ko"]').value === "10시에 문을 엽니다" && `+card+`.querySelector('[data-message="en"]').value === "Doors open at 10:00"`, 5*time.Second)

	// The chart's legend names the series without "--".
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('.u-legend')?.textContent || ""`); strings.Contains(got, "--") || !strings.Contains(got, "waiting") {
		t.Errorf("legend %q", got)
	}
	if bad := axisOverlaps(t, ctx, id); bad != "" {
		t.Errorf("time axis labels run together: %s", bad)
	}

	// Accessibility: axe-core, injected (the page's CSP does not apply to
	// the DevTools protocol), with no serious or critical violation.
	axe := axeScript(t)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](axe)); err != nil {
		t.Fatalf("inject axe: %v", err)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document).then(r => JSON.stringify(r.violations
		.filter(v => v.impact === 'serious' || v.impact === 'critical')
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe: %v", err)
	}
	var violations []any
	json.Unmarshal([]byte(res), &violations)
	t.Logf("axe-core: serious or critical violations: %s", res)
	if len(violations) > 0 {
		t.Errorf("axe-core: %d serious or critical violations: %s", len(violations), res)
	}
	emu.Lock()
	defer emu.Unlock()
	if len(exceptions) > 0 {
		t.Errorf("the page threw: %q", exceptions)
	}
}

// consoleAddr is the address `vestibule console` prints: its port and its
// run's secret.
var consoleAddr = regexp.MustCompile(`console: (http://(127\.0\.0\.1:\d+)/\?secret=([A-Z0-9]+)) `)

// startConsole runs `vestibule console` against the local stack s until the
// test ends, and returns the address it prints (with the run's secret).
func startConsole(t *testing.T, s *localstack.Stack) string {
	t.Helper()
	cctx, stop := context.WithCancel(context.Background())
	var out, errb testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(cctx, []string{"console", "--port", "0", "--endpoint", s.URL(), "--admin-key", adminKey}, &out, &errb)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("console exited %d: %s", code, errb.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := consoleAddr.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("the console did not start: %q %q", out.String(), errb.String())
	return ""
}

// Another process on the operator's machine (another user of a shared host)
// reaches 127.0.0.1 and can send the console's header, but not the run's
// secret: it can neither read the rooms (and their origin credentials) nor
// delete one. The console's own page, given the printed address, can.
func TestConsoleRefusesAProcessWithoutItsSecret(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	addr := startConsole(t, s)
	m := consoleAddr.FindStringSubmatch("console: " + addr + " ")
	base, secret := "http://"+m[2], m[3]
	call := func(method, path string, cookie bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("X-Vestibule-Console", "1")
		if cookie {
			req.AddCookie(&http.Cookie{Name: "vestibule_console", Value: secret})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("GET", "/api/admin/rooms", false); code != 403 || strings.Contains(body, id) {
		t.Errorf("rooms without the secret: %d %s", code, body)
	}
	if code, body := call("DELETE", "/api/admin/rooms/"+id, false); code != 403 {
		t.Errorf("delete without the secret: %d %s", code, body)
	}
	if code, _ := admin(t, s, "GET", id, nil); code != 200 {
		t.Fatalf("the room is gone: %d", code)
	}
	if code, body := call("GET", "/api/admin/rooms", true); code != 200 || !strings.Contains(body, id) {
		t.Errorf("rooms with the secret: %d %s", code, body)
	}
}

// The local stack serves the same console at /console; without the admin
// key it asks for it, and with it shows the rooms.
func TestConsoleOnLocalStack(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()+"/console?every=0.3")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.getElementById('keyform').checkVisibility()`, 10*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("key"), adminKey),
		chromedp.Click(chromedp.CSS(`#keyform button`)),
	); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, fmt.Sprintf(`document.querySelector('[data-room=%q] [data-figure="held"]')?.textContent === "0 / 5 (0%%)"`, id), 10*time.Second)
	if browsertest.Eval[bool](t, ctx, `document.getElementById('keyform').checkVisibility()`) {
		t.Error("the key form stays once the key works")
	}
}

// A browser keeps a connection open that has sent no request yet (a
// preconnect); Ctrl-C must still stop the console at once and cleanly, not
// after a deadline with "context deadline exceeded".
func TestConsoleShutdownWithOpenConnection(t *testing.T) {
	s := stack(t)
	cctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out, errb testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(cctx, []string{"console", "--port", "0", "--endpoint", s.URL(), "--admin-key", adminKey}, &out, &errb)
	}()
	var hostport string
	for deadline := time.Now().Add(10 * time.Second); hostport == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := consoleAddr.FindStringSubmatch(out.String()); m != nil {
			hostport = m[2]
		}
	}
	if hostport == "" {
		t.Fatalf("the console did not start: %q %q", out.String(), errb.String())
	}
	// One idle keep-alive connection after a request, and one that never sent one.
	idle, err := net.Dial("tcp", hostport)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET /console-target.json HTTP/1.1\r\nHost: %s\r\n\r\n", hostport)
	if _, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil {
		t.Fatal(err)
	}
	fresh, err := net.Dial("tcp", hostport)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	start := time.Now()
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("console exited %d: %s", code, errb.String())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the console took %s to stop", d)
	}
}

// consoleOnStack opens the local stack's console and gives it the admin key.
func consoleOnStack(t *testing.T, s *localstack.Stack) context.Context {
	t.Helper()
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()+"/console?every=0.3")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.getElementById('keyform').checkVisibility()`, 10*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("key"), adminKey),
		chromedp.Click(chromedp.CSS(`#keyform button`)),
	); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// A pre-queue in the console: the opening time with its countdown, the
// visitors pre-queued and the lottery's commitment; then, once open, the
// published seed.
func TestConsolePrequeue(t *testing.T) {
	s := stack(t)
	// An hour ahead, so the page sees the pre-queue however slowly it loads;
	// the opening is then moved to now.
	opens := time.Now().Add(time.Hour).UTC()
	id := newRoom(t, s, map[string]any{"opensAt": opens.Format(time.RFC3339Nano)})
	enqueue(t, s, id, 4)
	ctx := consoleOnStack(t, s)
	opening := fmt.Sprintf(`document.querySelector('[data-room=%q] [data-field="opening"]')`, id)
	waitJS(t, ctx, opening+`?.textContent.includes("draw committed")`, 10*time.Second)
	text := browsertest.Eval[string](t, ctx, opening+`.textContent`)
	if !regexp.MustCompile(`^Pre-queue: opens .+ \(in (59:[0-5]\d|1:00:00)\) · 4 pre-queued · draw committed [0-9a-f]{64}$`).MatchString(text) {
		t.Errorf("before the opening: %q", text)
	}
	badge := fmt.Sprintf(`document.querySelector('[data-room=%q] [data-field="mode"]').textContent`, id)
	if got := browsertest.Eval[string](t, ctx, badge); got != "pre-queue" {
		t.Errorf("mode badge before the opening %q", got)
	}
	if code, m := admin(t, s, "PUT", id, map[string]any{"opensAt": time.Now().UTC().Format(time.RFC3339Nano)}); code != 200 {
		t.Fatalf("moving the opening to now: %d %v", code, m)
	}
	waitJS(t, ctx, opening+`.textContent.includes("draw seed published")`, 10*time.Second)
	if text := browsertest.Eval[string](t, ctx, opening+`.textContent`); !strings.HasPrefix(text, "Opened ") {
		t.Errorf("after the opening: %q", text)
	}
	waitJS(t, ctx, badge+` === "queue"`, 5*time.Second)
}

// The console steers: it creates a room (after a confirmation that lists
// its settings), changes its mode and opening with the difference shown
// first, and lists who changed what.
func TestConsoleSteers(t *testing.T) {
	s := stack(t)
	ctx := consoleOnStack(t, s)
	waitJS(t, ctx, `document.querySelector('[data-room="demo"]') !== null`, 10*time.Second)
	b := make([]byte, 3)
	rand.Read(b)
	id := "made-" + hex.EncodeToString(b)
	set := func(sel, value string) {
		t.Helper()
		js, _ := json.Marshal([]string{sel, value})
		browsertest.Eval[any](t, ctx, fmt.Sprintf(`(([sel, value]) => { const i = document.querySelector(sel); i.value = value; i.dispatchEvent(new Event('input', {bubbles: true})); })(%s)`, js))
	}
	confirm := func(wantTitle, wantText string) {
		t.Helper()
		waitJS(t, ctx, `document.getElementById('confirm').open`, 5*time.Second)
		if got := browsertest.Eval[string](t, ctx, `document.getElementById('confirm-title').textContent`); got != wantTitle {
			t.Errorf("confirmation title %q, want %q", got, wantTitle)
		}
		if got := browsertest.Eval[string](t, ctx, `document.getElementById('confirm-text').textContent`); !strings.Contains(got, wantText) {
			t.Errorf("confirmation %q, want it to contain %q", got, wantText)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#new-room summary`))); err != nil {
		t.Fatal(err)
	}
	set("#new-id", id)
	set("#new-origin", s.OriginURL()+"/")
	set("#new-max", "7")
	set("#new-rate", "70")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#create-form button`))); err != nil {
		t.Fatal(err)
	}
	confirm("Create room "+id+"?", "maxActive 7")
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, id)
	waitJS(t, ctx, card+` !== null`, 10*time.Second)
	code, m := admin(t, s, "GET", id, nil)
	if c, _ := m["config"].(map[string]any); code != 200 || c["maxActive"] != float64(7) || c["admitPerMinute"] != float64(70) {
		t.Fatalf("the room the console created: %d %v", code, m)
	}

	// Mode and opening through the card's settings form.
	opens := time.Now().Add(2 * time.Hour).Truncate(time.Minute)
	set(fmt.Sprintf(`[data-room=%q] [data-setting="mode"]`, id), "paused")
	set(fmt.Sprintf(`[data-room=%q] [data-setting="opensAt"]`, id), opens.Format("2006-01-02T15:04"))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-room=%q] .settings button`, id)))); err != nil {
		t.Fatal(err)
	}
	confirm("Change room "+id+"?", "mode queue → paused")
	waitJS(t, ctx, card+`.dataset.mode === "paused"`, 5*time.Second)
	code, m = admin(t, s, "GET", id, nil)
	c, _ := m["config"].(map[string]any)
	if at, _ := time.Parse(time.RFC3339, fmt.Sprint(c["opensAt"])); code != 200 || !at.Equal(opens) {
		t.Errorf("opensAt after the console's change: %v, want %v", c["opensAt"], opens)
	}
	waitJS(t, ctx, card+`.querySelector('[data-field="opening"]').textContent.startsWith("Pre-queue: opens")`, 5*time.Second)

	// Who changed what.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-room=%q] .audit summary`, id)))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, card+`.dataset.audit === "2"`, 5*time.Second)
	log := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-field="audit"]').textContent`)
	if !strings.Contains(log, "admin key (says via the console)") || !strings.Contains(log, `mode "queue" → "paused"`) || !strings.Contains(log, "create") {
		t.Errorf("the room's changes in the console: %q", log)
	}
}

// cardOf is the script expression of room id's card.
func cardOf(id string) string { return fmt.Sprintf(`document.querySelector('[data-room=%q]')`, id) }

// setField sets a control of a card (a selector inside it) as a person
// would: a checkbox ticked or not ("on"/"off"), any other control given
// value, then an input event.
func setField(t *testing.T, ctx context.Context, id, sel, value string) {
	t.Helper()
	js, _ := json.Marshal([]string{sel, value})
	browsertest.Eval[any](t, ctx, fmt.Sprintf(`(([sel, value]) => {
		const i = %s.querySelector(sel);
		if (i.type === 'checkbox') i.checked = value === 'on'; else i.value = value;
		i.dispatchEvent(new Event('input', {bubbles: true}));
	})(%s)`, cardOf(id), js))
}

// press clicks a button of room id's card (a selector inside it) and waits
// for the confirmation, whose text it returns.
func press(t *testing.T, ctx context.Context, id, sel string) string {
	t.Helper()
	js, _ := json.Marshal(sel)
	browsertest.Eval[any](t, ctx, fmt.Sprintf(`%s.querySelector(%s).click()`, cardOf(id), js))
	waitJS(t, ctx, `document.getElementById('confirm').open`, 5*time.Second)
	return browsertest.Eval[string](t, ctx, `document.getElementById('confirm-text').textContent`)
}

// answer closes the confirmation of room id's card with Confirm (true),
// then waits for the write to end (done or refused, the card refreshed), or
// with Cancel.
func answer(t *testing.T, ctx context.Context, id string, ok bool) {
	t.Helper()
	b := "confirm-cancel"
	writes := browsertest.Eval[int](t, ctx, `Number(`+cardOf(id)+`.dataset.writes || 0)`)
	if ok {
		b = "confirm-ok"
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID(b))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `!document.getElementById('confirm').open`, 5*time.Second)
	if ok {
		card := cardOf(id)
		waitJS(t, ctx, fmt.Sprintf(`%s === null || Number(%s.dataset.writes || 0) > %d`, card, card, writes), 5*time.Second)
	}
}

// roomConfig reads room id's settings from the admin API.
func roomConfig(t *testing.T, s *localstack.Stack, id string) map[string]any {
	t.Helper()
	code, m := admin(t, s, "GET", id, nil)
	c, _ := m["config"].(map[string]any)
	if code != 200 || c == nil {
		t.Fatalf("get %s: %d %v", id, code, m)
	}
	return c
}

// A refused change stays in view, with the server's reason, across
// refreshes until the operator dismisses it, and the field shows the room's
// actual setting, not the refused value (issue: a 150-character title was
// refused, the error cleared by the next refresh and the value left in the
// field, so it looked applied).
func TestConsoleKeepsARefusal(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, map[string]any{"page": map[string]any{"title": map[string]string{"en": "Doors"}}})
	ctx := consoleOnStack(t, s)
	card := cardOf(id)
	waitJS(t, ctx, card+`?.querySelector('[data-title="en"]').value === "Doors"`, 10*time.Second)
	long := strings.Repeat("x", 150)
	setField(t, ctx, id, `[data-title="en"]`, long)
	press(t, ctx, id, ".title-form button")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, card+`.dataset.refused === "1"`, 5*time.Second)
	refusal := card + `.querySelector('[data-field="refusal"]')`
	text := browsertest.Eval[string](t, ctx, refusal+`.textContent`)
	if !strings.Contains(text, "page.title") || !strings.Contains(text, "150 characters, more than 120") {
		t.Errorf("the refusal says %q, want the server's reason", text)
	}
	// Three refreshes later it is still there, and the field shows the title
	// the room has.
	n := browsertest.Eval[int](t, ctx, `Number(document.body.dataset.refreshes)`)
	waitJS(t, ctx, fmt.Sprintf(`Number(document.body.dataset.refreshes) >= %d`, n+3), 10*time.Second)
	if !browsertest.Eval[bool](t, ctx, card+`.querySelector('.refusal').checkVisibility()`) ||
		browsertest.Eval[string](t, ctx, refusal+`.textContent`) != text {
		t.Errorf("the refusal did not stay: %q", browsertest.Eval[string](t, ctx, refusal+`.textContent`))
	}
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-title="en"]').value`); got != "Doors" {
		t.Errorf("after the refusal the title field shows %q, want the room's title", got)
	}
	if got := fmt.Sprint(roomConfig(t, s, id)["page"]); got != "map[title:map[en:Doors]]" {
		t.Errorf("the room's page after the refusal: %s", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-room=%q] [data-dismiss]`, id)))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `!`+card+`.querySelector('.refusal').checkVisibility()`, 5*time.Second)
}

// A cancelled edit leaves the field showing the room's actual setting, and
// the next "Change…" does not send it (issue: it stayed in the field and the
// next change sent it).
func TestConsoleCancelShowsTheRoomsSettings(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil) // maxActive 5, admitPerMinute 60
	ctx := consoleOnStack(t, s)
	card := cardOf(id)
	field := func(k string) string {
		return browsertest.Eval[string](t, ctx, card+fmt.Sprintf(`.querySelector('[data-setting=%q]').value`, k))
	}
	waitJS(t, ctx, card+`?.querySelector('[data-setting="maxActive"]').value === "5"`, 10*time.Second)
	setField(t, ctx, id, `[data-setting="maxActive"]`, "9")
	if text := press(t, ctx, id, ".settings > button"); !strings.Contains(text, "maxActive 5 → 9") {
		t.Errorf("confirmation %q", text)
	}
	answer(t, ctx, id, false)
	if got := field("maxActive"); got != "5" {
		t.Errorf("after the cancel maxActive shows %q, want the room's 5", got)
	}
	setField(t, ctx, id, `[data-setting="admitPerMinute"]`, "70")
	text := press(t, ctx, id, ".settings > button")
	if strings.Contains(text, "maxActive") || !strings.Contains(text, "admitPerMinute 60 → 70") {
		t.Errorf("the next change would send %q", text)
	}
	answer(t, ctx, id, true)
	waitJS(t, ctx, card+`.querySelector('[data-setting="admitPerMinute"]').value === "70"`, 5*time.Second)
	if c := roomConfig(t, s, id); c["maxActive"] != float64(5) || c["admitPerMinute"] != float64(70) {
		t.Errorf("the room after cancel then change: maxActive %v admitPerMinute %v", c["maxActive"], c["admitPerMinute"])
	}
}

// Every setting of the settings table has a control on the card, with the
// table's limits (numbers' range, texts' length, the colour's pattern): the
// console changes what `vestibule rooms set` changes, within what the API
// takes.
func TestConsoleHasEverySettingWithTheAPIsLimits(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	ctx := consoleOnStack(t, s)
	card := cardOf(id)
	waitJS(t, ctx, card+` !== null`, 10*time.Second)
	for _, row := range room.Settings() {
		if row.Name == "page" {
			for _, p := range row.Parts {
				sel := fmt.Sprintf(`[data-title="en"], [data-message="en"], [data-brand=%q]`, p.Name)
				got := browsertest.Eval[map[string]any](t, ctx, fmt.Sprintf(`(() => {
					const i = [...%s.querySelectorAll(%q)].find((i) => (i.dataset.title && %q === 'title') || (i.dataset.message && %q === 'message') || i.dataset.brand === %q);
					return i ? {maxLength: i.maxLength, pattern: i.pattern} : {};
				})()`, card, sel, p.Name, p.Name, p.Name))
				if len(got) == 0 {
					t.Errorf("no control for page.%s", p.Name)
					continue
				}
				if p.MaxLen > 0 && got["maxLength"] != float64(p.MaxLen) {
					t.Errorf("page.%s: maxLength %v, want the API's %d", p.Name, got["maxLength"], p.MaxLen)
				}
				if p.Pattern != "" && got["pattern"] != p.Pattern {
					t.Errorf("page.%s: pattern %v, want %s", p.Name, got["pattern"], p.Pattern)
				}
			}
			continue
		}
		got := browsertest.Eval[map[string]any](t, ctx, fmt.Sprintf(`(() => {
			const i = %s.querySelector('.settings [data-setting=%q]');
			return i ? {min: i.min, max: i.max, maxLength: i.maxLength, options: [...(i.options || [])].map((o) => o.value)} : {};
		})()`, card, row.Name))
		if len(got) == 0 {
			t.Errorf("no control for %s", row.Name)
			continue
		}
		if row.Numeric && (got["min"] != fmt.Sprint(row.Min) || got["max"] != fmt.Sprint(row.Max)) {
			t.Errorf("%s: range %v..%v, want the API's %d..%d", row.Name, got["min"], got["max"], row.Min, row.Max)
		}
		if row.MaxLen > 0 && got["maxLength"] != float64(row.MaxLen) {
			t.Errorf("%s: maxLength %v, want %d", row.Name, got["maxLength"], row.MaxLen)
		}
		if row.Choices != nil && fmt.Sprint(got["options"]) != fmt.Sprint(row.Choices) {
			t.Errorf("%s: options %v, want %v", row.Name, got["options"], row.Choices)
		}
	}
}

// One change of each kind the console makes, each confirmed with old → new
// first: a time limit, the join challenge and the gate (one form), the
// branding, then drain and delete.
func TestConsoleChangesEachKindOfSetting(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, map[string]any{"maxActive": 1, "claimTTLSeconds": 120})
	enqueue(t, s, id, 3) // one admitted, two waiting
	ctx := consoleOnStack(t, s)
	card := cardOf(id)
	waitJS(t, ctx, card+`?.querySelector('[data-figure="waiting"]').textContent === "2"`, 10*time.Second)
	confirmWith := func(text string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("confirmation %q, want %q in it", text, w)
			}
		}
		answer(t, ctx, id, true)
	}

	setField(t, ctx, id, `[data-setting="claimTTLSeconds"]`, "300")
	setField(t, ctx, id, `[data-setting="joinChallengeBits"]`, "8")
	setField(t, ctx, id, `[data-setting="gate"]`, "on")
	confirmWith(press(t, ctx, id, ".settings > button"), "claimTTLSeconds 120 → 300", "joinChallengeBits 0 → 8", "gate off → on")
	waitJS(t, ctx, card+`.querySelector('[data-setting="gate"]').checked`, 5*time.Second)
	if c := roomConfig(t, s, id); c["claimTTLSeconds"] != float64(300) || c["joinChallengeBits"] != float64(8) || c["gate"] != true {
		t.Errorf("after the settings change: %v", c)
	}

	setField(t, ctx, id, `[data-brand="accentColor"]`, "#b3261e")
	confirmWith(press(t, ctx, id, ".brand-form button"), "page.accentColor none → #b3261e")
	waitJS(t, ctx, fmt.Sprintf(`document.getElementById('status').textContent.startsWith("Room %s: page.accentColor")`, id), 5*time.Second)
	if got := fmt.Sprint(roomConfig(t, s, id)["page"]); got != "map[accentColor:#b3261e]" {
		t.Errorf("the room's page after the branding: %s", got)
	}

	confirmWith(press(t, ctx, id, `[data-action="close"]`), "mode queue → closed")
	waitJS(t, ctx, card+`.dataset.mode === "closed"`, 5*time.Second)
	// Two still wait: the API refuses the delete, and the card says why.
	confirmWith(press(t, ctx, id, `[data-action="delete"]`), "→ deleted")
	waitJS(t, ctx, card+`.dataset.refused === "1"`, 5*time.Second)
	if text := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-field="refusal"]').textContent`); !strings.Contains(text, "room_not_empty") {
		t.Errorf("the refused delete says %q", text)
	}
	if code, _ := admin(t, s, "GET", id, nil); code != 200 {
		t.Fatalf("the refused delete removed the room: %d", code)
	}
	confirmWith(press(t, ctx, id, `[data-action="drain"]`), "waiting 2 → 0")
	waitJS(t, ctx, card+`.querySelector('[data-figure="waiting"]').textContent === "0"`, 5*time.Second)
	confirmWith(press(t, ctx, id, `[data-action="delete"]`), "→ deleted")
	waitJS(t, ctx, card+` === null`, 5*time.Second)
	if code, _ := admin(t, s, "GET", id, nil); code != 404 {
		t.Errorf("after the delete the room answers %d, want 404", code)
	}
}

// A room the API refuses to create (a plain http:// origin that is not this
// machine) stays refused in view, with the reason, across refreshes until
// dismissed.
func TestConsoleKeepsARefusedCreate(t *testing.T) {
	s := stack(t)
	ctx := consoleOnStack(t, s)
	waitJS(t, ctx, `document.body.dataset.refreshes >= 1`, 10*time.Second)
	b := make([]byte, 3)
	rand.Read(b)
	id := "refused-" + hex.EncodeToString(b)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#new-room summary`))); err != nil {
		t.Fatal(err)
	}
	for sel, v := range map[string]string{"#new-id": id, "#new-origin": "http://origin.example/"} {
		js, _ := json.Marshal([]string{sel, v})
		browsertest.Eval[any](t, ctx, fmt.Sprintf(`(([sel, v]) => { document.querySelector(sel).value = v; })(%s)`, js))
	}
	browsertest.Eval[any](t, ctx, `document.querySelector('#create-form button').click()`)
	waitJS(t, ctx, `document.getElementById('confirm').open`, 5*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
		t.Fatal(err)
	}
	box := `document.getElementById('create-refusal')`
	waitJS(t, ctx, box+`.checkVisibility()`, 5*time.Second)
	text := browsertest.Eval[string](t, ctx, box+`.textContent`)
	if !strings.Contains(text, "invalid_config") || !strings.Contains(text, "https://") {
		t.Errorf("the refusal says %q", text)
	}
	n := browsertest.Eval[int](t, ctx, `Number(document.body.dataset.refreshes)`)
	waitJS(t, ctx, fmt.Sprintf(`Number(document.body.dataset.refreshes) >= %d`, n+3), 10*time.Second)
	if !browsertest.Eval[bool](t, ctx, box+`.checkVisibility()`) {
		t.Error("the refused create left the screen before it was dismissed")
	}
	if code, _ := admin(t, s, "GET", id, nil); code != 404 {
		t.Errorf("the refused room answers %d", code)
	}
	browsertest.Eval[any](t, ctx, box+`.querySelector('[data-dismiss]').click()`)
	waitJS(t, ctx, `!`+box+`.checkVisibility()`, 5*time.Second)
}

// The console's steering line shows the rate a steered room admits at
// between its bounds, and, while its pace climbs, the pace its ETAs are told
// at beside it (ahead of the rate: docs/ENGINE.md, "Steering"). The room is
// real; the stats of a climb, which need the origin's reports, are set on
// the admin list's answer as it reaches the page.
func TestConsoleSteeringShowsTheRate(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, map[string]any{"admitPerMinute": 600, "admitPerMinuteMin": 60})
	ctx := consoleOnStack(t, s)
	js, _ := json.Marshal(id)
	browsertest.Eval[any](t, ctx, fmt.Sprintf(`(() => {
		const id = %s, real = window.fetch;
		window.fetch = async (path, init) => {
			const r = await real(path, init);
			if (path !== '/api/admin/rooms' || !r.ok) return r;
			const j = await r.json();
			for (const room of j.rooms || []) {
				if (room.room === id) Object.assign(room.stats, { paceWhy: 'climb', ratePerMinute: 250, pacePerMinute: 412.5 });
			}
			return new Response(JSON.stringify(j), { status: r.status, headers: r.headers });
		};
	})()`, js))
	line := cardOf(id) + `?.querySelector('[data-field="steering"]')`
	want := "rate 250/min of 60..600 (ETAs told at 412.5/min), climbing: the origin reports below 0.75"
	wantJS, _ := json.Marshal(want)
	waitJS(t, ctx, line+`?.textContent === `+string(wantJS), 10*time.Second)
}
