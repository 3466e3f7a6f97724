package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

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
