package queueapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"slices"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The pre-queue lottery is auditable: joins during the pre-queue see one
// commitment; after opening the status reveals the seed, whose SHA-256 is
// the commitment, and every ticket's draw is recomputed from the seed and
// its visitor id and orders the line.
func TestAuditableLottery(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	opens := f.Clock.Now().Add(10 * time.Minute)
	id := f.Room(`{"opensAt":"` + opens.UTC().Format(time.RFC3339) + `","originUrl":"https://origin.example/"}`)
	status := func() apitest.Response {
		t.Helper()
		s := f.Do("GET", "/api/rooms/"+id+"/status", "", nil)
		apitest.WantStatus(t, s, 200, "")
		return s
	}
	commitment := status().Str("drawCommitment")
	if len(commitment) != 64 {
		t.Fatalf("no commitment before the first join: %q", commitment)
	}
	var tickets []string
	for range 8 {
		r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		if r.Str("state") != "prequeue" {
			t.Fatalf("join: %s", r.Body)
		}
		tickets = append(tickets, r.Str("ticket"))
		if s := status(); s.Str("drawCommitment") != commitment || s.Str("drawSeed") != "" {
			t.Fatalf("pre-queue status: %s", s.Body)
		}
		f.Clock.Advance(time.Second)
	}
	f.Clock.Set(opens.Add(time.Second))
	s := status()
	seed := s.Str("drawSeed")
	sum := sha256.Sum256([]byte(seed))
	if seed == "" || s.Str("drawCommitment") != commitment || hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("after opening: %s", s.Body)
	}
	type drawn struct {
		draw float64
		pos  int64
	}
	var line []drawn
	for _, tok := range tickets {
		tk, err := f.Tickets.Verify(tok, id, f.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := room.DrawOf(seed, tk.Visitor); got != tk.Draw {
			t.Fatalf("visitor %s: recomputed draw %v, ticket says %v", tk.Visitor, got, tk.Draw)
		}
		p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(tok))
		if p.Str("state") != "waiting" {
			t.Fatalf("poll after opening: %s", p.Body)
		}
		// From the opening the answer says the draw the room orders the
		// visitor by, for the page to check against the seed.
		if d, _ := p.JSON["draw"].(float64); d != tk.Draw {
			t.Fatalf("poll after opening: draw %v, want %v: %s", d, tk.Draw, p.Body)
		}
		line = append(line, drawn{tk.Draw, p.Num("position")})
	}
	slices.SortFunc(line, func(a, b drawn) int { return int(a.pos - b.pos) })
	for i := 1; i < len(line); i++ {
		if line[i].draw <= line[i-1].draw {
			t.Fatalf("the line is not in draw order: %+v", line)
		}
	}
	// Admission follows the line: whoever a tick admits drew lower than
	// everyone still waiting.
	f.Tick(id)
	maxAdmitted, minWaiting := -1.0, 2.0
	for _, tok := range tickets {
		tk, _ := f.Tickets.Verify(tok, id, f.Clock.Now())
		switch p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(tok)); p.Str("state") {
		case "admitted":
			maxAdmitted = max(maxAdmitted, tk.Draw)
		case "waiting":
			minWaiting = min(minWaiting, tk.Draw)
		default:
			t.Fatalf("after a tick: %s", p.Body)
		}
	}
	if maxAdmitted < 0 || maxAdmitted >= minWaiting {
		t.Fatalf("admitted out of draw order: highest admitted %v, lowest waiting %v", maxAdmitted, minWaiting)
	}
}
