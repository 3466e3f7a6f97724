package queueapi_test

import (
	"github.com/vestibule-dev/vestibule/internal/apitest"
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
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"clientEnqueuePerMinute":60,"originUrl":"https://origin.example/"}`) // burst 6
	from := func(ip, ticket string) apitest.Response {
		ev := apitest.Event("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		if ticket != "" {
			ev = apitest.Event("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(ticket))
		}
		ev.RequestContext.HTTP.SourceIP = ip
		return f.Send(ev)
	}
	var first apitest.Response
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
		apitest.WantStatus(t, r, 429, "rate_limited")
		if s, err := strconv.Atoi(r.Headers["Retry-After"]); err != nil || s < 1 {
			t.Fatalf("429 with Retry-After %q", r.Headers["Retry-After"])
		}
	}
	if joined != 6 {
		t.Fatalf("one address joined %d times at one instant, want the burst of 6", joined)
	}
	apitest.WantStatus(t, from("203.0.113.9", ""), 200, "")
	// A refresh with a valid ticket is a poll (no sooner than the minimum poll
	// interval), never a join: the join limit does not apply to it.
	f.Clock.Advance(pollpolicy.MinInterval)
	if r := from("198.51.100.7", first.Str("ticket")); r.StatusCode != 200 || r.Str("ticket") != first.Str("ticket") {
		t.Fatalf("a refresh with a valid ticket from the limited address: %d %s", r.StatusCode, r.Body)
	}
	f.Clock.Advance(time.Second - pollpolicy.MinInterval) // 60 a minute: one more place a second
	apitest.WantStatus(t, from("198.51.100.7", ""), 200, "")
}

// The join limit counts a network, not an address: by default an IPv6 /64
// (one subscriber's, which can use any of its 2^64 addresses) and an IPv4
// address; the room's clientIPv6Prefix and clientIPv4Prefix change that.
func TestEnqueueLimitCountsANetwork(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	joins := func(id string, addr func(i int) string) int {
		joined := 0
		for i := range 50 {
			ev := apitest.Event("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			ev.RequestContext.HTTP.SourceIP = addr(i)
			switch r := f.Send(ev); r.StatusCode {
			case 200:
				joined++
			case 429:
			default:
				t.Fatalf("join from %s: %d %s", addr(i), r.StatusCode, r.Body)
			}
		}
		return joined
	}
	id := f.Room(`{"clientEnqueuePerMinute":10}`) // a burst of 1
	if n := joins(id, func(i int) string { return "2001:db8:1:2:" + strconv.Itoa(i+1) + "::7" }); n != 1 {
		t.Errorf("50 joins from one IPv6 /64: %d joined, want 1", n)
	}
	if n := joins(id, func(i int) string { return "2001:db8:1:" + strconv.Itoa(100+i) + "::1" }); n != 50 {
		t.Errorf("50 joins from 50 IPv6 /64s: %d joined, want 50", n)
	}
	if n := joins(id, func(i int) string { return "198.51.100." + strconv.Itoa(i+1) }); n != 50 {
		t.Errorf("50 joins from 50 IPv4 addresses: %d joined, want 50", n)
	}
	wide := f.Room(`{"clientEnqueuePerMinute":10,"clientIPv4Prefix":24,"clientIPv6Prefix":48}`)
	if n := joins(wide, func(i int) string { return "203.0.113." + strconv.Itoa(i+1) }); n != 1 {
		t.Errorf("50 joins from one IPv4 /24 with clientIPv4Prefix 24: %d joined, want 1", n)
	}
	if n := joins(wide, func(i int) string { return "2001:db8:5:" + strconv.Itoa(i) + "::1" }); n != 1 {
		t.Errorf("50 joins from one IPv6 /48 with clientIPv6Prefix 48: %d joined, want 1", n)
	}
	for _, bad := range []string{`{"clientIPv4Prefix":33}`, `{"clientIPv4Prefix":-1}`, `{"clientIPv6Prefix":129}`, `{"clientIPv6Prefix":-1}`} {
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, bad), 400, "invalid_config")
	}
}
