package queueapi_test

import (
	"encoding/json"
	"github.com/vestibule-dev/vestibule/internal/apitest"
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
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"clientEnqueuePerMinute":1,"originUrl":"https://origin.example/"}`)
	first := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	apitest.WantStatus(t, first, 200, "")
	spent := first.Str("ticket")
	apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/leave", "", apitest.Bearer(spent)), 200, "")
	for range 10 {
		f.Clock.Advance(pollpolicy.MinInterval)
		apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(spent)), 429, "rate_limited")
	}
	if s := f.Do("GET", "/api/rooms/"+id+"/status", "", nil); s.Num("waiting") != 0 {
		t.Fatalf("a spent ticket made %d places", s.Num("waiting"))
	}
	// Once the limit refills, the rejoin is a new visitor with a new ticket.
	f.Clock.Advance(time.Minute)
	again := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(spent))
	apitest.WantStatus(t, again, 200, "")
	if visitorOf(f, id, again.Str("ticket")) == visitorOf(f, id, spent) {
		t.Fatal("the rejoin kept the spent ticket's visitor id")
	}
}

// In a pre-queue a spent ticket's draw cannot be copied into more places.
func TestPrequeueDrawIsNotCopied(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	opens := f.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	id := f.Room(`{"opensAt":"` + opens + `","originUrl":"https://origin.example/"}`)
	first := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/leave", "", apitest.Bearer(first.Str("ticket"))), 200, "")
	seen := map[string]bool{visitorOf(f, id, first.Str("ticket")): true}
	for range 5 {
		f.Clock.Advance(pollpolicy.MinInterval)
		r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(first.Str("ticket")))
		apitest.WantStatus(t, r, 200, "")
		v := visitorOf(f, id, r.Str("ticket"))
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
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	f.Clock.Advance(pollpolicy.MinInterval)
	apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket"))), 200, "")
	apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(e.Str("ticket"))), 429, "rate_limited")
	f.Clock.Advance(pollpolicy.MinInterval)
	if r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(e.Str("ticket"))); r.StatusCode != 200 || r.Num("position") != 1 {
		t.Fatalf("refresh after the interval: %d %s", r.StatusCode, r.Body)
	}
}

// An opening time in the year 10000 UTC is refused, whatever offset it was
// written in, and every room stays readable (issue: it was stored, then every
// read of the room answered 500).
func TestOpensAtValidatedInUTC(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"opensAt":"9999-12-31T23:59:59-14:00"}`), 400, "invalid_config")
	apitest.WantStatus(t, f.Admin("GET", "/api/admin/rooms", ""), 200, "")
	apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil), 200, "")
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"opensAt":"9999-12-31T23:59:59+14:00"}`), 200, "")
}

// A poll in the last partial second of a claim window gets its entry token
// (issue: 500 "exp not after iat").
func TestLastPartialSecondOfTheClaimWindow(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"claimTTLSeconds":5,"originUrl":"https://origin.example/"}`)
	e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	f.Clock.Advance(300 * time.Millisecond) // the grant's deadline falls inside a second
	var grant apitest.Response
	for range 3 {
		f.Tick(id)
		if grant = f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket"))); grant.Str("entryToken") != "" {
			break
		}
	}
	deadline, err := time.Parse(time.RFC3339Nano, grant.Str("grantExpiresAt"))
	if err != nil {
		t.Fatalf("no grant: %s", grant.Body)
	}
	f.Clock.Advance(deadline.Sub(f.Clock.Now()) - 200*time.Millisecond)
	r := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket")))
	if r.StatusCode != 200 || r.Str("entryToken") == "" {
		t.Fatalf("poll 200 ms before the deadline: %d %s", r.StatusCode, r.Body)
	}
}

