package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// The branded room of TestBrand: a title and a message in English and
// Korean, a logo served by the stack itself (the page's CSP allows 'self' and
// https: images) and an amber accent, which needs black text on it.
var (
	brandTitle   = map[string]string{"en": "Spring Concert 2026", "ko": "2026 봄 콘서트"}
	brandMessage = map[string]string{
		"en": "Tickets go on sale at 10:00. Up to 4 tickets per person.\nKeep this page open: you will be taken to the box office when it is your turn.",
		"ko": "10시에 예매가 시작됩니다. 1인당 최대 4매까지 예매할 수 있습니다.\n이 페이지를 열어 두세요. 차례가 되면 예매 페이지로 이동합니다.",
	}
	brandAccent = "#f2a900"
)

// TestBrand: the room's page setting on the waiting page. The title, the
// message and the logo show, in Korean when the browser prefers it; the accent
// colours the page with black or white text by contrast; settings are shown
// as text and run nothing; a change shows within one poll; a closed room
// shows its message (and a change to it) instead of the generic line; and
// axe-core finds no serious or critical accessibility problem.
func TestBrand(t *testing.T) {
	s := brandStack(t)
	room := "spring-concert-" + redistest.Room(t)[len(redistest.Room(t))-6:]
	cfg := baseSettings(s)
	cfg["heartbeatTTLSeconds"] = 10 // closed rooms are polled every 5 s
	// the blocker fillRoom admits holds the room's one place for the whole test, however long a
	// busy machine takes: with the default 2 minutes its claim lapsed and the page's visitor was admitted
	cfg["claimTTLSeconds"] = 3600
	cfg["page"] = map[string]any{
		"title": brandTitle, "message": brandMessage,
		"logoUrl": s.URL() + "/brand-logo.png", "accentColor": brandAccent,
	}
	putRoom(t, s, room, cfg)
	fillRoom(t, s, room)

	// English: the browser's language (the shared browser runs with --lang=en-US).
	en := visitor(t)
	enReqs := countRequests(en)
	dialogs := watchDialogs(en)
	opened := time.Now()
	do(t, en, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, en, "waiting", wait)
	waitBrand(t, en, "en")
	// The accent: amber, with black text on it (white would be 2.0:1).
	if got := browsertest.Eval[string](t, en, `getComputedStyle(document.documentElement).getPropertyValue("--brand-text").trim()`); got != "#000000" {
		t.Errorf("text on %s = %q, want #000000", brandAccent, got)
	}
	if got := browsertest.Eval[string](t, en, `getComputedStyle(document.getElementById("bar-fill")).backgroundColor`); got != "rgb(242, 169, 0)" {
		t.Errorf("progress bar colour = %q, want the accent", got)
	}
	if got := browsertest.Eval[string](t, en, `document.title`); got != "(1) You're in line · "+brandTitle["en"] {
		t.Errorf("document title = %q", got)
	}
	// Whatever the accent, the text put on it reaches 4.5:1 (WCAG AA).
	worst, err := chromedp.Run(en, chromedp.Evaluate[float64](`import("/js/brand.js").then(m => {
		let worst = 99;
		for (let i = 0; i < 1 << 24; i += 251) {
			const c = "#" + i.toString(16).padStart(6, "0");
			worst = Math.min(worst, m.contrast(c, m.textOn(c)));
		}
		return worst;
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if worst < 4.5 {
		t.Errorf("the worst contrast of text on an accent is %.2f:1, want at least 4.5:1", worst)
	}
	screenshot(t, en, "screenshot-branded-en.png")
	checkAxe(t, en)
	// The dark scheme keeps its contrast with the accent too.
	if _, err := chromedp.Call(en, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
	}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, en, `matchMedia("(prefers-color-scheme: dark)").matches`, wait)
	checkAxe(t, en)
	if _, err := chromedp.Call(en, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}

	// Korean: a browser that prefers it (Accept-Language and navigator.languages).
	ko := visitorIn(t, "ko-KR,ko")
	do(t, ko, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, ko, "waiting", wait)
	waitBrand(t, ko, "ko")
	if got := text(t, ko, "title"); got != "대기열에 들어왔습니다" {
		t.Errorf("Korean page title = %q", got)
	}
	screenshot(t, ko, "screenshot-branded-ko.png")
	checkAxe(t, ko)
	// The language switch changes the room's texts too.
	chooseLang(t, ko, "en")
	waitBrand(t, ko, "en")

	// A change while the page is open shows at its next poll (the poll reply
	// names a new page version, the page reads the status) or its next read
	// of the status, which it watches (watch.js). The visitor, first
	// in a full room, is told to come back at the ETA of the room's measured
	// rate, which falls as the minute since its last admission goes by (about
	// a second at first, up to about a minute): the test waits for that poll.
	msg := map[string]string{"en": "Only 12 tickets left.", "ko": "12매 남았습니다."}
	cfg["page"].(map[string]any)["message"] = msg
	polled := enReqs.get("poll")
	putRoom(t, s, room, map[string]any{"page": cfg["page"]})
	if !testkit.WaitFor(90*time.Second, func() bool { return enReqs.get("poll") > polled }) {
		t.Fatalf("the page did not poll within 90 s of the change")
	}
	waitJS(t, en, fmt.Sprintf(`document.getElementById("message").textContent === %q`, msg["en"]), 5*time.Second)
	// Reading the page costs no status request beyond the watch's (one every
	// 7 s ± 1 s, served by the edge) but one per page version a reply names
	// first (2: the join's, the change's), not one per poll (counted once the
	// page has polled three times, at whatever pace it is told).
	testkit.WaitFor(90*time.Second, func() bool { return enReqs.get("poll") >= 3 })
	elapsed := time.Since(opened)
	if polls, status := enReqs.get("poll"), enReqs.get("status"); status > int(elapsed/(6*time.Second))+2 || polls < 3 {
		t.Errorf("the page sent %d status requests over %d polls in %v; want one every 6 s at most, and one per page change (2)",
			status, polls, elapsed.Round(time.Second))
	}

	// Closed: the room's message replaces the generic line, and a change to
	// it shows while visitors wait (at the closed room's pace: 5 s).
	soldOut := map[string]string{"en": "Sold out. Thank you for waiting!", "ko": "매진되었습니다. 기다려 주셔서 감사합니다!"}
	cfg["page"].(map[string]any)["message"] = soldOut
	putRoom(t, s, room, map[string]any{"mode": "closed", "page": cfg["page"]})
	// The visitor, first in a full room that admitted one lately, was told to
	// come back at that slow rate's ETA (up to about a minute): a reload asks
	// at once, with the stored ticket. (The closed room's own pace, a quarter
	// of the 10 s grace, is what the message change below waits for.)
	do(t, en, chromedp.Reload())
	waitState(t, en, "closed", wait)
	waitJS(t, en, fmt.Sprintf(`document.getElementById("lead").textContent === %q && document.getElementById("message").hidden`, soldOut["en"]), wait)
	if got := text(t, en, "title"); got != "This line is closed" {
		t.Errorf("closed title = %q", got)
	}
	waitJS(t, en, `document.getElementById("announce").textContent.includes("Sold out")`, wait)
	checkAxe(t, en)
	screenshot(t, en, "screenshot-branded-closed.png")
	soldOut["en"] = "Sold out. More dates soon."
	putRoom(t, s, room, map[string]any{"page": cfg["page"]})
	waitJS(t, en, fmt.Sprintf(`document.getElementById("lead").textContent === %q`, soldOut["en"]), wait)
	// A newcomer, without a ticket, sees the message too.
	late := visitor(t)
	do(t, late, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, late, "closed", wait)
	waitJS(t, late, fmt.Sprintf(`document.getElementById("lead").textContent === %q`, soldOut["en"]), wait)
	if n := dialogs(); n != 0 {
		t.Errorf("%d dialogs opened", n)
	}
}

// TestBrandTextIsText: settings are shown as text; markup in them is not
// parsed and runs nothing.
func TestBrandTextIsText(t *testing.T) {
	s := brandStack(t)
	room := redistest.Room(t)
	title := `<img src=x onerror=alert(1)>`
	message := `<script>alert(2)</script><b onmouseover=alert(3)>bold</b>`
	cfg := baseSettings(s)
	cfg["page"] = map[string]any{"title": title, "message": message}
	putRoom(t, s, room, cfg)
	fillRoom(t, s, room)

	v := visitor(t)
	dialogs := watchDialogs(v)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "waiting", wait)
	waitJS(t, v, fmt.Sprintf(`document.getElementById("room-name").textContent === %q`, title), wait)
	if got := text(t, v, "message"); got != message {
		t.Errorf("message = %q, want the markup as text", got)
	}
	if n := browsertest.Eval[int](t, v, `document.querySelectorAll('img[src="x"], b, main script, header script').length`); n != 0 {
		t.Errorf("%d elements were made from the settings' markup", n)
	}
	// A probe made after the settings' markup: once a broken image made now
	// has fired its onerror, one the markup had made would have fired too.
	browsertest.Eval[bool](t, v, `(() => { const i = new Image(); i.onerror = () => { window.__probe = true }; i.src = "x?probe"; return true })()`)
	waitJS(t, v, `window.__probe === true`, wait)
	if n := dialogs(); n != 0 {
		t.Errorf("%d dialogs opened", n)
	}
}

// brandStack is stack() over a copy of static/ with a logo added, so the
// logo is same-origin (img-src 'self') without shipping a test image.
func brandStack(t *testing.T) *localstack.Stack {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(repoPath(t, "static"))); err != nil {
		t.Fatal(err)
	}
	writeLogo(t, filepath.Join(dir, "brand-logo.png"))
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL:     "redis://" + redistest.Own(t).Options().Addr,
		Addr:         "127.0.0.1:0",
		OriginAddr:   "127.0.0.1:0",
		StaticDir:    dir,
		KeyDir:       t.TempDir(),
		AdminKey:     "e2e-admin-key-brand-0123456789", // make dev wants 16 characters or more
		TickInterval: tick,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("local stack: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writeLogo draws a small logo: an amber disc with a dark note beside three bars.
func writeLogo(t *testing.T, path string) {
	t.Helper()
	const w, h = 192, 96
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	amber := color.NRGBA{0xf2, 0xa9, 0x00, 0xff}
	dark := color.NRGBA{0x2b, 0x1d, 0x0e, 0xff}
	in := func(x, y, cx, cy, r int) bool { return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r }
	for y := range h {
		for x := range w {
			switch {
			case in(x, y, 48, 48, 44) && (in(x, y, 40, 62, 11) || (x >= 47 && x <= 52 && y >= 20 && y <= 62) || (x >= 52 && x <= 64 && y >= 20 && y <= 27)):
				img.Set(x, y, dark)
			case in(x, y, 48, 48, 44):
				img.Set(x, y, amber)
			case y >= 78-20*((x-104)/24+1) && y <= 80 && (x-104)%24 < 16 && x >= 104 && x < 176:
				img.Set(x, y, dark)
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// visitorIn is visitor() for a browser whose preferred languages are langs
// (an Accept-Language value): the request header and navigator.languages.
func visitorIn(t *testing.T, langs string) context.Context {
	t.Helper()
	v := visitor(t)
	info, err := chromedp.CallBrowser(v, cdpbrowser.GetVersion, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(v, emulation.SetUserAgentOverride,
		emulation.SetUserAgentOverrideParams{UserAgent: info.UserAgent, AcceptLanguage: langs}); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitBrand waits until the page shows the branded room's title, message
// and logo in lang, each marked with its language.
func waitBrand(t *testing.T, ctx context.Context, lang string) {
	t.Helper()
	waitJS(t, ctx, fmt.Sprintf(`(() => {
		const name = document.getElementById("room-name"), msg = document.getElementById("message");
		return name.textContent === %q && name.lang === %q && msg.textContent === %q && msg.lang === %q && !msg.hidden;
	})()`, brandTitle[lang], lang, brandMessage[lang], lang), wait)
	// The logo loaded (the CSP let it through) and shows.
	waitJS(t, ctx, `(() => { const l = document.getElementById("logo");
		return !l.hidden && l.complete && l.naturalWidth === 192 && l.getBoundingClientRect().height > 0; })()`, wait)
	if got := browsertest.Eval[string](t, ctx, `document.documentElement.lang`); got != lang {
		t.Errorf("page language = %q, want %q", got, lang)
	}
}

// watchDialogs counts the JavaScript dialogs (alert, confirm, prompt) that
// open in the tab, dismissing each.
func watchDialogs(ctx context.Context) func() int {
	var mu sync.Mutex
	n := 0
	events := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range events {
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// axeScript is axe-core's axe.min.js as `make deps-axe` installed it
// (testkit.AxeCore).
func axeScript(t *testing.T) string {
	t.Helper()
	return testkit.AxeCore(t)
}

// checkAxe runs axe-core on the page (injected through the DevTools protocol,
// which the page's CSP does not govern) and fails on any serious or critical
// violation.
func checkAxe(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](axeScript(t)+";0")); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document).then(r => JSON.stringify({
		passes: r.passes.length,
		violations: r.violations
			.filter(v => v.impact === "serious" || v.impact === "critical")
			.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5)}))}))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe-core: %v", err)
	}
	var out struct {
		Passes     int   `json:"passes"`
		Violations []any `json:"violations"`
	}
	if err := json.Unmarshal([]byte(res), &out); err != nil || out.Passes == 0 {
		t.Fatalf("axe-core answered %q: %v", res, err)
	}
	state := browsertest.Eval[string](t, ctx, `document.body.dataset.state`)
	if len(out.Violations) > 0 {
		t.Errorf("axe-core: %d serious or critical violations on the %s page: %s", len(out.Violations), state, res)
	} else {
		t.Logf("axe-core: %d rules pass on the %s page, no serious or critical violation", out.Passes, state)
	}
}
