package roomdb_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// Settings changed on a live room keep the promises made under the old ones.
// (Found in review: each of these failed before its fix.)
func TestLiveSettingChanges(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			// queue → passthrough: those already waiting are admitted too, not
			// left behind while every new arrival walks in.
			t.Run("passthrough drains the queue", func(t *testing.T) {
				cfg := cfgWith(func(c *room.Config) { c.MaxActive, c.AdmitPerMinute = 1, 60 })
				e := newEnv(t, rdb, cfg)
				ts := e.enqueueN(3)
				cfg.Mode = room.ModePassthrough
				e.put(*cfg)
				if late := e.enqueue("late"); late.State != room.StateAdmitted {
					t.Fatalf("passthrough arrival: %s", late.State)
				}
				e.clk.Advance(time.Second)
				e.tick()
				for i, tk := range ts {
					if p := e.poll(tk); p.State != room.StateAdmitted {
						t.Errorf("visitor %d waiting before the switch: %s after a tick, want admitted", i, p.State)
					}
				}
			})
			// A shorter heartbeat window does not evict a visitor who follows the
			// poll interval the old window gave (half of it).
			t.Run("shorter heartbeat keeps the old window once", func(t *testing.T) {
				// One admission a minute: nobody near the back is admitted meanwhile.
				cfg := cfgWith(func(c *room.Config) { c.MaxActive, c.AdmitPerMinute, c.HeartbeatTTLSeconds = 1000, 1, 600 })
				e := newEnv(t, rdb, cfg)
				ts := e.enqueueN(10)
				silent := ts[9]
				cfg.HeartbeatTTLSeconds = 60
				e.put(*cfg)
				for i := 0; i < 22; i++ { // 220 s, within the 300 s the old window allowed
					e.clk.Advance(10 * time.Second)
					e.tick()
				}
				// Still queued, not evicted (an evicted visitor could come back only
				// while the head is below them; the head moves on in a busy room).
				if err := e.rdb.ZScore(e.ctx, e.keys.Queue, strconv.FormatInt(silent.Seq, 10)).Err(); err != nil {
					t.Fatalf("a visitor silent for 220 s, told it may wait 300 s, was evicted (%v)", err)
				}
				// Once the old window has passed, the new one applies.
				for i := 0; i < 70; i++ {
					e.clk.Advance(10 * time.Second)
					e.tick()
				}
				if err := e.rdb.ZScore(e.ctx, e.keys.Queue, strconv.FormatInt(silent.Seq, 10)).Err(); err != redis.Nil {
					t.Fatalf("silent for 700 s after the window was shortened to 60 s, still queued (%v)", err)
				}
			})
			// An opening moved later while people wait does not let new arrivals'
			// lottery draws jump them.
			t.Run("opensAt moved later keeps ticket order", func(t *testing.T) {
				cfg := cfgWith(func(c *room.Config) { c.MaxActive, c.AdmitPerMinute = 1, 60 })
				e := newEnv(t, rdb, cfg)
				ts := e.enqueueN(3)
				opens := e.clk.Now().Add(10 * time.Second)
				cfg.OpensAt = &opens
				e.put(*cfg)
				late := e.enqueue("late")
				if late.State != room.StatePrequeue {
					t.Fatalf("arrival before the new opening: %s", late.State)
				}
				e.clk.Advance(11 * time.Second)
				for _, tk := range append(ts, late.Ticket) {
					e.poll(tk)
				}
				e.warm()
				e.tick()
				if g := e.grants(); len(g) != 1 || g[0] != ts[0].Seq {
					t.Fatalf("grants %v, want the first in line %d", g, ts[0].Seq)
				}
			})
		})
	}
}

// A sweep larger than Lua's unpack limit (about 8,000 values) of visitors
// without heartbeats works on Redis and on the embedded Redis of make dev.
func TestSweepOfManyWithoutHeartbeats(t *testing.T) {
	mr := miniredis.RunT(t)
	for name, rdb := range map[string]redis.UniversalClient{
		"redis": redistest.Single(t), "miniredis": redis.NewClient(&redis.Options{Addr: mr.Addr()}),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }), roomdb.WithEvictBatch(5000))
			pipe := rdb.Pipeline()
			for i := 0; i < 4500; i++ {
				pipe.ZAdd(e.ctx, e.keys.Queue, redis.Z{Score: float64(1_700_000_000_000_000 + i), Member: 1_700_000_000_000_000 + i})
			}
			if _, err := pipe.Exec(e.ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := e.eng.Tick(e.ctx, e.room); err != nil {
				t.Fatalf("tick: %v", err)
			}
			if n := rdb.HLen(e.ctx, e.keys.Heartbeats).Val(); n < 4499 {
				t.Fatalf("%d heartbeats started, want the 4,500 queued (less one admitted)", n)
			}
		})
	}
}
