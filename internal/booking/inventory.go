package booking

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

var inventoryKinds = map[string]string{
	"held": InventoryHeld, "extended": InventoryExtended, "released": InventoryReleased, "expired": InventoryExpired,
	"ended": InventoryEnded, "confirmed": InventoryConfirmed, "cancelled": InventoryCancelled,
}

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

// parseInventory decodes an inventory event's outbox member (booking_lib.lua's
// emit): 'i<seq>|kind|token|session|seats|units|expires|at|epoch'.
func parseInventory(event, id string) (InventoryEvent, error) {
	f := strings.Split(strings.TrimPrefix(id, "i"), "|")
	if len(f) != 9 || inventoryKinds[f[1]] == "" {
		return InventoryEvent{}, fmt.Errorf("inventory event %.80q", id)
	}
	iv := InventoryEvent{Type: inventoryKinds[f[1]], Event: event, Sequence: num(f[0]), Hold: f[2], FencingToken: num(f[2]),
		Session: f[3], At: time.UnixMilli(num(f[7])).UTC(), Epoch: num(f[8])}
	if f[4] != "" {
		iv.Seats = strings.Split(f[4], ",")
	}
	if f[5] != "" {
		iv.Units = map[string]int64{}
		for _, p := range strings.Split(f[5], ",") {
			k, q, _ := strings.Cut(p, "=")
			iv.Units[k] = num(q)
		}
	}
	if ex := num(f[6]); ex > 0 {
		t := time.UnixMilli(ex).UTC()
		iv.ExpiresAt = &t
	}
	return iv, nil
}

// OrdersPage is about how many orders one Orders call returns.
const OrdersPage = 500

// Orders returns a page of the event's orders, confirmed and cancelled, in
// no order, and the cursor of the next page ("0" after the last; start with
// "0"). An order may appear on two pages (HSCAN): key them by Order.
func (e *Engine) Orders(ctx context.Context, event, cursor string) ([]OrderEvent, string, error) {
	if cursor == "" {
		cursor = "0"
	}
	if _, err := strconv.ParseUint(cursor, 10, 64); err != nil {
		return nil, "", fmt.Errorf("%w: cursor %.40q", ErrInvalidRequest, cursor)
	}
	reply, err := e.run(ctx, ordersCmd, event, cursor, OrdersPage)
	if err != nil {
		return nil, "", err
	}
	if str(reply[0]) != "ok" || len(reply) < 2 {
		return nil, "", refusal(ordersCmd, reply, "noevent")
	}
	out := make([]OrderEvent, 0, len(reply)-2)
	for _, r := range reply[2:] {
		o, err := parseOrder(event, str(r))
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s: %w", ErrUnavailable, ordersCmd.Name, err)
		}
		out = append(out, o)
	}
	return out, str(reply[1]), nil
}
