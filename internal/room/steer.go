package room

// A room steers itself (docs/ENGINE.md, "Steering"): an auto room's safety
// net switches queueing on and off, and a room with AdmitPerMinuteMin runs at
// a pace that follows the origin's load. A tick reports each switch and each
// step of the pace worth a report (TickResult.Net, TickResult.Pace).

// NetChange is a switch of an auto room's safety net.
type NetChange struct {
	On bool
	// Why: on for 'arrivals' (above queueAbovePerMinute), 'queue' (someone
	// waits), 'full' (no free slot), 'rate' (the bucket was empty),
	// 'restored' (the room came back after a total loss); off for 'calm'.
	Why string
}

// PaceChange is a step of the pace that follows the origin's load.
type PaceChange struct {
	// From and To are the admission rate (a minute) before and after.
	From, To float64
	// Why: 'backoff' (the origin's load at 0.9 or more), 'floor' (backed
	// off to admitPerMinuteMin), 'hold' (load 0.75–0.9), 'climb' (below
	// 0.75), 'quiet' (no report for 30 s: climbing), 'top' (at admitPerMinute).
	Why string
}

// The net's states in Stats.Net.
const (
	NetOn  = "on"
	NetOff = "off"
)