// Setting names match exactly: {"MAXACTIVE":3} is refused, not taken for maxActive.
func TestSettingNamesAreExact(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"MAXACTIVE":3}`), 400, "bad_json")
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"maxactive":3}`), 400, "bad_json")
	if r := f.Admin("GET", "/api/admin/rooms/"+id, ""); strings.Contains(r.Body, `"maxActive":3`) {
		t.Fatalf("a misspelt setting changed the room: %s", r.Body)
	}
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"maxActive":3}`), 200, "")
}

// Plain http:// origins only on loopback: an entry token must not cross a
// network in the clear.
func TestPlainHTTPOriginOnlyOnLoopback(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	for _, u := range []string{"http://origin.example/", "http://10.0.0.8/", "http://localhost.example.com/"} {
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"`+u+`"}`), 400, "invalid_config")
	}
	for _, u := range []string{"http://localhost:8081/", "http://127.0.0.1:8081/", "http://[::1]:8081/", "https://origin.example/"} {
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"`+u+`"}`), 200, "")
	}
}

// visitorOf is the visitor id a valid ticket of the room names.
func visitorOf(f *apitest.Fixture, room, ticket string) string {
	f.T.Helper()
	tk, err := f.Tickets.Verify(ticket, room, f.Clock.Now())
	if err != nil {
		f.T.Fatalf("ticket %q: %v", ticket, err)
	}
	return tk.Visitor
}

// The join challenge over HTTP: a join without a proof gets 403 with the
// challenge to solve; the solution joins once; a reused, tampered, unsolved or
// another room's challenge is refused; a refresh with a ticket needs none.
func TestJoinChallengeOverHTTP(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"joinChallengeBits":10,"originUrl":"https://origin.example/"}`)
	other := f.Room(`{"joinChallengeBits":10,"originUrl":"https://origin.example/"}`)
	refused := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	apitest.WantStatus(t, refused, 403, "challenge_required")
	var body struct{ Challenge challenge.Challenge }
	if err := json.Unmarshal([]byte(refused.Body), &body); err != nil || body.Challenge.Bits != 10 || body.Challenge.Value == "" {
		t.Fatalf("403 without a challenge to solve: %s", refused.Body)
	}
	ch := body.Challenge
	sol := challenge.Solve(ch)
	with := func(room, value, solution string) apitest.Response {
		return f.Do("POST", "/api/rooms/"+room+"/enqueue", "", map[string]string{
			"X-Vestibule-Challenge": value, "X-Vestibule-Solution": solution})
	}
	joined := with(id, ch.Value, sol)
	apitest.WantStatus(t, joined, 200, "")
	apitest.WantStatus(t, with(id, ch.Value, sol), 403, "challenge_used")
	apitest.WantStatus(t, with(other, ch.Value, sol), 403, "challenge_invalid")
	apitest.WantStatus(t, with(id, strings.Replace(ch.Value, ".10.", ".1.", 1), sol), 403, "challenge_invalid")
	unsolved := "0"
	for challenge.ZeroBits(ch.Value, unsolved) >= 10 {
		unsolved += "0"
	}
	apitest.WantStatus(t, with(id, ch.Value, unsolved), 403, "challenge_invalid")
	f.Clock.Advance(challenge.TTL)
	apitest.WantStatus(t, with(id, ch.Value, sol), 403, "challenge_invalid")
	if r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(joined.Str("ticket"))); r.StatusCode != 200 || r.Num("position") != 1 {
		t.Fatalf("a refresh with a ticket in a challenge room: %d %s", r.StatusCode, r.Body)
	}
	if s := f.Do("GET", "/api/rooms/"+id+"/status", "", nil); s.Num("waiting") != 1 {
		t.Fatalf("waiting %d, want the one proven join", s.Num("waiting"))
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
			f := apitest.NewFixture(t, rdb)
			id := f.Room(`{"joinChallengeBits":2,"joinShards":15,"clientEnqueuePerMinute":10,"originUrl":"https://origin.example/"}`)
			joined, limited := 0, 0
			for range 12 {
				r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
				apitest.WantStatus(t, r, 403, "challenge_required")
				var body struct{ Challenge challenge.Challenge }
				if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
					t.Fatal(err)
				}
				ch := body.Challenge
				r = f.Do("POST", "/api/rooms/"+id+"/enqueue", "", map[string]string{
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
