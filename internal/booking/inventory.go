package booking

import (
	"context"
	"time"
)

// The types of InventoryEvent: one per change of an event's inventory.
const (
	InventoryHeld      = "booking.inventory.held"      // a hold took seats and units
	InventoryExtended  = "booking.inventory.extended"  // a hold got more time
	InventoryReleased  = "booking.inventory.released"  // the origin gave a hold up
	InventoryExpired   = "booking.inventory.expired"   // a hold ran out
	InventoryEnded     = "booking.inventory.ended"     // a hold went with its session (completed, left, timed out)
	InventoryConfirmed = "booking.inventory.confirmed" // a hold became an order: its items are sold
	InventoryCancelled = "booking.inventory.cancelled" // an order was cancelled: its items returned
)

// InventoryEvent is one change of an event's inventory, written to the
// event's outbox by the script that made the change. Sequence numbers the
// event's changes from 1 within an Epoch (the time the event was first
// defined in this Redis: a new epoch after a total loss), with no gap: a
// consumer that sees sequence n+2 after n missed one.
type InventoryEvent struct {
	Type     string `json:"type"`
	Event    string `json:"event"`
	Epoch    int64  `json:"epoch"`
	Sequence int64  `json:"sequence"`
	// Hold is the hold's fencing token in decimal (the order id once confirmed).
	Hold         string           `json:"hold"`
	FencingToken int64            `json:"fencingToken"`
	Session      string           `json:"session"`
	Seats        []string         `json:"seats,omitempty"`
	Units        map[string]int64 `json:"units,omitempty"`
	ExpiresAt    *time.Time       `json:"expiresAt,omitempty"` // held, extended
	At           time.Time        `json:"at"`
}

// InventoryPublisher is a Publisher that also sends inventory events. The
// sweep publishes them through it; with a Publisher that is not one, they
// are acknowledged unsent.
type InventoryPublisher interface {
	PublishInventory(ctx context.Context, events []InventoryEvent) error
}
