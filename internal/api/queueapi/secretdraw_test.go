package queueapi_test

import (
	"encoding/json"
	"fmt"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"maps"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// The pre-queue's draw is secret until the opening: before it, nothing the
// server answers (status code, headers, body but the ticket) depends on the
// visitor's draw, neither a join's answer nor a poll's, far from the opening
// or within the last minutes (where the polls after the opening are planned),
// nor in a room closed before it; nor can the visitor read it from the
// ticket (token.TestTicketHidesTheDraw). Otherwise a bot joins until it holds a good draw and drops the rest.
func TestPrequeueAnswersHideTheDraw(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	opens := f.Clock.Now().Add(10 * time.Minute)
	id := f.Room(`{"opensAt":"` + opens.UTC().Format(time.RFC3339) + `","originUrl":"https://origin.example/"}`)
	const joins = 12
	// same says that every answer is the first, but for the ticket (and the
	// fields named in but, which must hold their own values).
	same := func(what string, rs []apitest.Response, but func(i int, r apitest.Response) error) {
		t.Helper()
		strip := func(r apitest.Response) string {
			m := maps.Clone(r.JSON)
			delete(m, "ticket")
			if but != nil {
				delete(m, "waiting")
			}
			b, _ := json.Marshal(m)
			h, _ := json.Marshal(r.Headers)
			return fmt.Sprintf("%d %s %s", r.StatusCode, h, b)
		}
		for i, r := range rs {
			if but != nil {
				if err := but(i, r); err != nil {
					t.Fatalf("%s %d: %v: %s", what, i, err, r.Body)
				}
			}
			if got, want := strip(r), strip(rs[0]); got != want {
				t.Fatalf("%s: answers differ by visitor before the opening:\n%s\n%s", what, want, got)
			}
		}
	}
	var tickets []string
	var answers []apitest.Response
	for range joins {
		r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		if r.Str("state") != "prequeue" {
			t.Fatalf("join: %s", r.Body)
		}
		tickets = append(tickets, r.Str("ticket"))
		answers = append(answers, r)
	}
	same("joins", answers, func(i int, r apitest.Response) error {
		if r.Num("waiting") != int64(i+1) {
			return fmt.Errorf("waiting %d, want %d", r.Num("waiting"), i+1)
		}
		return nil
	})
	// Polls at one instant: far from the opening, then within the budget
	// before it (the polls after the opening are planned then), then in a
	// room closed before it.
	poll := func(what string) {
		t.Helper()
		answers = answers[:0]
		for _, tk := range tickets {
			r := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(tk))
			apitest.WantStatus(t, r, 200, "")
			answers = append(answers, r)
		}
		same(what, answers, nil)
	}
	f.Clock.Advance(time.Second)
	poll("polls 10 minutes before the opening")
	f.Clock.Set(opens.Add(-3 * time.Minute))
	poll("polls 3 minutes before the opening")
	f.Clock.Set(opens.Add(-30 * time.Second))
	poll("polls 30 s before the opening")
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"mode":"closed"}`), 200, "")
	f.Clock.Advance(time.Second)
	poll("polls in a room closed before the opening")

	// Nor does the ticket show it to a reader without the secret.
	for _, tk := range tickets {
		if peek, ok := token.PeekTicket(tk); !ok || peek.Draw != 0 {
			t.Fatalf("the ticket shows its draw to its holder: %+v", peek)
		}
	}

}
