package roomdb_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// loseEverything wipes Redis as a restart without persistence would: the
// tests that call it run on servers of their own (redistest.OwnEach).
func (e *env) loseEverything() {
	e.t.Helper()
	if err := redistest.FlushAll(e.ctx, e.rdb); err != nil {
		e.t.Fatal(err)
	}
}

// I4: a flush mid-queue loses no place. The tickets alone rebuild the queue in
// its original order, and numbers issued after the loss still come after.
func TestDataLossRestoresPlacesInOrder(t *testing.T) {
	const n, maxActive = 40, 5
	redistest.OwnEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := cfgWith(func(c *room.Config) {
			c.MaxActive, c.AdmitPerMinute, c.HeartbeatTTLSeconds = maxActive, 6000, 3600
		})
		e := newEnv(t, rdb, cfg)
		ts := e.enqueueN(n)
		e.clk.Advance(10 * time.Second)

		e.loseEverything()
		if _, err := e.eng.Poll(e.ctx, ts[0]); !errors.Is(err, room.ErrUnknownRoom) {
			t.Fatalf("poll of a forgotten room: %v, want ErrUnknownRoom", err)
		}
		// The operator (or the deploy) puts the room back; only its settings.
		e.put(*cfg)

		// Visitors come back in any order; each gets the place back.
		shuffled := slices.Clone(ts)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, tk := range shuffled {
			if p := e.poll(tk); p.State != room.StateWaiting {
				t.Fatalf("visitor %d after the loss: %s, want waiting", tk.Seq, p.State)
			}
		}
		late := e.enqueue("late").Ticket
		var got []int64
		for _, tk := range ts {
			got = append(got, e.poll(tk).Position)
		}
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("positions after the loss (-want +got):\n%s", diff)
		}
		if p := e.poll(late); p.Position != n+1 || p.Waiting != n+1 {
			t.Errorf("arrival after the loss: position %d of %d, want %d of %d", p.Position, p.Waiting, n+1, n+1)
		}

		// Admission goes on in the original order, the late arrival last.
		order := append(seqs(ts), late.Seq)
		e.warm()
		for len(order) > 0 {
			e.tick()
			k := min(maxActive, len(order))
			if diff := cmp.Diff(order[:k], e.grants()); diff != "" {
				t.Fatalf("grants after a tick, %d still to admit (-want +got):\n%s", len(order), diff)
			}
			for _, s := range order[:k] {
				e.consume(s)
				if err := e.eng.Complete(e.ctx, e.room, s, origin); err != nil {
					t.Fatal(err)
				}
			}
			order = order[k:]
			e.clk.Advance(time.Second)
		}
	})
}

// A loss after some were admitted: the head is lost too, so a visitor whose
// grant was lost comes back at the front, and the queue keeps its order.
func TestDataLossAfterAdmissions(t *testing.T) {
	redistest.OwnEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := cfgWith(func(c *room.Config) { c.MaxActive, c.HeartbeatTTLSeconds = 3, 3600 })
		e := newEnv(t, rdb, cfg)
		e.warm()
		ts := e.enqueueN(8)
		e.tick() // ts[0..2] hold grants
		e.consume(ts[0].Seq)
		e.loseEverything()
		e.put(*cfg)
		for i := len(ts) - 1; i >= 0; i-- {
			if p := e.poll(ts[i]); p.State != room.StateWaiting {
				t.Errorf("visitor %d: %s, want waiting", i, p.State)
			}
		}
		var got []int64
		for _, tk := range ts {
			got = append(got, e.poll(tk).Position)
		}
		if diff := cmp.Diff([]int64{1, 2, 3, 4, 5, 6, 7, 8}, got); diff != "" {
			t.Errorf("positions (-want +got):\n%s", diff)
		}
	})
}
