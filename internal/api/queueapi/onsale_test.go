package queueapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// A ticket whose place is gone mints no place: enqueueing with it is a fresh
// join, under a new visitor id and the join limit (issue: ten enqueues with one
// spent ticket gave ten places, each skipping the per-address limit).
func TestSpentTicketMintsNoPlaces(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"clientEnqueuePerMinute":1,"originUrl":"https://origin.example/"}`)
	first := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	wantStatus(t, first, 200, "")
	spent := first.str("ticket")
	wantStatus(t, f.do("POST", "/api/rooms/"+id+"/leave", "", bearer(spent)), 200, "")
	for range 10 {
		f.clock.Advance(pollpolicy.MinInterval)
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", "", bearer(spent)), 429, "rate_limited")
	}
	if s := f.do("GET", "/api/rooms/"+id+"/status", "", nil); s.num("waiting") != 0 {
		t.Fatalf("a spent ticket made %d places", s.num("waiting"))
	}
	// Once the limit refills, the rejoin is a new visitor with a new ticket.
	f.clock.Advance(time.Minute)
	again := f.do("POST", "/api/rooms/"+id+"/enqueue", "", bearer(spent))
	wantStatus(t, again, 200, "")
	if f.visitorOf(id, again.str("ticket")) == f.visitorOf(id, spent) {
		t.Fatal("the rejoin kept the spent ticket's visitor id")
	}
}

// In a pre-queue a spent ticket's draw cannot be copied into more places.
func TestPrequeueDrawIsNotCopied(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	opens := f.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	id := f.room(`{"opensAt":"` + opens + `","originUrl":"https://origin.example/"}`)
	first := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	wantStatus(t, f.do("POST", "/api/rooms/"+id+"/leave", "", bearer(first.str("ticket"))), 200, "")
	seen := map[string]bool{f.visitorOf(id, first.str("ticket")): true}
	for range 5 {
		f.clock.Advance(pollpolicy.MinInterval)
		r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", bearer(first.str("ticket")))
		wantStatus(t, r, 200, "")
		v := f.visitorOf(id, r.str("ticket"))
		if seen[v] {
			t.Fatalf("visitor %s holds a second place", v)
		}
		seen[v] = true
	}
}

// Enqueue with a valid ticket is a poll: no sooner than the minimum poll
// interval after the last one (issue: three back-to-back enqueues got 200
// where back-to-back polls get 429).
func TestEnqueueWithTicketIsAPoll(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"originUrl":"https://origin.example/"}`)
	e := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	f.clock.Advance(pollpolicy.MinInterval)
	wantStatus(t, f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(e.str("ticket"))), 200, "")
	wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", "", bearer(e.str("ticket"))), 429, "rate_limited")
	f.clock.Advance(pollpolicy.MinInterval)
	if r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", bearer(e.str("ticket"))); r.StatusCode != 200 || r.num("position") != 1 {
		t.Fatalf("refresh after the interval: %d %s", r.StatusCode, r.Body)
	}
}

// An opening time in the year 10000 UTC is refused, whatever offset it was
// written in, and every room stays readable (issue: it was stored, then every
// read of the room answered 500).
func TestOpensAtValidatedInUTC(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"originUrl":"https://origin.example/"}`)
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"opensAt":"9999-12-31T23:59:59-14:00"}`), 400, "invalid_config")
	wantStatus(t, f.admin("GET", "/api/admin/rooms", ""), 200, "")
	wantStatus(t, f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil), 200, "")
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"opensAt":"9999-12-31T23:59:59+14:00"}`), 200, "")
}

// A poll in the last partial second of a claim window gets its entry token
// (issue: 500 "exp not after iat").
func TestLastPartialSecondOfTheClaimWindow(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"claimTTLSeconds":5,"originUrl":"https://origin.example/"}`)
	e := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	f.clock.Advance(300 * time.Millisecond) // the grant's deadline falls inside a second
	var grant response
	for range 3 {
		f.tick(id)
		if grant = f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(e.str("ticket"))); grant.str("entryToken") != "" {
			break
		}
	}
	deadline, err := time.Parse(time.RFC3339Nano, grant.str("grantExpiresAt"))
	if err != nil {
		t.Fatalf("no grant: %s", grant.Body)
	}
	f.clock.Advance(deadline.Sub(f.clock.Now()) - 200*time.Millisecond)
	r := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(e.str("ticket")))
	if r.StatusCode != 200 || r.str("entryToken") == "" {
		t.Fatalf("poll 200 ms before the deadline: %d %s", r.StatusCode, r.Body)
	}
}

// Setting names match exactly: {"MAXACTIVE":3} is refused, not taken for maxActive.
func TestSettingNamesAreExact(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"originUrl":"https://origin.example/"}`)
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"MAXACTIVE":3}`), 400, "bad_json")
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"maxactive":3}`), 400, "bad_json")
	if r := f.admin("GET", "/api/admin/rooms/"+id, ""); strings.Contains(r.Body, `"maxActive":3`) {
		t.Fatalf("a misspelt setting changed the room: %s", r.Body)
	}
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"maxActive":3}`), 200, "")
}

