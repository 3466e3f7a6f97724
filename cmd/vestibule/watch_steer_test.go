package main

import (
	"testing"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The watch shows the room's own steering and why: the net's state and the
// pace between its bounds; nothing for a room that does neither.
func TestWatchShowsTheSteering(t *testing.T) {
	var r operator.RoomInfo
	r.Config.AdmitPerMinute, r.Config.AdmitPerMinuteMin = 600, 60
	if got := steerLine(r); got != "" {
		t.Errorf("a room that does not steer: %q, want nothing", got)
	}
	r.Stats.Net, r.Stats.NetWhy = room.NetOn, "arrivals"
	r.Stats.PaceWhy, r.Stats.PacePerMinute = "backoff", 337.5
	want := "safety net on (arrivals above queueAbovePerMinute)   pace 337.5/min of 60..600, backing off: the origin reports a load of 0.9 or more"
	if got := steerLine(r); got != want {
		t.Errorf("steerLine:\n got %q\nwant %q", got, want)
	}
}
