package bookingdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

var inventoryKinds = map[string]string{
	"held": booking.InventoryHeld, "extended": booking.InventoryExtended, "released": booking.InventoryReleased, "expired": booking.InventoryExpired,
	"ended": booking.InventoryEnded, "confirmed": booking.InventoryConfirmed, "cancelled": booking.InventoryCancelled,
}

// parseInventory decodes an inventory event's outbox member (booking_lib.lua's
// emit): 'i<seq>|kind|token|session|seats|units|expires|at|epoch'.
func parseInventory(event, id string) (booking.InventoryEvent, error) {
	f := strings.Split(strings.TrimPrefix(id, "i"), "|")
	if len(f) != 9 || inventoryKinds[f[1]] == "" {
		return booking.InventoryEvent{}, fmt.Errorf("inventory event %.80q", id)
	}
	iv := booking.InventoryEvent{Type: inventoryKinds[f[1]], Event: event, Sequence: num(f[0]), Hold: f[2], FencingToken: num(f[2]),
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
func (e *Engine) Orders(ctx context.Context, event, cursor string) ([]booking.OrderEvent, string, error) {
	if cursor == "" {
		cursor = "0"
	}
	if _, err := strconv.ParseUint(cursor, 10, 64); err != nil {
		return nil, "", fmt.Errorf("%w: cursor %.40q", booking.ErrInvalidRequest, cursor)
	}
	reply, err := e.run(ctx, ordersCmd, event, cursor, OrdersPage)
	if err != nil {
		return nil, "", err
	}
	if str(reply[0]) != "ok" || len(reply) < 2 {
		return nil, "", refusal(ordersCmd, reply, "noevent")
	}
	out := make([]booking.OrderEvent, 0, len(reply)-2)
	for _, r := range reply[2:] {
		o, err := parseOrder(event, str(r))
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s: %w", booking.ErrUnavailable, ordersCmd.Name, err)
		}
		out = append(out, o)
	}
	return out, str(reply[1]), nil
}
