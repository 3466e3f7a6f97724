package room

import "time"

// VisitorState is what a support lookup finds of one visitor (by the
// reference the waiting page shows: the visitor id): where they stand now
// and the times the engine still holds. A time is nil when it is unknown
// or has not happened.
type VisitorState struct {
	Room    string `json:"room"`
	Visitor string `json:"visitor"`
	Seq     int64  `json:"seq"`
	// State is where the visitor stands (the Standing constants).
	State Standing `json:"state"`
	// Position is the place in the line (1-based) while waiting.
	Position int64 `json:"position,omitempty"`
	// Bypass: the place is ahead of the line (a bypass invitation).
	Bypass   bool      `json:"bypass,omitempty"`
	JoinedAt time.Time `json:"joinedAt"`
	// LastPoll is the place's last poll while it waited: its heartbeat, or,
	// once admitted or evicted, what the trail kept of it.
	LastPoll *time.Time `json:"lastPoll,omitempty"`
	// AdmittedAt is when the place was admitted, kept by the trail whatever
	// came after (a consume, a lapsed grant); for a grant the trail missed,
	// the claim deadline less claimTTLSeconds as set now. ClaimDeadline is
	// the grant's deadline while it holds one.
	AdmittedAt    *time.Time `json:"admittedAt,omitempty"`
	ClaimDeadline *time.Time `json:"claimDeadline,omitempty"`
	// Consumed: the origin redeemed the entry token (or gave it up).
	Consumed   bool       `json:"consumed"`
	SessionEnd *time.Time `json:"sessionEnd,omitempty"`
}

// Standing is where a visitor a support lookup found stands (VisitorState.State).
type Standing string

// The standings of a visitor.
const (
	StandingWaiting  Standing = "waiting"  // in the line (Position)
	StandingPrequeue Standing = "prequeue" // in the pre-queue: no place before the opening, the draw is secret
	StandingArriving Standing = "arriving" // on an arrival shard, not merged into the line yet
	StandingAdmitted Standing = "admitted" // holds a grant, not claimed yet
	StandingActive   Standing = "active"   // in a session
	StandingServed   Standing = "served"   // the grant was consumed or given up, and the session is over
	StandingLeft     Standing = "left"     // left by the leave route
	// StandingLost: nowhere (evicted, expired, or its data lost), which an
	// operator may restore (Engine.RestorePlace).
	StandingLost Standing = "lost"
)
