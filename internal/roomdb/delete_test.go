package roomdb_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A room deleted and created again under the same id is a new room: no
// ticket of the one deleted comes back. Without the tombstone, a served
// ticket was restored, admitted and consumed again, and drained ones rejoined
// ahead of a fresh visitor (the new room's recovery window lets tickets from
// before its epoch past the head).
func TestDeletedRoomsTicketsStayDead(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := cfgWith(func(c *room.Config) { c.MaxActive, c.AdmitPerMinute = 1, 6000 })
		e := newEnv(t, rdb, cfg)
		e.warm()
		ts := e.enqueueN(3)
		e.tick()
		e.consume(ts[0].Seq) // served
		if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
			t.Fatal(err)
		}
		closed := *cfg
		closed.Mode = room.ModeClosed
		e.put(closed)
		if n, err := e.eng.Drain(e.ctx, e.room); err != nil || n != 2 {
			t.Fatalf("drain: %d %v, want 2", n, err)
		}

		// GIVEN the room deleted and created again under its id
		if err := e.eng.Delete(e.ctx, e.room); err != nil {
			t.Fatal(err)
		}
		if err := e.eng.Delete(e.ctx, e.room); !errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("second delete: %v, want ErrUnknownRoom (a tombstone is no room)", err)
		}
		e.clk.Advance(time.Second)
		e.put(*cfg)
		fresh := e.enqueue("fresh").Ticket

		// THEN the old tickets are expired, whatever they were
		for i, tk := range ts {
			if p := e.poll(tk); p.State != room.StateExpired {
				t.Errorf("ticket %d of the deleted room: %s at %d, want expired", i, p.State, p.Position)
			}
		}
		// AND the fresh visitor is first, then admitted and served alone
		if p := e.poll(fresh); p.State != room.StateWaiting || p.Position != 1 || p.Waiting != 1 {
			t.Errorf("fresh visitor: %s at %d of %d, want waiting 1 of 1", p.State, p.Position, p.Waiting)
		}
		e.warm()
		e.tick()
		if got := e.grants(); len(got) != 1 || got[0] != fresh.Seq {
			t.Errorf("grants after the re-creation: %v, want only the fresh visitor %d", got, fresh.Seq)
		}
		if _, err := e.eng.Consume(e.ctx, e.room, ts[0].Seq, origin); err == nil {
			t.Errorf("the served ticket of the deleted room was consumed again")
		}
		// AND the new room's own places still come back after a loss of its queue
		late := e.enqueue("late").Ticket
		if err := e.rdb.ZRem(e.ctx, e.keys.Queue, strconv.FormatInt(late.Seq, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		if p := e.poll(late); p.State != room.StateWaiting {
			t.Errorf("the new room's visitor, place lost: %s, want restored (waiting)", p.State)
		}
	})
}
