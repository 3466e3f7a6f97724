package localstack_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// make dev sends notices to its outbox page: a visitor signs up with an
// email address; when their turn comes (the one before them lets theirs
// lapse, on the stack's clock) the outbox shows the email, with the link to
// the room's waiting page, and the plain page lists it. No mail server.
func TestOutboxShowsNotices(t *testing.T) {
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL: "redis://" + redistest.Single(t).Options().Addr, StaticDir: t.TempDir(), KeyDir: t.TempDir(),
		TickInterval: 20 * time.Millisecond, Clock: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := redistest.Room(t)
	if code, _, r := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/rooms/"+id, s.AdminKey(),
		`{"originUrl":"https://shop.example/","maxActive":1,"claimTTLSeconds":5,"notifiedClaimTTLSeconds":60}`); code != 200 {
		t.Fatalf("PUT room: %d %v", code, r)
	}
	join := func() map[string]any {
		code, _, e := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/"+id+"/enqueue", "", "")
		if code != 200 {
			t.Fatalf("enqueue: %d %v", code, e)
		}
		return e
	}
	first := join()
	clk.Advance(2 * time.Second) // the admission bucket fills on the stack's clock
	if !testkit.WaitFor(5*time.Second, func() bool {
		_, _, p := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/"+id, s.AdminKey(), "")
		st, _ := p["stats"].(map[string]any)
		return st["admitted"] == float64(1)
	}) {
		t.Fatalf("the first visitor was not admitted: %v", first)
	}
	second := join()
	if second["notices"] == nil {
		t.Fatalf("no offer of notices: %v", second)
	}
	tk, _ := second["ticket"].(string)
	if code, _, r := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/"+id+"/notify", tk, `{"email":"ana@example.com","lang":"es"}`); code != 200 {
		t.Fatalf("sign-up: %d %v", code, r)
	}
	clk.Advance(6 * time.Second) // the first grant lapses; the second visitor's turn comes
	var got []localstack.OutboxEntry
	if !testkit.WaitFor(5*time.Second, func() bool {
		resp, err := http.Get(s.URL() + localstack.OutboxPath + ".json")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		got = nil
		return json.NewDecoder(resp.Body).Decode(&got) == nil && len(got) == 1
	}) {
		t.Fatalf("no notice in the outbox: %v", got)
	}
	e := got[0]
	if e.Room != id || e.Channel != "email" || e.To != "ana@example.com" || e.Lang != "es" || !strings.HasPrefix(e.Subject, "Es tu turno") ||
		e.Link != s.URL()+"/?lang=es&room="+id || !strings.Contains(e.Text, e.Link) {
		t.Fatalf("outbox entry %+v", e)
	}
	resp, err := http.Get(s.URL() + localstack.OutboxPath)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Es tu turno") || !strings.Contains(string(page), "lang=es&amp;room="+id) {
		t.Fatalf("outbox page: %d\n%s", resp.StatusCode, page)
	}
	_, _, st := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/rooms/"+id, s.AdminKey(), "")
	if stats, _ := st["stats"].(map[string]any); stats["noticesSent"] != float64(1) {
		t.Fatalf("stats after the notice: %v", st["stats"])
	}
}
