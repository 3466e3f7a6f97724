package roomdb_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// TickGuarded runs at most one tick per room per guard, however many callers
// race for it, and a guarded tick within the guard after a scheduled one does
// nothing; concurrent guarded ticks admit no more than the token bucket holds.
func TestTickGuarded(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := baseConfig()
		cfg.AdmitPerMinute = 60 // one a second; the bucket holds at most two (two seconds of rate)
		e := newEnv(t, rdb, &cfg)
		e.enqueueN(10)
		e.clk.Advance(5 * time.Second)

		var mu sync.Mutex
		var ran, busy int
		var admitted int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				r, err := e.eng.TickGuarded(e.ctx, e.room, time.Second)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, room.ErrTickBusy):
					busy++
				case err != nil:
					t.Errorf("TickGuarded: %v", err)
				default:
					ran++
					admitted += r.Admitted
				}
			})
		}
		wg.Wait()
		if ran != 1 || busy != 7 || admitted != 2 {
			t.Errorf("8 concurrent guarded ticks: %d ran, %d busy, %d admitted; want 1, 7, 2 (the full bucket)", ran, busy, admitted)
		}
		e.clk.Advance(999 * time.Millisecond)
		if _, err := e.eng.TickGuarded(e.ctx, e.room, time.Second); !errors.Is(err, room.ErrTickBusy) {
			t.Errorf("guarded tick 999 ms later: %v, want ErrTickBusy", err)
		}
		e.clk.Advance(time.Millisecond)
		if r, err := e.eng.TickGuarded(e.ctx, e.room, time.Second); err != nil || r.Admitted != 1 {
			t.Errorf("guarded tick 1 s later: %+v %v, want one admitted", r, err)
		}
		// A scheduled (unguarded) tick always runs, and holds off guarded ones.
		e.clk.Advance(2 * time.Second)
		e.tick()
		if _, err := e.eng.TickGuarded(e.ctx, e.room, time.Second); !errors.Is(err, room.ErrTickBusy) {
			t.Errorf("guarded tick right after a scheduled one: %v, want ErrTickBusy", err)
		}
	})
}

// A room restored after a total loss with its recorded head as the floor
// refuses tickets at or below it, in the recovery window too, and restores
// the places above it in order.
func TestFloorRefusesServedTickets(t *testing.T) {
	redistest.OwnEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := baseConfig()
		cfg.AdmitPerMinute = 6000
		cfg.MaxActive = 3
		e := newEnv(t, rdb, &cfg)
		ts := e.enqueueN(6)
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 3 {
			t.Fatalf("tick admitted %d, want 3", r.Admitted)
		}
		e.consume(ts[0].Seq)
		head, err := e.eng.Head(e.ctx, e.room, -1)
		if err != nil || head != float64(ts[2].Seq) {
			t.Fatalf("Head = %v, %v; want %d", head, err, ts[2].Seq)
		}

		e.loseEverything()
		if f, err := e.eng.Head(e.ctx, e.room, head); err != nil || f != head {
			t.Fatalf("raise floor: %v %v", f, err)
		}
		if f, err := e.eng.Head(e.ctx, e.room, head-5); err != nil || f != head {
			t.Fatalf("a lower floor lowered it: %v %v", f, err)
		}
		e.put(cfg)
		for i, tk := range ts {
			p := e.poll(tk)
			if i < 3 && p.State != room.StateExpired {
				t.Errorf("ticket %d at or below the floor: %s, want expired", i, p.State)
			}
			if i >= 3 && (p.State != room.StateWaiting || p.Position != int64(i-2)) {
				t.Errorf("ticket %d above the floor: %s at %d, want waiting at %d", i, p.State, p.Position, i-2)
			}
		}
		e.clk.Advance(time.Second)
		e.tick()
		if _, err := e.eng.Consume(e.ctx, e.room, ts[0].Seq, origin); err == nil {
			t.Errorf("a consumed grant was granted and consumed again after the loss")
		}
	})
}
