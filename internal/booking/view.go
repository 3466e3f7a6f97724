package booking

import "time"

// EventView is the admin view of an event, GET /api/admin/events/{event}:
// its definition, every seat's state, the units left per sku, the last
// fencing token and the counters. The booking API writes it and the
// operator's client reads it.
type EventView struct {
	Event             string               `json:"event"`
	Room              string               `json:"room"`
	HoldTTLSeconds    int64                `json:"holdTTLSeconds"`
	SessionLimit      int64                `json:"sessionLimit"`
	MaxHoldExtensions int64                `json:"maxHoldExtensions"`
	MaxHoldSeconds    int64                `json:"maxHoldSeconds"`
	Seats             map[string]SeatState `json:"seats"`
	Stock             map[string]int64     `json:"stock"`
	Fence             string               `json:"fence"` // the last fencing token issued
	Counters          map[string]int64     `json:"counters"`
	// Restore says how the event came back from a total loss; absent: never lost.
	Restore *RestoreView `json:"restore,omitempty"`
}

// RestoreView is how an event came back from a total loss, or was closed to
// holds by an admin (a region failover), as the admin view shows it.
type RestoreView struct {
	// State is "recovering" (closed to holds until rebuilt) or "reopened".
	State      string     `json:"state"`
	RestoredAt time.Time  `json:"restoredAt,omitzero"` // absent: never lost (closed by an admin)
	ClosedAt   *time.Time `json:"closedAt,omitempty"`  // when an admin last closed it
	ReopenedAt *time.Time `json:"reopenedAt,omitempty"`
	Rebuilt    int64      `json:"rebuiltOrders"`
}
