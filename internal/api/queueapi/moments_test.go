package queueapi_test

import (
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// The moments of an on-sale through the HTTP layer (docs/ENGINE.md, "The
// pace"; "Polling: what a told interval promises"): a burst after a trickle is
// told the room's configured pace and polls within the claim window; after a
// change of pace, enqueue and status tell the same pace and ETA at the same
// moment; a pre-queue reply carries the share of the line ahead.
func TestMomentsOverHTTP(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	t.Run("a burst after a trickle", func(t *testing.T) {
		id := f.Room(`{"admitPerMinute":600,"maxActive":1000,"claimTTLSeconds":30,"originUrl":"https://origin.example/"}`)
		base := "/api/rooms/" + id
		// A trickle: one visitor every 20 s for two minutes, each admitted.
		for range 6 {
			apitest.WantStatus(t, f.Do("POST", base+"/enqueue", "", nil), 200, "")
			f.Tick(id)
			f.Clock.Advance(20 * time.Second)
			f.Tick(id)
		}
		var last apitest.Response
		for range 250 {
			last = f.Do("POST", base+"/enqueue", "", nil)
		}
		if last.Num("position") != 250 || last.JSON["ratePerMinute"] != float64(600) || last.Num("etaSeconds") != 25 {
			t.Fatalf("the 250th of the burst: want position 250 at 600 a minute, ETA 25 s: %s", last.Body)
		}
		// The earliest it can be admitted: (250 − 20) ÷ (2 × 10 a second) = 11.5 s,
		// then the 30 s claim window less 3 s.
		if ms := last.Num("pollAfterMs"); ms > 38500 {
			t.Errorf("told to poll after %d ms: the grant could expire first", ms)
		}
		s := f.Do("GET", base+"/status", "", nil)
		if s.JSON["ratePerMinute"] != float64(600) || s.Num("etaSeconds") != 26 {
			t.Errorf("status for a joiner behind 250: want 600 a minute and 26 s, got %s", s.Body)
		}
	})
	t.Run("a change of pace: status and enqueue agree", func(t *testing.T) {
		id := f.Room(`{"admitPerMinute":60,"maxActive":1000,"originUrl":"https://origin.example/"}`)
		base := "/api/rooms/" + id
		for range 12 {
			f.Do("POST", base+"/enqueue", "", nil)
		}
		for range 5 {
			f.Tick(id)
			f.Clock.Advance(time.Second)
		}
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"admitPerMinute":1}`), 200, "")
		s := f.Do("GET", base+"/status", "", nil)
		j := f.Do("POST", base+"/enqueue", "", nil)
		if s.JSON["ratePerMinute"] != float64(1) || j.JSON["ratePerMinute"] != float64(1) {
			t.Fatalf("after 60 → 1 a minute: status %s, enqueue %s; want 1 a minute from both", s.Body, j.Body)
		}
		if s.Num("etaSeconds") != j.Num("etaSeconds") || j.Num("etaSeconds") != j.Num("position")*60 {
			t.Errorf("status's ETA for the next joiner %d s, the joiner's %d s at position %d: want both position × 60 s",
				s.Num("etaSeconds"), j.Num("etaSeconds"), j.Num("position"))
		}
	})
	t.Run("a pre-queue's status counts the line", func(t *testing.T) {
		opens := f.Clock.Now().Add(2 * time.Minute).UTC().Format(time.RFC3339)
		id := f.Room(`{"opensAt":"` + opens + `","admitPerMinute":600,"originUrl":"https://origin.example/"}`)
		base := "/api/rooms/" + id
		for range 40 {
			if p := f.Do("POST", base+"/enqueue", "", nil); p.Str("state") != "prequeue" || p.Num("position") != 0 {
				t.Fatalf("pre-queue join: %s", p.Body)
			}
		}
		s := f.Do("GET", base+"/status", "", nil)
		if s.Str("opensAt") == "" || s.Num("waiting") != 40 {
			t.Errorf("status before the opening: %s", s.Body)
		}
	})
}
