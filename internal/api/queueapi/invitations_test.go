package queueapi_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

func joinBody(invitation string) string {
	b, _ := json.Marshal(map[string]string{"invitation": invitation})
	return string(b)
}

// TestInvitationsOverHTTP: an operator makes an invitation of two uses to an
// invite-only room; a stranger is refused, two holders join, a third is
// refused; the uses are logged; a revoked one and a forged one are refused.
func TestInvitationsOverHTTP(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"originUrl":"https://origin.example/","inviteOnly":true}`)
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil), 403, "invitation_required")

		made := f.admin("POST", "/api/admin/rooms/"+id+"/invitations", `{"id":"presale","uses":2,"expiresInSeconds":3600}`)
		wantStatus(t, made, 201, "")
		inv := made.str("invitation")
		link, err := url.Parse(made.str("link"))
		if err != nil || link.Query().Get("invite") != inv || link.Query().Get("room") != id {
			t.Fatalf("link %q does not carry the invitation to the room", made.str("link"))
		}
		for range 2 {
			r := f.do("POST", "/api/rooms/"+id+"/enqueue", joinBody(inv), nil)
			wantStatus(t, r, 200, "")
			if r.str("state") != "waiting" || r.str("ticket") == "" {
				t.Fatalf("invited join: %s", r.Body)
			}
		}
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", joinBody(inv), nil), 403, "invitation_used")

		shown := f.admin("GET", "/api/admin/rooms/"+id+"/invitations?id=presale", "")
		wantStatus(t, shown, 200, "")
		if shown.num("used") != 2 || len(shown.json["log"].([]any)) != 2 {
			t.Fatalf("invitation state: %s", shown.Body)
		}

		// A site mints its own under the room's origin credential.
		now := f.clock.Now()
		own, err := token.NewInvitations(f.origins).Issue(room.Invitation{ID: "site-1", Room: id, Uses: 5, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", joinBody(own), nil), 200, "")
		wantStatus(t, f.admin("POST", "/api/admin/rooms/"+id+"/invitations/revoke", `{"id":"site-1"}`), 200, "")
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", joinBody(own), nil), 403, "invitation_revoked")

		forged := token.NewInvitations(token.NewOrigins([]byte(strings.Repeat("x", 40))))
		bad, _ := forged.Issue(room.Invitation{ID: "f", Room: id, Uses: 5, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", joinBody(bad), nil), 403, "invitation_invalid")
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", `{"invitation":`, nil), 400, "bad_json")

		log := f.admin("GET", "/api/admin/rooms/"+id+"/log", "")
		if !strings.Contains(log.Body, `"invite"`) || !strings.Contains(log.Body, `"revoke invitation"`) {
			t.Fatalf("audit log misses the invitation's making or revocation: %s", log.Body)
		}
		wantStatus(t, f.admin("POST", "/api/admin/rooms/"+id+"/invitations", `{"uses":0}`), 400, "invalid_invitation")
		wantStatus(t, f.admin("POST", "/api/admin/rooms/nosuchroom/invitations", `{}`), 404, "unknown_room")
		wantStatus(t, f.do("POST", "/api/admin/rooms/"+id+"/invitations", `{}`, nil), 401, "")
	})
}

// TestVisitorLookupOverHTTP: the reference the page reads from the ticket
// (its visitor id) finds the visitor; a restore needs a reason and is audited.
func TestVisitorLookupOverHTTP(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"originUrl":"https://origin.example/","mode":"paused"}`)
		r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		wantStatus(t, r, 200, "")
		tk, ok := token.PeekTicket(r.str("ticket"))
		if !ok {
			t.Fatal("no ticket")
		}
		got := f.admin("GET", "/api/admin/rooms/"+id+"/visitors?ref="+tk.Visitor, "")
		wantStatus(t, got, 200, "")
		if got.str("state") != "waiting" || got.num("position") != 1 || got.num("seq") != tk.Seq {
			t.Fatalf("lookup: %s", got.Body)
		}
		wantStatus(t, f.admin("GET", "/api/admin/rooms/"+id+"/visitors?ref=nobody", ""), 404, "unknown_visitor")
		wantStatus(t, f.admin("POST", "/api/admin/rooms/"+id+"/visitors/restore", `{"ref":"`+tk.Visitor+`"}`), 400, "missing_reason")
		wantStatus(t, f.admin("POST", "/api/admin/rooms/"+id+"/visitors/restore", `{"ref":"`+tk.Visitor+`","reason":"ticket 123"}`), 409, "place_not_lost")
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/leave", "", bearer(r.str("ticket"))), 200, "")
		back := f.admin("POST", "/api/admin/rooms/"+id+"/visitors/restore", `{"ref":"`+tk.Visitor+`","reason":"left by mistake, ticket 123"}`)
		wantStatus(t, back, 200, "")
		if back.str("state") != "waiting" {
			t.Fatalf("restored: %s", back.Body)
		}
		log := f.admin("GET", "/api/admin/rooms/"+id+"/log", "")
		if !strings.Contains(log.Body, "restore place") || !strings.Contains(log.Body, "left by mistake, ticket 123") {
			t.Fatalf("audit log misses the restore and its reason: %s", log.Body)
		}
	})
}
