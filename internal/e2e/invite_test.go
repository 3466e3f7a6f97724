package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestUninvitedJoinPage: a join to an invite-only room without an invitation
// shows why, in the visitor's language (English, then Korean with ?lang=);
// the room's invitation link joins the line; the same link, used up, says
// the invitation cannot be used.
func TestUninvitedJoinPage(t *testing.T) {
	s := stack(t, "")
	room := "invite-only"
	cfg := baseSettings(s)
	cfg["inviteOnly"], cfg["mode"] = true, "paused"
	putRoom(t, s, room, cfg)

	v := visitor(t)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "uninvited", wait)
	if got := text(t, v, "title") + " / " + text(t, v, "lead"); got != "Invitation only / This waiting room admits invited visitors only. If you have an invitation link, open it." {
		t.Errorf("uninvited page: %q", got)
	}
	k := visitor(t)
	do(t, k, chromedp.Navigate(pageURL(s.URL(), room)+"&lang=ko"))
	waitState(t, k, "uninvited", wait)
	if got := text(t, k, "title"); got != "초대된 분만 입장" {
		t.Errorf("Korean uninvited title %q: %s", got, pageSummary(k))
	}

	code, _, made := testkit.CallJSON(t, http.MethodPost, s.URL()+"/api/admin/rooms/"+room+"/invitations", s.AdminKey(),
		map[string]any{"uses": 1})
	if code != http.StatusCreated {
		t.Fatalf("make an invitation: %d %v", code, made)
	}
	link := s.URL() + made["link"].(string)
	if u, err := url.Parse(link); err != nil || u.Query().Get("invite") == "" {
		t.Fatalf("link %q", link)
	}
	g := visitor(t)
	do(t, g, chromedp.Navigate(link))
	waitState(t, g, "paused", wait)

	late := visitor(t)
	do(t, late, chromedp.Navigate(link))
	waitState(t, late, "uninvited", wait)
	if got := text(t, late, "lead"); !strings.Contains(got, "cannot be used") {
		t.Errorf("used-up invitation: %q", got)
	}
}

// pageTexts is the page's table of texts in every language (i18n.js's
// texts): English from the module the bundle is built from, the others from
// the tables the page fetches (lang/<tag>.json).
func pageTexts(t *testing.T, s *localstack.Stack) (raw string, table map[string]map[string]string) {
	t.Helper()
	probe := visitor(t)
	do(t, probe, chromedp.Navigate(s.URL()+"/?lang=en"))
	raw, err := chromedp.Run(probe, chromedp.Evaluate[string](`import("/js/i18n.js").then(async m => {
		for (const l of Object.keys(m.LANGUAGES)) if (!await m.load(l)) throw new Error("no table for " + l);
		return JSON.stringify(m.texts);
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("import i18n.js: %v", err)
	}
	if err := json.Unmarshal([]byte(raw), &table); err != nil {
		t.Fatalf("the page's texts: %v", err)
	}
	return raw, table
}

// TestInvitationScreensSpeak: a screen reader hears why an invite-only room
// turned the visitor away, in every language of the page: the live region
// says the screen's title and its lead (an invitation is needed; the
// invitation cannot be used), not "Something went wrong"; axe-core finds no
// serious or critical problem on either screen.
func TestInvitationScreensSpeak(t *testing.T) {
	s := stack(t, "")
	room := "invite-speaks"
	cfg := baseSettings(s)
	cfg["inviteOnly"], cfg["mode"] = true, "paused"
	putRoom(t, s, room, cfg)
	_, table := pageTexts(t, s)
	if len(table) != len(pageLangs) {
		t.Fatalf("the page has %d languages, the test knows %d", len(table), len(pageLangs))
	}
	for _, lang := range pageLangs {
		for _, c := range []struct {
			query, lead string
		}{
			{"", "uninvitedLead"},
			{"&invite=not-an-invitation", "inviteRefusedLead"},
		} {
			v := visitor(t)
			do(t, v, chromedp.Navigate(pageURL(s.URL(), room)+"&lang="+lang+c.query))
			waitState(t, v, "uninvited", wait)
			want := table[lang]["uninvitedTitle"] + ". " + table[lang][c.lead]
			if got := text(t, v, "title") + " / " + text(t, v, "lead"); got != table[lang]["uninvitedTitle"]+" / "+table[lang][c.lead] {
				t.Errorf("%s, %s: the screen says %q", lang, c.lead, got)
			}
			said := announced(t, v)
			if said != want {
				t.Errorf("%s, %s: the live region says %q, want %q", lang, c.lead, said, want)
			}
			if strings.Contains(said, table[lang]["errorTitle"]) {
				t.Errorf("%s, %s: the live region says %q", lang, c.lead, table[lang]["errorTitle"])
			}
			checkAxe(t, v)
		}
	}
}

// announced is what the page's live region says now.
func announced(t *testing.T, ctx context.Context) string {
	t.Helper()
	return browsertest.Eval[string](t, ctx, `document.getElementById("announce").textContent`)
}
