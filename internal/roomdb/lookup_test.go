package roomdb_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// TestLookupKeepsTheDrawSecret: before the opening a pre-queue's order is
// its draw, secret from everyone, support included: a lookup says prequeue
// with no place (nor one in its JSON). From the opening each is waiting at
// its place in the draw's order.
func TestLookupKeepsTheDrawSecret(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		opens := e.clk.Now().Add(10 * time.Minute)
		e.put(*cfgWith(func(c *room.Config) { c.OpensAt = &opens; c.Mode = room.ModePaused }))
		refs := []string{"draw-a", "draw-b", "draw-c", "draw-d"}
		for _, r := range refs {
			e.enqueue(r)
		}
		for _, r := range refs {
			v := e.visitor(r)
			b, _ := json.Marshal(v)
			if v.State != "prequeue" || v.Position != 0 || strings.Contains(string(b), `"position"`) {
				t.Fatalf("%s before the opening: %s", r, b)
			}
		}
		e.clk.Set(opens.Add(time.Second))
		var places []int64
		for _, r := range refs {
			v := e.visitor(r)
			if v.State != "waiting" || v.Position < 1 {
				t.Fatalf("%s after the opening: %+v", r, v)
			}
			places = append(places, v.Position)
		}
		slices.Sort(places)
		if !slices.Equal(places, []int64{1, 2, 3, 4}) {
			t.Fatalf("places after the opening %v, want each of 1–4 once", places)
		}
	})
}

// TestLookupKeepsTheTrail: the lookup says when a visitor last polled and
// when they were admitted after the queue forgot it: an admitted, active and
// served visitor keeps their admission and their last poll while waiting,
// an evicted one their last poll, a join admitted at once its admission. The
// trail expires with the references.
func TestLookupKeepsTheTrail(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1; c.Mode = room.ModePaused }))
		t0 := e.clk.Now()
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		same := func(p *time.Time, want time.Time) bool { return p != nil && p.Equal(want) }
		a, b := e.enqueue("trail-a"), e.enqueue("trail-b")
		e.clk.Set(at(time.Minute))
		e.poll(b.Ticket) // b's last poll; b is silent from here
		e.clk.Set(at(21 * time.Minute))
		e.poll(a.Ticket)
		c := baseConfig()
		c.MaxActive = 1
		e.put(c)
		e.clk.Set(at(21*time.Minute + time.Second))
		if r := e.tick(); r.Admitted != 1 || r.Evicted != 1 {
			t.Fatalf("tick: %+v, want a admitted and b evicted", r)
		}
		admittedAt := e.clk.Now()
		check := func(ref, state string, last *time.Time, admitted *time.Time) {
			t.Helper()
			v := e.visitor(ref)
			if string(v.State) != state || (last == nil) != (v.LastPoll == nil) || (last != nil && !same(v.LastPoll, *last)) ||
				(admitted == nil) != (v.AdmittedAt == nil) || (admitted != nil && !same(v.AdmittedAt, *admitted)) {
				t.Fatalf("%s: %+v; want %s, last poll %v, admitted %v", ref, v, state, last, admitted)
			}
		}
		lastA, lastB := at(21*time.Minute), at(time.Minute)
		check("trail-a", "admitted", &lastA, &admittedAt)
		check("trail-b", "lost", &lastB, nil)
		e.clk.Advance(5 * time.Second)
		e.consume(a.Ticket.Seq)
		check("trail-a", "active", &lastA, &admittedAt)
		if err := e.eng.Complete(e.ctx, e.room, a.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		check("trail-a", "served", &lastA, &admittedAt)

		c.Mode, c.MaxActive = room.ModePassthrough, 5
		e.put(c)
		e.clk.Advance(time.Minute)
		through := e.enqueue("trail-c")
		joined := e.clk.Now()
		check("trail-c", "admitted", nil, &joined)
		e.clk.Advance(time.Second)
		e.consume(through.Ticket.Seq)
		check("trail-c", "active", nil, &joined)

		trail := e.keys.Trail(e.clk.Now().UnixMilli())
		ttl, err := rdb.TTL(e.ctx, trail).Result()
		if err != nil || ttl <= 0 || ttl > 3*24*time.Hour {
			t.Fatalf("the trail's time to live: %v, %v", ttl, err)
		}
		// A deleted room's trail goes with its references.
		c.Mode = room.ModeClosed
		e.put(c)
		if err := e.eng.Delete(e.ctx, e.room); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(e.ctx, trail).Result(); err != nil || n != 0 {
			t.Fatalf("the deleted room's trail: %d, %v", n, err)
		}
	})
}
