package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
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
	if !ok || tk.Visitor == "" {
		t.Fatalf("no pre-queue ticket: %+v", tk)
	}
	// Before the opening the reference is the visitor id; the draw is secret.
	waitJS(t, ko, `document.getElementById("draw-ref").checkVisibility()`, wait)
	ref := text(t, ko, "draw-ref")
	for _, want := range []string{tk.Visitor, "추첨"} {
		if !strings.Contains(ref, want) {
			t.Errorf("the draw reference %q lacks %q", ref, want)
		}
	}
	if strings.Contains(ref, "verify-draw") || regexp.MustCompile(`0\.\d{6}`).MatchString(ref) {
		t.Errorf("the draw reference %q shows a draw before the opening", ref)
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

// The page's languages, and a room message in each (page.message).
var (
	pageLangs   = []string{"en", "ko", "ja", "zh-Hans", "es", "fr", "de", "pt-BR"}
	langMessage = map[string]string{
		"en": "Doors open at 19:00.", "ko": "19시에 입장합니다.", "ja": "19時に開場します。", "zh-Hans": "19:00 开始入场。",
		"es": "Las puertas abren a las 19:00.", "fr": "Ouverture des portes à 19 h.", "de": "Einlass ab 19 Uhr.",
		"pt-BR": "Os portões abrem às 19h.",
	}
)

// chooseLang picks a language with the page's language switch, as a visitor
// does: the select's value, then its change event.
func chooseLang(t *testing.T, ctx context.Context, lang string) {
	t.Helper()
	if !browsertest.Eval[bool](t, ctx, fmt.Sprintf(`(() => {
		const s = document.getElementById("lang");
		if (![...s.options].some(o => o.value === %[1]q)) return false;
		s.value = %[1]q;
		s.dispatchEvent(new Event("change", { bubbles: true }));
		return true;
	})()`, lang)) {
		t.Fatalf("the language switch has no %s: %s", lang, pageSummary(ctx))
	}
}

// englishShown lists the English texts of the page's table (i18n.js, as
// texts) that the page shows in lang: in its visible text (hidden elements
// are not in innerText; the screen reader's live region and labels are), its
// title, and its aria-label and alt attributes. Each English text is cut at
// its placeholders; a piece shorter than four characters, or one the
// translation has too (a command, a unit), is not looked for.
func englishShown(t *testing.T, ctx context.Context, texts, lang string) []string {
	t.Helper()
	return browsertest.Eval[[]string](t, ctx, fmt.Sprintf(`((texts, lang) => {
		const shown = [document.body.innerText, document.title,
			...[...document.querySelectorAll("[aria-label], [alt]")].map(e => (e.getAttribute("aria-label") || "") + " " + (e.getAttribute("alt") || ""))].join("\n");
		const found = [];
		for (const [key, en] of Object.entries(texts.en)) {
			for (let piece of en.split(/\{\w+\}/)) {
				piece = piece.trim().replace(/^[.,:;…–]+|[.,:;…–]+$/g, "").trim();
				if (piece.length < 4 || texts[lang][key].includes(piece)) continue;
				if (shown.includes(piece)) found.push(key + ": " + JSON.stringify(piece));
			}
		}
		return found;
	})(%s, %q)`, texts, lang))
}

// TestPageInEveryLanguage: the waiting page in each of its languages, asked
// for with ?lang=: <html lang> and dir, the room's message in that language,
// no English text of the page's table shown (waiting, paused, closed, and in
// a pre-queue), and axe-core clean on the waiting page. A browser's languages choose one too, with fallbacks, and
// the switch changes it.
func TestPageInEveryLanguage(t *testing.T) {
	s := stack(t, "")
	// A room id without English words: it is shown on the page.
	room := "r-" + redistest.Room(t)[len(redistest.Room(t))-8:]
	cfg := baseSettings(s)
	cfg["page"] = map[string]any{"message": langMessage}
	putRoom(t, s, room, cfg)
	fillRoom(t, s, room) // everyone after waits

	texts, table := pageTexts(t, s)
	if len(table) != len(pageLangs) {
		t.Errorf("the page has %d languages, the test knows %d: %v", len(table), len(pageLangs), pageLangs)
	}

	pages := map[string]context.Context{}
	for _, lang := range pageLangs {
		v := visitor(t)
		pages[lang] = v
		do(t, v, chromedp.Navigate(pageURL(s.URL(), room)+"&lang="+lang))
		waitState(t, v, "waiting", wait)
		waitJS(t, v, fmt.Sprintf(`(() => { const m = document.getElementById("message");
			return !m.hidden && m.textContent === %q && m.lang === %q; })()`, langMessage[lang], lang), wait)
		waitJS(t, v, `document.getElementById("position").textContent !== "–"`, wait)
		if got := browsertest.Eval[string](t, v, `document.documentElement.lang + " " + document.documentElement.dir`); got != lang+" ltr" {
			t.Errorf("%s: <html lang dir> = %q", lang, got)
		}
		if got, want := text(t, v, "title"), table[lang]["waitingTitle"]; got != want {
			t.Errorf("%s: title %q, want %q", lang, got, want)
		}
		if got := browsertest.Eval[string](t, v, `document.getElementById("lang").value`); got != lang {
			t.Errorf("%s: the switch shows %q", lang, got)
		}
		if lang != "en" {
			if found := englishShown(t, v, texts, lang); len(found) > 0 {
				t.Errorf("%s: the waiting page shows English: %v", lang, found)
			}
		}
		// One language loaded: its own table (English's is in the bundle).
		tables := browsertest.Eval[[]string](t, v, `performance.getEntriesByType("resource")
			.map(e => new URL(e.name).pathname).filter(p => p.startsWith("/lang/"))`)
		if want := []string{"/lang/" + lang + ".json"}; lang == "en" && len(tables) != 0 || lang != "en" && !slices.Equal(tables, want) {
			t.Errorf("%s: the page fetched the language tables %v", lang, tables)
		}
		checkAxe(t, v)
	}

	// Paused, then closed: every page says so in its language, within the
	// rule's 60 s at most (a page whose wait is minutes reads the status
	// about once a minute).
	inEveryLang := func(state string) {
		t.Helper()
		putRoom(t, s, room, map[string]any{"mode": state})
		for _, lang := range pageLangs {
			v := pages[lang]
			waitState(t, v, state, 65*time.Second)
			if got, want := text(t, v, "title"), table[lang][state+"Title"]; got != want {
				t.Errorf("%s: %s title %q, want %q", lang, state, got, want)
			}
			if lang != "en" {
				if found := englishShown(t, v, texts, lang); len(found) > 0 {
					t.Errorf("%s: the %s page shows English: %v", lang, state, found)
				}
			}
		}
	}
	inEveryLang("paused")

	// The browser's languages, without ?lang=: the first the page speaks,
	// by its primary language (fr-CA finds fr, zh-CN zh-Hans, pt pt-BR).
	for accept, want := range map[string]string{"it-IT,fr-CA;q=0.9": "fr", "zh-CN,zh": "zh-Hans", "pt": "pt-BR", "nl": "en"} {
		v := visitorIn(t, accept)
		do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
		waitState(t, v, "paused", wait)
		if got := browsertest.Eval[string](t, v, `document.documentElement.lang`); got != want {
			t.Errorf("a browser in %s: page in %q, want %q", accept, got, want)
		}
		if got := text(t, v, "title"); got != table[want]["pausedTitle"] {
			t.Errorf("a browser in %s: title %q", accept, got)
		}
	}

	// The switch: Japanese to German, the room's message with it, and back.
	ja := pages["ja"]
	chooseLang(t, ja, "de")
	waitJS(t, ja, `document.documentElement.lang === "de"`, wait)
	if got := text(t, ja, "title") + " " + text(t, ja, "message"); got != table["de"]["pausedTitle"]+" "+langMessage["de"] {
		t.Errorf("after switching to German: %q", got)
	}
	chooseLang(t, ja, "ja")
	waitJS(t, ja, `document.documentElement.lang === "ja"`, wait)

	inEveryLang("closed")

	// A pre-queue: the countdown, the opening time and the lottery reference.
	pre := "p-" + room[2:]
	preCfg := baseSettings(s)
	preCfg["opensAt"] = time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	putRoom(t, s, pre, preCfg)
	for _, lang := range pageLangs {
		v := pages[lang]
		do(t, v, chromedp.Navigate(pageURL(s.URL(), pre)+"&lang="+lang))
		waitState(t, v, "prequeue", wait)
		waitJS(t, v, `document.getElementById("draw-ref").checkVisibility() && document.getElementById("opens-at").textContent !== ""`, wait)
		if got, want := text(t, v, "title"), table[lang]["prequeueTitle"]; got != want {
			t.Errorf("%s: pre-queue title %q, want %q", lang, got, want)
		}
		if lang != "en" {
			if found := englishShown(t, v, texts, lang); len(found) > 0 {
				t.Errorf("%s: the pre-queue page shows English: %v", lang, found)
			}
		}
	}
}