// Plain http:// origins only on loopback: an entry token must not cross a
// network in the clear.
func TestPlainHTTPOriginOnlyOnLoopback(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"originUrl":"https://origin.example/"}`)
	for _, u := range []string{"http://origin.example/", "http://10.0.0.8/", "http://localhost.example.com/"} {
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"`+u+`"}`), 400, "invalid_config")
	}
	for _, u := range []string{"http://localhost:8081/", "http://127.0.0.1:8081/", "http://[::1]:8081/", "https://origin.example/"} {
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"`+u+`"}`), 200, "")
	}
}

// visitorOf is the visitor id a valid ticket of the room names.
func (f *fixture) visitorOf(room, ticket string) string {
	f.t.Helper()
	tk, err := f.tickets.Verify(ticket, room, f.clock.Now())
	if err != nil {
		f.t.Fatalf("ticket %q: %v", ticket, err)
	}
	return tk.Visitor
}

// The join challenge over HTTP: a join without a proof gets 403 with the
// challenge to solve; the solution joins once; a reused, tampered, unsolved or
// another room's challenge is refused; a refresh with a ticket needs none.
func TestJoinChallengeOverHTTP(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"joinChallengeBits":10,"originUrl":"https://origin.example/"}`)
	other := f.room(`{"joinChallengeBits":10,"originUrl":"https://origin.example/"}`)
	refused := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	wantStatus(t, refused, 403, "challenge_required")
	var body struct{ Challenge challenge.Challenge }
	if err := json.Unmarshal([]byte(refused.Body), &body); err != nil || body.Challenge.Bits != 10 || body.Challenge.Value == "" {
		t.Fatalf("403 without a challenge to solve: %s", refused.Body)
	}
	ch := body.Challenge
	sol := challenge.Solve(ch)
	with := func(room, value, solution string) response {
		return f.do("POST", "/api/rooms/"+room+"/enqueue", "", map[string]string{
			"X-Vestibule-Challenge": value, "X-Vestibule-Solution": solution})
	}
	joined := with(id, ch.Value, sol)
	wantStatus(t, joined, 200, "")
	wantStatus(t, with(id, ch.Value, sol), 403, "challenge_used")
	wantStatus(t, with(other, ch.Value, sol), 403, "challenge_invalid")
	wantStatus(t, with(id, strings.Replace(ch.Value, ".10.", ".1.", 1), sol), 403, "challenge_invalid")
	unsolved := "0"
	for challenge.ZeroBits(ch.Value, unsolved) >= 10 {
		unsolved += "0"
	}
	wantStatus(t, with(id, ch.Value, unsolved), 403, "challenge_invalid")
	f.clock.Advance(challenge.TTL)
	wantStatus(t, with(id, ch.Value, sol), 403, "challenge_invalid")
	if r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", bearer(joined.str("ticket"))); r.StatusCode != 200 || r.num("position") != 1 {
		t.Fatalf("a refresh with a ticket in a challenge room: %d %s", r.StatusCode, r.Body)
	}
	if s := f.do("GET", "/api/rooms/"+id+"/status", "", nil); s.num("waiting") != 1 {
		t.Fatalf("waiting %d, want the one proven join", s.num("waiting"))
	}
}

// A client's join limit holds in a challenge room whose joins are spread:
// each challenge it is given takes its proof to the arrival shard that counts
// its joins, so a client bringing one fresh proof after another is limited
// as one without proofs is (before, each proof's random nonce picked its own
// shard, and so its own count: up to one join per shard at a limit of 1).
func TestJoinChallengeKeepsAClientOnOneShard(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, rdb)
			id := f.room(`{"joinChallengeBits":2,"joinShards":15,"clientEnqueuePerMinute":10,"originUrl":"https://origin.example/"}`)
			joined, limited := 0, 0
			for range 12 {
				r := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
				wantStatus(t, r, 403, "challenge_required")
				var body struct{ Challenge challenge.Challenge }
				if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
					t.Fatal(err)
				}
				ch := body.Challenge
				r = f.do("POST", "/api/rooms/"+id+"/enqueue", "", map[string]string{
					"X-Vestibule-Challenge": ch.Value, "X-Vestibule-Solution": challenge.Solve(ch)})
				switch r.StatusCode {
				case 200:
					joined++
				case 429:
					limited++
				default:
					t.Fatalf("join with a proof: %d %s", r.StatusCode, r.Body)
				}
			}
			// 10 a minute is a burst of 1.
			if joined != 1 || limited != 11 {
				t.Errorf("12 proofs from one address: %d joined, %d limited; want 1 and 11", joined, limited)
			}
		})
	}
}
