package roomdb_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A tick that changes something reports what its admission event needs: the
// lowest and highest sequence it admitted and the room's counts after it; a
// tick that changes nothing reports nothing (and its room emits no event).
func TestTickReportsItsAdmissions(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.MaxActive, c.AdmitPerMinute, c.HeartbeatTTLSeconds, c.ClaimTTLSeconds = 3, 6000, 3600, 3600
		}))
		e.warm()
		ts := e.enqueueN(5)
		want := room.TickResult{Admitted: 3, FirstSeq: ts[0].Seq, LastSeq: ts[2].Seq,
			After: room.TickCounts{Waiting: 2, Admitted: 3}}
		if diff := cmp.Diff(want, e.tick()); diff != "" {
			t.Errorf("first tick (-want +got):\n%s", diff)
		}
		e.clk.Advance(time.Second)
		if r := e.tick(); r != (room.TickResult{}) {
			t.Errorf("a tick of a full room changed nothing but reported %+v", r)
		}
		e.consume(ts[0].Seq)
		e.clk.Advance(time.Second)
		if r := e.tick(); r != (room.TickResult{}) {
			t.Errorf("a consume frees no slot (the session holds it), yet the tick reported %+v", r)
		}
	})
}

// After a pre-queue's draw visitors are admitted in draw order, not by
// sequence: the range is still the lowest and highest sequence admitted.
func TestTickReportsThePrequeueRange(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		opens := e.clk.Now().Add(time.Minute)
		e.put(*cfgWith(func(c *room.Config) {
			c.OpensAt, c.MaxActive, c.AdmitPerMinute, c.HeartbeatTTLSeconds = &opens, 4, 6000, 3600
		}))
		e.enqueueN(10)
		e.clk.Set(opens.Add(time.Second))
		r := e.tick()
		g := e.grants()
		if r.Admitted != 4 || len(g) != 4 {
			t.Fatalf("tick %+v, grants %v: want 4 admitted", r, g)
		}
		if r.FirstSeq != slices.Min(g) || r.LastSeq != slices.Max(g) || r.After != (room.TickCounts{Waiting: 6, Admitted: 4}) {
			t.Errorf("tick %+v: want the range %d..%d of the grants and 6 waiting, 4 admitted", r, slices.Min(g), slices.Max(g))
		}
	})
}
