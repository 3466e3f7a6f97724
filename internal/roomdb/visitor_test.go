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
		// On the last second of the next day the reference is still known.
		e.clk.Set(lastOfNextDay(e.clk.Now()))
		if v := e.visitor("ref-b"); v.Seq != b.Ticket.Seq {
			t.Fatalf("the next day: %+v", v)
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

// TestServedStaysServedAfterUsedIsTrimmed: a consumed grant and a grant given
// up stay served for as long as a lookup finds their visitors, long after the
// ticks trimmed used (claimTTLSeconds + 60 s after the consume). Support's
// restore then refuses them, so no second entry token of the same sequence is
// granted and consumed (I2). Before, the lookup said lost and the restore
// put the served visitor back at place 1.
func TestServedStaysServedAfterUsedIsTrimmed(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 2 }))
		e.warm()
		a, b := e.enqueue("consumed"), e.enqueue("gave-up")
		if r := e.tick(); r.Admitted != 2 {
			t.Fatalf("tick admitted %d, want 2", r.Admitted)
		}
		e.consume(a.Ticket.Seq)
		if err := e.eng.Complete(e.ctx, e.room, a.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		if err := e.eng.Leave(e.ctx, b.Ticket); err != nil { // gives the grant up
			t.Fatal(err)
		}
		e.enqueue("waiting") // someone a restore would be put ahead of
		check := func(when string) {
			t.Helper()
			for _, ref := range []string{"consumed", "gave-up"} {
				if v := e.visitor(ref); v.State != "served" {
					t.Errorf("%s: %s looks %q, want served", when, ref, v.State)
				}
				if v, err := e.eng.RestorePlace(e.ctx, e.room, ref); !errors.Is(err, room.ErrPlaceStands) {
					t.Errorf("%s: restore of %s = %+v, %v; want ErrPlaceStands", when, ref, v, err)
				}
			}
			for _, tk := range []room.Ticket{a.Ticket, b.Ticket} {
				if p := e.poll(tk); p.State != room.StateExpired {
					t.Errorf("%s: served ticket %d polls %s, want expired", when, tk.Seq, p.State)
				}
			}
		}
		check("at once")
		e.clk.Advance(4 * time.Minute) // past claimTTLSeconds (120 s) + 60 s
		e.tick()
		if n, err := rdb.ZCard(e.ctx, e.keys.Used).Result(); err != nil || n != 0 {
			t.Fatalf("used holds %d (%v) after the trim, want 0: the test would not reach its case", n, err)
		}
		check("used trimmed")
		e.clk.Set(lastOfNextDay(e.clk.Now())) // the lookup still finds them
		check("the next day")
		if _, err := e.eng.Consume(e.ctx, e.room, a.Ticket.Seq, origin); err == nil {
			t.Errorf("the served grant was consumed a second time")
		}
	})
}

// TestServedBypassHolderIsNotRestoredByAPoll: a bypass holder's place never
// moves the head, so its sequence is above the head when it is served; once
// used is trimmed, a poll of its ticket must still not restore it (it would be
// admitted and consume a second entry token of the same sequence: I2).
func TestServedBypassHolderIsNotRestoredByAPoll(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }))
		e.warm()
		first := e.enqueue("first")
		e.tick() // the head is first's sequence
		e.consume(first.Ticket.Seq)
		if err := e.eng.Complete(e.ctx, e.room, first.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		vip, err := e.joinWith("vip", e.invitation("crew", 1, true))
		if err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		e.tick()
		e.consume(vip.Ticket.Seq)
		if err := e.eng.Complete(e.ctx, e.room, vip.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(4 * time.Minute)
		e.tick() // trims used
		if p := e.poll(vip.Ticket); p.State != room.StateExpired {
			t.Fatalf("the served bypass holder polls %+v, want expired", viewOf(p))
		}
		if v := e.visitor("vip"); v.State != "served" {
			t.Fatalf("served bypass holder looks %+v", v)
		}
	})
}

