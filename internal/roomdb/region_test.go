package roomdb_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

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

		claim, err := standby.ClaimRegion(e.ctx, e.room)
		if err != nil || claim != (room.RegionClaim{Region: "us-west-2", Epoch: 1}) {
			t.Fatalf("claim: %+v %v", claim, err)
		}
		claim.Previous = "" // RegionOf reads what the room names now
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

		// Failing back: the room is the old region's again, at the next epoch,
		// and the standby is fenced.
		back, err := old.ClaimRegion(e.ctx, e.room)
		if err != nil || back.Epoch != 2 || back.Previous != "us-west-2" {
			t.Fatalf("claim back: %+v %v", back, err)
		}
		if _, err := standby.Tick(e.ctx, e.room); !errors.Is(err, roomdb.ErrFenced) {
			t.Errorf("standby's tick after failing back: %v, want ErrFenced", err)
		}
		if _, err := old.Poll(e.ctx, ts[3]); err != nil {
			t.Errorf("old region's poll after failing back: %v", err)
		}
		if again, err := old.ClaimRegion(e.ctx, e.room); err != nil || again.Epoch != 2 || again.Previous != "us-east-1" {
			t.Errorf("a failover run again: %+v %v, want epoch 2 kept", again, err)
		}
		if _, err := e.eng.ClaimRegion(e.ctx, e.room); !errors.Is(err, room.ErrNoRegion) {
			t.Errorf("an engine of no region claimed a room: %v", err)
		}
	})
}

// A room begins as its creating region's: the standby's engine is fenced out
// of it before any failover, and in after one.
func TestRegionOfACreatedRoom(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil, roomdb.WithRegion("eu-west-1"))
		e.put(baseConfig())
		standby := roomdb.New(rdb, roomdb.WithClock(e.clk.Now), roomdb.WithRegion("eu-central-1"))
		if got, err := e.eng.RegionOf(e.ctx, e.room); err != nil || got != (room.RegionClaim{Region: "eu-west-1"}) {
			t.Fatalf("RegionOf a new room: %+v %v", got, err)
		}
		if _, err := standby.Enqueue(e.ctx, e.room, "v"); !errors.Is(err, roomdb.ErrFenced) {
			t.Errorf("standby's join before a failover: %v, want ErrFenced", err)
		}
		if _, err := standby.ClaimRegion(e.ctx, e.room); err != nil {
			t.Fatal(err)
		}
		if _, err := standby.Enqueue(e.ctx, e.room, "v"); err != nil {
			t.Errorf("standby's join after the failover: %v", err)
		}
	})
}

// A failover's claim opens a recovery window over the floor of the head the
// standby holds: a join of the old region's last second, which never reached
// the standby, comes back from its ticket though the head passed it before
// its first poll there (I4); a visitor served long before (used forgot it)
// does not come back through the window (I2).
func TestRegionClaimOpensARecoveryWindow(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := cfgWith(func(c *room.Config) {
			c.MaxActive, c.HeartbeatTTLSeconds, c.AdmitPerMinute, c.ClaimTTLSeconds = 2, 3600, 600, 60
		})
		e := newEnv(t, rdb, nil, roomdb.WithRegion("us-east-1"))
		e.put(*cfg)
		ts := e.enqueueN(5)
		e.warm()
		e.tick()
		for _, tk := range ts[:2] {
			e.consume(tk.Seq)
			if err := e.eng.Complete(e.ctx, e.room, tk.Seq, origin); err != nil {
				t.Fatal(err)
			}
		}
		// Long after (used forgets the two served), the next two are admitted.
		e.clk.Advance(130 * time.Second)
		e.tick()
		if g := e.grants(); len(g) != 2 || g[1] != ts[3].Seq {
			t.Fatalf("grants: %v, want the next two", g)
		}
		// The old region's last second: ts[4]'s join never reached the standby.
		if err := rdb.ZRem(e.ctx, e.keys.Queue, strconv.FormatInt(ts[4].Seq, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		rdb.HIncrBy(e.ctx, e.keys.Config, "waiting", -1)

		standby := roomdb.New(rdb, roomdb.WithClock(e.clk.Now), roomdb.WithRegion("us-west-2"))
		if _, err := standby.ClaimRegion(e.ctx, e.room); err != nil {
			t.Fatal(err)
		}
		// A join in the standby, admitted once the two grants are used:
		// the head passes ts[4], which has not polled yet.
		late, err := standby.Enqueue(e.ctx, e.room, "after")
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range ts[2:4] {
			if _, err := standby.Consume(e.ctx, e.room, tk.Seq, origin); err != nil {
				t.Fatal(err)
			}
			if err := standby.Complete(e.ctx, e.room, tk.Seq, origin); err != nil {
				t.Fatal(err)
			}
		}
		e.clk.Advance(time.Second)
		if r, err := standby.Tick(e.ctx, e.room); err != nil || r.Admitted != 1 {
			t.Fatalf("standby's tick: %+v %v, want the join after admitted", r, err)
		}
		if p, err := standby.Poll(e.ctx, late.Ticket); err != nil || p.State != room.StateAdmitted {
			t.Fatalf("the standby's join: %v %v, want admitted", p.State, err)
		}
		if p, err := standby.Poll(e.ctx, ts[4]); err != nil || p.State == room.StateExpired {
			t.Errorf("I4: the old region's last join after the failover: %v %v, want its place back", p.State, err)
		}
		for _, tk := range ts[:2] {
			if p, err := standby.Poll(e.ctx, tk); err != nil || p.State != room.StateExpired {
				t.Errorf("I2: a visitor served long before the failover: %v %v, want expired", p.State, err)
			}
		}
	})
}
