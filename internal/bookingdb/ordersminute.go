package bookingdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// OrdersByMinute counts the orders of a room's events (RoomEventsKey: the
// events Define named the room for) by the minute they were confirmed, and
// by the minute those since cancelled were cancelled, oldest first; none
// for a room without events. It reads every order (Orders, a page at a
// time), so it costs a read of the room's orders on each call and nothing
// on confirm or cancel; after a total loss it counts what Rebuild restored,
// with their times. An event of the set since deleted is skipped.
func (e *Engine) OrdersByMinute(ctx context.Context, roomID string) ([]room.OrderMinute, error) {
	if !room.ValidRoomID(roomID) {
		return nil, room.ErrInvalidRoom
	}
	evs, err := e.rdb.SMembers(ctx, RoomEventsKey(roomID)).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: the room's events: %w", booking.ErrUnavailable, err)
	}
	by := map[int64]*room.OrderMinute{}
	at := func(t time.Time) *room.OrderMinute {
		m := t.UTC().Truncate(time.Minute)
		o := by[m.Unix()]
		if o == nil {
			o = &room.OrderMinute{Minute: m}
			by[m.Unix()] = o
		}
		return o
	}
	for _, ev := range evs {
		seen := map[string]bool{} // a scan may return an order twice
		cursor := "0"
		for {
			page, next, err := e.Orders(ctx, ev, cursor)
			if errors.Is(err, booking.ErrUnknownEvent) {
				break
			}
			if err != nil {
				return nil, err
			}
			for _, o := range page {
				if seen[o.Order] {
					continue
				}
				seen[o.Order] = true
				at(o.ConfirmedAt).Confirmed++
				if o.CancelledAt != nil {
					at(*o.CancelledAt).Cancelled++
				}
			}
			if cursor = next; cursor == "0" {
				break
			}
		}
	}
	out := make([]room.OrderMinute, 0, len(by))
	for _, o := range by {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b room.OrderMinute) int { return a.Minute.Compare(b.Minute) })
	return out, nil
}
