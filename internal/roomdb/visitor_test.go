package roomdb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

func (e *env) visitor(ref string) room.VisitorState {
	e.t.Helper()
	v, err := e.eng.Visitor(e.ctx, e.room, ref)
	if err != nil {
		e.t.Fatalf("Visitor(%s): %v", ref, err)
	}
	return v
}

// TestVisitorLookup follows visitors by the page's reference (the visitor id)
// through waiting, admitted, active, served, left and lost.
func TestVisitorLookup(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }))
		e.warm()
		before := time.Now().Add(-time.Second)
		a, b, c := e.enqueue("ref-a"), e.enqueue("ref-b"), e.enqueue("ref-c")
		after := time.Now().Add(time.Second)
		v := e.visitor("ref-b")
		if v.State != "waiting" || v.Position != 2 || v.Seq != b.Ticket.Seq || v.LastPoll == nil || !v.LastPoll.Equal(e.clk.Now()) {
			t.Fatalf("waiting visitor: %+v", v)
		}
		if v.JoinedAt.Before(before) || v.JoinedAt.After(after) {
			t.Fatalf("joined at %v, not within the join's [%v, %v]", v.JoinedAt, before, after)
		}
		e.tick()
		if v := e.visitor("ref-a"); v.State != "admitted" || v.ClaimDeadline == nil || v.AdmittedAt == nil || !v.AdmittedAt.Equal(e.clk.Now()) {
			t.Fatalf("admitted visitor: %+v", v)
		}
		s := e.consume(a.Ticket.Seq)
		if v := e.visitor("ref-a"); v.State != "active" || !v.Consumed || v.SessionEnd == nil || !v.SessionEnd.Equal(s.ExpiresAt) {
			t.Fatalf("active visitor: %+v (session ends %v)", v, s.ExpiresAt)
		}
		if err := e.eng.Complete(e.ctx, e.room, a.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		if v := e.visitor("ref-a"); v.State != "served" || !v.Consumed {
			t.Fatalf("served visitor: %+v", v)
		}
		if err := e.eng.Leave(e.ctx, c.Ticket); err != nil {
			t.Fatal(err)
		}
		if v := e.visitor("ref-c"); v.State != "left" {
			t.Fatalf("visitor who left: %+v", v)
		}
		if _, err := e.eng.Visitor(e.ctx, e.room, "nobody"); !errors.Is(err, room.ErrUnknownVisitor) {
			t.Fatalf("unknown reference: %v", err)
		}
		if _, err := e.eng.Visitor(e.ctx, e.room, "a b"); !errors.Is(err, room.ErrUnknownVisitor) {
			t.Fatalf("malformed reference: %v", err)
		}
		// Two days later the reference is still known (the hashes live two days past their day).
		e.clk.Advance(47 * time.Hour)
		if v := e.visitor("ref-b"); v.Seq != b.Ticket.Seq {
			t.Fatalf("two days on: %+v", v)
		}
	})
}

// TestRestoreLostPlace: an operator gives back a place lost to eviction; a
// place that stands is not restored twice.
func TestRestoreLostPlace(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1; c.Mode = room.ModePaused }))
		lost := e.enqueue("lost")
		kept := e.enqueue("kept")
		e.clk.Advance(20 * time.Minute)
		e.poll(kept.Ticket) // "kept" stays; "lost" is silent past its told poll and the grace
		c := baseConfig()
		c.MaxActive = 1
		e.put(c)
		e.tick() // evicts "lost", admits "kept"
		if v := e.visitor("lost"); v.State != "lost" {
			t.Fatalf("evicted visitor: %+v", v)
		}
		if p := e.poll(lost.Ticket); p.State != room.StateExpired {
			t.Fatalf("evicted visitor polls %s, want expired (the head passed)", p.State)
		}
		v, err := e.eng.RestorePlace(e.ctx, e.room, "lost")
		if err != nil || v.State != "waiting" || v.Position != 1 {
			t.Fatalf("restore: %+v, %v", v, err)
		}
		if p := e.poll(lost.Ticket); p.State != room.StateWaiting || p.Position != 1 {
			t.Fatalf("restored visitor polls %+v", viewOf(p))
		}
		if _, err := e.eng.RestorePlace(e.ctx, e.room, "lost"); !errors.Is(err, room.ErrPlaceStands) {
			t.Fatalf("restore of a place that stands: %v", err)
		}
	})
}

// TestVisitorLookupOnArrivalShards: a join taken by an arrival shard is found
// by its reference too.
func TestVisitorLookupOnArrivalShards(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.JoinShards = 3 }))
		e.enqueue("warm-up") // confirms the settings: the next joins go to the shards
		p := e.enqueue("sharded")
		v := e.visitor("sharded")
		if v.Seq != p.Ticket.Seq || v.Seq%room.SeqResidues == 0 {
			t.Fatalf("sharded join %d found as %+v", p.Ticket.Seq, v)
		}
		if v.State != "arriving" {
			t.Fatalf("before the merge: %+v, want arriving", v)
		}
		e.tick()
		if v := e.visitor("sharded"); v.State != "waiting" && v.State != "admitted" {
			t.Fatalf("after the merge: %+v", v)
		}
	})
}
