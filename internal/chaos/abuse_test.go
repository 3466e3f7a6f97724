package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// TestChaosAbuseLimits floods the two per-client limits a bot runs into: one
// address enqueueing as fast as it can is refused after its burst (the GCRA of
// clientEnqueuePerMinute) while another address still gets in, and a visitor
// polling faster than the minimum interval is refused with the time to wait.
// Both refusals are *RetryError (429 with Retry-After), never a place.
func TestChaosAbuseLimits(t *testing.T) {
	skipShort(t)
	s := startServer(t)
	rdb := prodClient(t, s.Addr)
	ctx := context.Background()
	cfg := chaosConfig(10, 600)
	cfg.ClientEnqueuePerMinute = 60 // burst 6
	eng := roomdb.New(rdb, roomdb.WithMinPollInterval(time.Second))
	id := newRoom(t)
	put(t, eng, id, cfg)

	allowed := 0
	for range 100 {
		err := eng.AllowEnqueue(ctx, id, "203.0.113.9")
		var re *room.RetryError
		switch {
		case err == nil:
			allowed++
		case errors.As(err, &re) && errors.Is(err, room.ErrRateLimited):
			if re.After <= 0 || re.After > time.Minute {
				t.Errorf("retry after %s", re.After)
			}
		default:
			t.Fatalf("AllowEnqueue: %v", err)
		}
	}
	if allowed > 7 { // the burst, plus one interval's refill while the loop ran
		t.Errorf("one address enqueued %d times in a burst; the limit allows 6", allowed)
	}
	if err := eng.AllowEnqueue(ctx, id, "198.51.100.20"); err != nil {
		t.Errorf("another address is refused: %v", err)
	}

	p, err := eng.Enqueue(ctx, id, "bot")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := range 20 {
		_, err := eng.Poll(ctx, p.Ticket)
		if errors.Is(err, room.ErrRateLimited) {
			refused++
		} else if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
	}
	if refused < 19 {
		t.Errorf("%d of 20 back-to-back polls refused; want all but the first", refused)
	}
	// A refused poll is not a heartbeat lost: the place is still there.
	if got, err := roomdb.New(rdb).Poll(ctx, p.Ticket); err != nil || got.State != room.StateWaiting {
		t.Errorf("after the poll flood: %v %v, want waiting", got.State, err)
	}
}
