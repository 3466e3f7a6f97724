package api

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestPollAfter(t *testing.T) {
	hb := 60 * time.Second // cap: 30 s
	cases := []struct {
		name string
		in   PollInput
		want time.Duration
	}{
		{"first in line", PollInput{State: room.StateWaiting, Position: 1, RatePerMinute: 60, HeartbeatTTL: hb}, time.Second},
		{"within one tick's admissions", PollInput{State: room.StateWaiting, Position: 10, RatePerMinute: 600, HeartbeatTTL: hb}, time.Second},
		{"just past one tick: two seconds", PollInput{State: room.StateWaiting, Position: 11, RatePerMinute: 600, HeartbeatTTL: hb}, 2 * time.Second},
		{"three quarters of the ETA", PollInput{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb}, 15 * time.Second},
		{"capped at half the heartbeat", PollInput{State: room.StateWaiting, Position: 10000, RatePerMinute: 60, HeartbeatTTL: hb}, 30 * time.Second},
		{"short heartbeat, shorter cap", PollInput{State: room.StateWaiting, Position: 10000, RatePerMinute: 60, HeartbeatTTL: 12 * time.Second}, 6 * time.Second},
		{"jitter up", PollInput{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 1.1}, 16500 * time.Millisecond},
		{"jitter down", PollInput{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 0.9}, 13500 * time.Millisecond},
		{"jitter never passes the cap", PollInput{State: room.StateWaiting, Position: 10000, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 1.1}, 30 * time.Second},
		{"out-of-range jitter ignored", PollInput{State: room.StateWaiting, Position: 20, RatePerMinute: 60, HeartbeatTTL: hb, Jitter: 5}, 15 * time.Second},
		{"no rate known", PollInput{State: room.StateWaiting, Position: 5, HeartbeatTTL: hb}, 30 * time.Second},
		{"longer tick admits more per tick", PollInput{State: room.StateWaiting, Position: 20, RatePerMinute: 600, HeartbeatTTL: hb, TickInterval: 2 * time.Second}, time.Second},
		{"pre-queue, opening soon", PollInput{State: room.StatePrequeue, UntilOpen: 5 * time.Second, HeartbeatTTL: hb}, 5 * time.Second},
		{"pre-queue, opening later", PollInput{State: room.StatePrequeue, UntilOpen: time.Hour, HeartbeatTTL: hb}, 30 * time.Second},
		{"pre-queue, opening now", PollInput{State: room.StatePrequeue, HeartbeatTTL: hb}, time.Second},
		{"paused", PollInput{State: room.StatePaused, HeartbeatTTL: hb}, 30 * time.Second},
		{"closed", PollInput{State: room.StateClosed, HeartbeatTTL: hb}, 30 * time.Second},
		{"admitted: stop", PollInput{State: room.StateAdmitted, HeartbeatTTL: hb}, 0},
		{"expired: stop", PollInput{State: room.StateExpired, HeartbeatTTL: hb}, 0},
		{"no heartbeat configured", PollInput{State: room.StatePaused}, 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PollAfter(c.in); got != c.want {
				t.Errorf("PollAfter(%+v) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestETASeconds(t *testing.T) {
	if etaSeconds(10, 0) != nil {
		t.Error("no rate must give no ETA")
	}
	for _, c := range []struct {
		pos  int64
		rate float64
		want int64
	}{{1, 60, 1}, {30, 60, 30}, {1, 600, 1}, {601, 600, 61}, {0, 60, 0}} {
		if got := etaSeconds(c.pos, c.rate); got == nil || *got != c.want {
			t.Errorf("etaSeconds(%d, %v) = %v, want %d", c.pos, c.rate, got, c.want)
		}
	}
}
