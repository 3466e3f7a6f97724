package api_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// A flood of fresh enqueues from one client address is refused after the
// room's burst with 429 and Retry-After, while another address still joins,
// a refresh with a valid ticket is never refused, and the address joins again
// once the limit has refilled.
func TestEnqueueFloodFromOneAddress(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"clientEnqueuePerMinute":60,"originUrl":"https://origin.example/"}`) // burst 6
	from := func(ip, ticket string) response {
		ev := event("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		if ticket != "" {
			ev = event("POST", "/api/rooms/"+id+"/enqueue", "", bearer(ticket))
		}
		ev.RequestContext.HTTP.SourceIP = ip
		return f.send(ev)
	}
	var first response
	joined := 0
	for i := 0; i < 20; i++ {
		r := from("198.51.100.7", "")
		if r.StatusCode == 200 {
			joined++
			if first.StatusCode == 0 {
				first = r
			}
			continue
		}
		wantStatus(t, r, 429, "rate_limited")
		if s, err := strconv.Atoi(r.Headers["Retry-After"]); err != nil || s < 1 {
			t.Fatalf("429 with Retry-After %q", r.Headers["Retry-After"])
		}
	}
	if joined != 6 {
		t.Fatalf("one address joined %d times at one instant, want the burst of 6", joined)
	}
	wantStatus(t, from("203.0.113.9", ""), 200, "")
	// A refresh with a valid ticket is a poll (no sooner than the minimum poll
	// interval), never a join: the join limit does not apply to it.
	f.clock.Advance(pollpolicy.MinInterval)
	if r := from("198.51.100.7", first.str("ticket")); r.StatusCode != 200 || r.str("ticket") != first.str("ticket") {
		t.Fatalf("a refresh with a valid ticket from the limited address: %d %s", r.StatusCode, r.Body)
	}
	f.clock.Advance(time.Second - pollpolicy.MinInterval) // 60 a minute: one more place a second
	wantStatus(t, from("198.51.100.7", ""), 200, "")
}
