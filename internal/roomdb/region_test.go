package roomdb_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// dumpRoom is every key of the room's lib.lua set as DUMP gives it: equal
// dumps, nothing written.
func (e *env) dumpRoom() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for _, k := range e.keys.List() {
		v, err := e.rdb.Dump(e.ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			e.t.Fatalf("DUMP %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}

// A failover gives the room to the new region (ClaimRegion): then every call
// of the old region's engine (a late tick, a consume, a join, a poll, a PUT)
// and of an engine of no region is refused before it writes (ErrFenced, a 503),
// the room unchanged, while the new region's engine goes on. A second failover
// gives it back, and fences the other way.
func TestRegionFence(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := baseConfig()
		cfg.MaxActive = 2
		e := newEnv(t, rdb, &cfg)
		old := roomdb.New(rdb, roomdb.WithClock(e.clk.Now), roomdb.WithRegion("us-east-1"))
		standby := roomdb.New(rdb, roomdb.WithClock(e.clk.Now), roomdb.WithRegion("us-west-2"))
		ts := e.enqueueN(4)
		e.warm()
		e.tick()
		if g := e.grants(); len(g) != 2 {
			t.Fatalf("grants before the failover: %v", g)
		}
		// No failover yet: every engine writes.
		if _, err := old.Consume(e.ctx, e.room, ts[0].Seq, origin); err != nil {
			t.Fatalf("old region's consume before any failover: %v", err)
		}

		claim, prev, err := standby.ClaimRegion(e.ctx, e.room, 1)
		if err != nil || claim != (roomdb.RegionClaim{Region: "us-west-2", Epoch: 1}) || prev != "" {
			t.Fatalf("claim: %+v %q %v", claim, prev, err)
		}
		before := e.dumpRoom()
		late := map[string]func(*roomdb.Engine) error{
			"tick":    func(g *roomdb.Engine) error { _, err := g.Tick(e.ctx, e.room); return err },
			"consume": func(g *roomdb.Engine) error { _, err := g.Consume(e.ctx, e.room, ts[1].Seq, origin); return err },
			"complete": func(g *roomdb.Engine) error {
				return g.Complete(e.ctx, e.room, ts[0].Seq, origin)
			},
			"join":  func(g *roomdb.Engine) error { _, err := g.Enqueue(e.ctx, e.room, "late"); return err },
			"poll":  func(g *roomdb.Engine) error { _, err := g.Poll(e.ctx, ts[3]); return err },
			"leave": func(g *roomdb.Engine) error { return g.Leave(e.ctx, ts[3]) },
			"put":   func(g *roomdb.Engine) error { _, err := g.PutConfig(e.ctx, e.room, cfg); return err },
		}
		for name, call := range late {
			for gname, g := range map[string]*roomdb.Engine{"old region": old, "no region": e.eng} {
				err := call(g)
				if !errors.Is(err, roomdb.ErrFenced) || !errors.Is(err, room.ErrUnavailable) {
					t.Errorf("%s's late %s: %v, want ErrFenced (a 503)", gname, name, err)
				}
			}
		}
		after := e.dumpRoom()
		for k, v := range before {
			if after[k] != v {
				t.Errorf("fenced calls changed %s", k)
			}
		}

		// The new region goes on: the grant the old region's consume was
		// refused is consumed here once.
		if _, err := standby.Consume(e.ctx, e.room, ts[1].Seq, origin); err != nil {
			t.Fatalf("new region's consume: %v", err)
		}
		if _, err := standby.Tick(e.ctx, e.room); err != nil {
			t.Fatalf("new region's tick: %v", err)
		}
		if got, err := standby.RegionOf(e.ctx, e.room); err != nil || got != claim {
			t.Errorf("RegionOf: %+v %v, want %+v", got, err, claim)
		}

		// Failing back: a lower epoch than the room's is raised to it plus nothing;
		// the room is the old region's again and the standby is fenced.
		back, prev, err := old.ClaimRegion(e.ctx, e.room, 2)
		if err != nil || back.Epoch != 2 || prev != "us-west-2" {
			t.Fatalf("claim back: %+v %q %v", back, prev, err)
		}
		if _, err := standby.Tick(e.ctx, e.room); !errors.Is(err, roomdb.ErrFenced) {
			t.Errorf("standby's tick after failing back: %v, want ErrFenced", err)
		}
		if _, err := old.Poll(e.ctx, ts[3]); err != nil {
			t.Errorf("old region's poll after failing back: %v", err)
		}
		if again, _, err := old.ClaimRegion(e.ctx, e.room, 1); err != nil || again.Epoch != 2 {
			t.Errorf("a claim at a lower epoch: %+v %v, want the room's epoch 2 kept", again, err)
		}
		if _, _, err := e.eng.ClaimRegion(e.ctx, e.room, 3); err == nil {
			t.Error("an engine of no region claimed a room")
		}
	})
}
