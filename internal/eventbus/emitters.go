package eventbus

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// The detail-types of the admission events (source SourceAdmission), named
// here so that the forwarder's rule below and the emitter (package
// roomevents, which names them for its callers) share one spelling;
// docs/API.md, "Events", shows each.
const (
	TypeTick        = "admission.tick"              // a tick of one room that changed something
	TypeConsumed    = "admission.entry.consumed"    // an entry token redeemed: the grant became a session
	TypeCompleted   = "admission.session.completed" // the origin completed a session (or gave up an unused grant)
	TypeRoomChanged = "admission.room.changed"      // an admin change of a room, or a scheduled one
	TypeNet         = "admission.net"               // an auto room's safety net switched on or off
	TypePace        = "admission.pace"              // the pace that follows the origin stepped
)

// Kind is what an event is: its source and detail-type.
type Kind struct{ Source, DetailType string }

// KindOf is an entry's kind.
func KindOf(e Entry) Kind { return Kind{e.Source, e.DetailType} }

// Emitter is a function whose log group carries events, with the kinds of
// event it emits.
type Emitter struct {
	Function string // as the stack names it: a route's function (routes.Enqueue…) or admit
	Kinds    []Kind
}

// Emitters are the functions whose stdout carries events, each with every
// kind it emits and no other, in the order docs/API.md lists them. The stack
// subscribes their log groups (infra/stack EventFunctions) and tells the
// forwarder which group is whose (EnvLogGroups), and the forwarder puts on
// the bus only an event its log group's function emits: a flaw in one
// function (a line it writes that looks like an event) can forge nothing of
// another's kind.
//
//   - admit ticks every room (admission.tick, .net, .pace), applies scheduled
//     changes (admission.room.changed), and runs the booking kit's sweep,
//     which publishes what the outboxes hold (orders and inventory);
//   - enqueue and poll tick a quiet room on its visitors' requests;
//   - consume redeems entries and completes sessions (POST /api/consume,
//     /api/complete and the edge gate's /.vestibule/enter and leave);
//   - booking confirms and cancels orders, and audits an event's admin
//     writes in its room's log;
//   - admin audits every admin write of a room.
//
// status emits none.
func Emitters() []Emitter {
	ticks := []Kind{{SourceAdmission, TypeTick}, {SourceAdmission, TypeNet}, {SourceAdmission, TypePace}}
	changed := Kind{SourceAdmission, TypeRoomChanged}
	orders := []Kind{{SourceBooking, booking.OrderConfirmed}, {SourceBooking, booking.OrderCancelled}}
	var inventory []Kind
	for _, t := range []string{booking.InventoryHeld, booking.InventoryExtended, booking.InventoryReleased,
		booking.InventoryExpired, booking.InventoryEnded, booking.InventoryConfirmed, booking.InventoryCancelled} {
		inventory = append(inventory, Kind{SourceBooking, t})
	}
	return []Emitter{
		{"admit", slices.Concat(ticks, []Kind{changed}, orders, inventory)},
		{routes.Enqueue, ticks},
		{routes.Poll, ticks},
		{routes.Consume, []Kind{{SourceAdmission, TypeConsumed}, {SourceAdmission, TypeCompleted}}},
		{routes.Booking, slices.Concat(orders, []Kind{changed})},
		{routes.Admin, []Kind{changed}},
	}
}

// emits reports whether function emits events of kind k.
func emits(function string, k Kind) bool {
	for _, e := range Emitters() {
		if e.Function == function {
			return slices.Contains(e.Kinds, k)
		}
	}
	return false
}

// ParseLogGroups reads EnvLogGroups: comma-separated function=log-group
// pairs, one for each of Emitters' functions at most. It returns the
// function of each log group.
func ParseLogGroups(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		fn, group, ok := strings.Cut(pair, "=")
		if !ok || group == "" || !slices.ContainsFunc(Emitters(), func(e Emitter) bool { return e.Function == fn }) {
			return nil, fmt.Errorf("%s: %q is not function=log-group of a function that emits events", EnvLogGroups, pair)
		}
		if prev, dup := out[group]; dup && prev != fn {
			return nil, fmt.Errorf("%s: log group %s given to %s and %s", EnvLogGroups, group, prev, fn)
		}
		out[group] = fn
	}
	return out, nil
}
