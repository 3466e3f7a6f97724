package main

import (
	"testing"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The watch shows the room's own steering and why: the net's state and the
// rate it admits at between its bounds, with the pace it tells beside it
// when that differs (ahead of the rate while it climbs); nothing for a room
// that does neither.
func TestWatchShowsTheSteering(t *testing.T) {
	var r operator.RoomInfo
	r.Config.AdmitPerMinute, r.Config.AdmitPerMinuteMin = 600, 60
	if got := steerLine(r); got != "" {
		t.Errorf("a room that does not steer: %q, want nothing", got)
	}
	r.Stats.Net, r.Stats.NetWhy = room.NetOn, "arrivals"
	r.Stats.PaceWhy, r.Stats.RatePerMinute, r.Stats.PacePerMinute = "backoff", 337.5, 337.5
	want := "safety net on (arrivals above queueAbovePerMinute)   rate 337.5/min of 60..600, backing off: the origin reports a load of 0.9 or more"
	if got := steerLine(r); got != want {
		t.Errorf("steerLine:\n got %q\nwant %q", got, want)
	}
	r.Stats.Net = ""
	r.Stats.PaceWhy, r.Stats.RatePerMinute, r.Stats.PacePerMinute = "climb", 250, 412.5
	want = "rate 250/min of 60..600 (ETAs told at 412.5/min), climbing: the origin reports below 0.75"
	if got := steerLine(r); got != want {
		t.Errorf("steerLine while climbing:\n got %q\nwant %q", got, want)
	}
}
