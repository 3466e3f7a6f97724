package queueapi_test

import (
	"crypto/sha256"
	"encoding/hex"
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
	f := newFixture(t, redistest.Single(t))
	opens := f.clock.Now().Add(10 * time.Minute)
	id := f.room(`{"opensAt":"` + opens.UTC().Format(time.RFC3339) + `","originUrl":"https://origin.example/"}`)
	status := func() response {
		t.Helper()
		s := f.do("GET", "/api/rooms/"+id+"/status", "", nil)
		wantStatus(t, s, 200, "")
		return s
	}
	commitment := status().str("drawCommitment")
	if len(commitment) != 64 {
		t.Fatalf("no commitment before the first join: %q", commitment)
	}
	var tickets []string
	for range 8 {
		r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		if r.str("state") != "prequeue" {
			t.Fatalf("join: %s", r.Body)
		}
		tickets = append(tickets, r.str("ticket"))
		if s := status(); s.str("drawCommitment") != commitment || s.str("drawSeed") != "" {
			t.Fatalf("pre-queue status: %s", s.Body)
		}
		f.clock.Advance(time.Second)
	}
	f.clock.Set(opens.Add(time.Second))
	s := status()
	seed := s.str("drawSeed")
	sum := sha256.Sum256([]byte(seed))
	if seed == "" || s.str("drawCommitment") != commitment || hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("after opening: %s", s.Body)
	}
	type drawn struct {
		draw float64
		pos  int64
	}
	var line []drawn
	for _, tok := range tickets {
		tk, err := f.tickets.Verify(tok, id, f.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := room.DrawOf(seed, tk.Visitor); got != tk.Draw {
			t.Fatalf("visitor %s: recomputed draw %v, ticket says %v", tk.Visitor, got, tk.Draw)
		}
		p := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(tok))
		if p.str("state") != "waiting" {
			t.Fatalf("poll after opening: %s", p.Body)
		}
		// From the opening the answer says the draw the room orders the
		// visitor by, for the page to check against the seed.
		if d, _ := p.json["draw"].(float64); d != tk.Draw {
			t.Fatalf("poll after opening: draw %v, want %v: %s", d, tk.Draw, p.Body)
		}
		line = append(line, drawn{tk.Draw, p.num("position")})
	}
	slices.SortFunc(line, func(a, b drawn) int { return int(a.pos - b.pos) })
	for i := 1; i < len(line); i++ {
		if line[i].draw <= line[i-1].draw {
			t.Fatalf("the line is not in draw order: %+v", line)
		}
	}
	// Admission follows the line: whoever a tick admits drew lower than
	// everyone still waiting.
	f.tick(id)
	maxAdmitted, minWaiting := -1.0, 2.0
	for _, tok := range tickets {
		tk, _ := f.tickets.Verify(tok, id, f.clock.Now())
		switch p := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(tok)); p.str("state") {
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