// TestRestoredBypassHolderKeepsTheBypass: support's restore of a bypass
// invitation's holder whose grant lapsed puts the place back ahead of the
// line, as the invitation gave it, not behind everyone waiting at its
// sequence.
func TestRestoredBypassHolderKeepsTheBypass(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }))
		e.warm()
		ts := e.enqueueN(3)
		e.tick()
		e.consume(ts[0].Seq) // the one slot is taken
		vip, err := e.joinWith("vip", e.invitation("crew", 1, true))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		e.tick()
		if g := e.grants(); len(g) != 1 || g[0] != vip.Ticket.Seq {
			t.Fatalf("grants %v, want the bypass holder's", g)
		}
		// The bypass holder never comes for the grant; the line keeps polling.
		for range 5 {
			e.clk.Advance(25 * time.Second)
			e.poll(ts[1])
			e.poll(ts[2])
			e.tick()
		}
		if v := e.visitor("vip"); v.State != "lost" {
			t.Fatalf("bypass holder whose grant lapsed: %+v", v)
		}
		if g := e.grants(); len(g) != 1 || g[0] != ts[1].Seq {
			t.Fatalf("grants %v, want the next in line, %d", g, ts[1].Seq)
		}
		v, err := e.eng.RestorePlace(e.ctx, e.room, "vip")
		if err != nil || v.State != "waiting" || v.Position != 1 || !v.Bypass {
			t.Fatalf("restored bypass holder: %+v, %v; want waiting at 1 (bypass), ahead of %d", v, err, ts[2].Seq)
		}
		if p := e.poll(ts[2]); p.Position != 2 {
			t.Fatalf("the line behind the restored bypass holder: position %d, want 2", p.Position)
		}
	})
}

// lastOfNextDay is the last second of the UTC day after t's: the last a
// lookup finds a join made on t's day.
func lastOfNextDay(t time.Time) time.Time {
	day := t.UnixMilli() / 86_400_000
	return time.UnixMilli((day+2)*86_400_000 - 1000).UTC()
}

// TestAJoinsReferenceLivesToTheEndOfTheNextDay: the reference a join leaves
// for support (about 96 bytes, which neither eviction nor leave can free: it
// is how support finds the evicted and those who left, and eviction knows a
// sequence, not a visitor id) lives on the join's day and the next, and the
// record of a served visitor a day longer. Before, both lived a day more:
// about 1 GB for up to three days after 10,000,000 joins.
func TestAJoinsReferenceLivesToTheEndOfTheNextDay(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }))
		e.warm()
		p := e.enqueue("joined")
		e.tick()
		e.consume(p.Ticket.Seq)
		if err := e.eng.Complete(e.ctx, e.room, p.Ticket.Seq, origin); err != nil {
			t.Fatal(err)
		}
		day := e.clk.Now().UnixMilli() / 86_400_000
		for key, want := range map[string]int64{
			e.keys.Refs(e.clk.Now().UnixMilli()):   (day + 2) * 86_400, // the end of the next day
			e.keys.Served(e.clk.Now().UnixMilli()): (day + 3) * 86_400, // a day more
		} {
			at, err := rdb.ExpireTime(e.ctx, key).Result()
			if err != nil || int64(at/time.Second) != want {
				t.Errorf("%s expires at %v (%v), want %v", key, time.Unix(int64(at/time.Second), 0).UTC(), err, time.Unix(want, 0).UTC())
			}
		}
		e.clk.Set(lastOfNextDay(e.clk.Now()))
		if v := e.visitor("joined"); v.Seq != p.Ticket.Seq || v.State != "served" {
			t.Fatalf("on the last second of the next day: %+v", v)
		}
		e.clk.Advance(time.Second)
		if v, err := e.eng.Visitor(e.ctx, e.room, "joined"); !errors.Is(err, room.ErrUnknownVisitor) {
			t.Fatalf("the day after the next: %+v, %v; want ErrUnknownVisitor", v, err)
		}
		if _, err := e.eng.RestorePlace(e.ctx, e.room, "joined"); !errors.Is(err, room.ErrUnknownVisitor) {
			t.Fatalf("restore the day after the next: %v; want ErrUnknownVisitor", err)
		}
	})
}
