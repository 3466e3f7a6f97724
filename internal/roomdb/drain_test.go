package roomdb_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// Drain empties a closed room's queue over several script calls (10,000 a
// call, 1,000 a batch), with the heartbeats, and keeps the grants.
func TestDrainBatches(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }))
		e.enqueueN(3)
		e.tick()
		if _, err := e.eng.Drain(e.ctx, e.room); !errors.Is(err, room.ErrNotClosed) {
			t.Fatalf("drain of an open room: %v", err)
		}
		// Fill the queue directly, as load tools do.
		const n = 12_345
		base := int64(1) << 51
		pipe := rdb.Pipeline()
		for i := range int64(n) {
			pipe.ZAdd(e.ctx, e.keys.Queue, redis.Z{Score: float64(base + i), Member: base + i})
			pipe.HSet(e.ctx, e.keys.Heartbeats, roomdb.HeartbeatField(base+i), roomdb.HeartbeatValue(e.clk.Now().UnixMilli()))
		}
		if _, err := pipe.Exec(e.ctx); err != nil {
			t.Fatal(err)
		}
		before := e.stats()
		c := baseConfig()
		c.MaxActive, c.Mode = 1, room.ModeClosed
		e.put(c)
		got, err := e.eng.Drain(e.ctx, e.room)
		if err != nil || got != before.Waiting {
			t.Fatalf("drained %d (%v), want %d", got, err, before.Waiting)
		}
		st := e.stats()
		hb, _ := rdb.HLen(e.ctx, e.keys.Heartbeats).Result()
		left, _ := rdb.ZCard(e.ctx, e.keys.Left).Result()
		if before.Waiting < n || st.Waiting != 0 || st.Admitted != before.Admitted || hb != 0 || left != before.Waiting {
			t.Fatalf("after drain: %+v, %d heartbeats, %d left", st, hb, left)
		}
		if _, err := e.eng.Drain(e.ctx, "no-such-room-x"); !errors.Is(err, room.ErrUnknownRoom) {
			t.Fatalf("unknown room: %v", err)
		}
	})
}
