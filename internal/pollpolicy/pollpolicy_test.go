package pollpolicy

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestAfter(t *testing.T) {
	hb := 60 * time.Second // cap: 30 s
	cases := []struct {
		name string
		in   Input
		want time.Duration
	}{
		{"first in line", Input{State: room.StateWaiting, Position: 1, RatePerMinute: 60, HeartbeatTTL: hb}, time.Second},
		{"within one tick's admissions", Input{State: room.StateWaiting, Position: 10, RatePerMinute: 600, HeartbeatTTL: hb}, time.Second},
		{"just past one tick: two seconds", Input{State: room.StateWaiting, Position: 11, RatePerMinute: 600, HeartbeatTTL: hb}, 2 * time.Second},
		{"three quarters of the ETA", Input{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb}, 15 * time.Second},
		{"capped at half the heartbeat", Input{State: room.StateWaiting, Position: 10000, RatePerMinute: 60, HeartbeatTTL: hb}, 30 * time.Second},
		{"short heartbeat, shorter cap", Input{State: room.StateWaiting, Position: 10000, RatePerMinute: 60, HeartbeatTTL: 12 * time.Second}, 6 * time.Second},
		{"jitter up", Input{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 1.1}, 16500 * time.Millisecond},
		{"jitter down", Input{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 0.9}, 13500 * time.Millisecond},
		{"jitter never passes the cap", Input{State: room.StateWaiting, Position: 10000, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 1.1}, 30 * time.Second},
		{"out-of-range jitter ignored", Input{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 5}, 15 * time.Second},
		{"no rate known", Input{State: room.StateWaiting, Position: 5, HeartbeatTTL: hb}, 30 * time.Second},
		{"longer tick admits more per tick", Input{State: room.StateWaiting, Position: 20, RatePerMinute: 600, HeartbeatTTL: hb, TickInterval: 2 * time.Second}, time.Second},
		{"pre-queue, opening soon", Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, HeartbeatTTL: hb}, 5 * time.Second},
		{"pre-queue, opening later", Input{State: room.StatePrequeue, UntilOpen: time.Hour, HeartbeatTTL: hb}, 30 * time.Second},
		{"pre-queue, opening now", Input{State: room.StatePrequeue, HeartbeatTTL: hb}, time.Second},
		{"paused", Input{State: room.StatePaused, HeartbeatTTL: hb}, 30 * time.Second},
		{"closed", Input{State: room.StateClosed, HeartbeatTTL: hb}, 30 * time.Second},
		{"admitted: stop", Input{State: room.StateAdmitted, HeartbeatTTL: hb}, 0},
		{"expired: stop", Input{State: room.StateExpired, HeartbeatTTL: hb}, 0},
		{"no heartbeat configured", Input{State: room.StatePaused}, 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := After(c.in); got != c.want {
				t.Errorf("After(%+v) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestETASeconds(t *testing.T) {
	if ETASeconds(10, 0) != nil {
		t.Error("no rate must give no ETA")
	}
	for _, c := range []struct {
		pos  int64
		rate float64
		want int64
	}{{1, 60, 1}, {30, 60, 30}, {1, 600, 1}, {601, 600, 61}, {0, 60, 0}} {
		if got := ETASeconds(c.pos, c.rate); got == nil || *got != c.want {
			t.Errorf("ETASeconds(%d, %v) = %v, want %d", c.pos, c.rate, got, c.want)
		}
	}
}
