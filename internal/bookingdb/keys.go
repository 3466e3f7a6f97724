package bookingdb

// RegistryKey lists every event id ever defined (SET), for the sweep. Like the
// room registry it is the only key outside an event's slot, and no script touches it.
const RegistryKey = "vst:events"

// EventKeys names an event's keys. All share the hash tag {event}, so an event
// lives in one cluster slot; the 'bk:' infix keeps them apart from the keys of
// a room of the same name (which then shares the slot).
type EventKeys struct {
	Inventory string // HASH ttl, limit, fence, defined, counters
	Seats     string // HASH seat -> 'a' | 'h<token>' | 'o<token>'
	Stock     string // HASH sku -> units available
	Holds     string // HASH token -> 'session|expires|seats|units'
	Expiry    string // ZSET token, score expiry (ms)
	Sessions  string // HASH session -> items held or bought
	Orders    string // HASH token -> 'state|session|token|at|idem|seats|units|cancelledAt|reason'
	Idem      string // HASH idempotency key -> token
	Outbox    string // ZSET order events to publish: 'c<token>' | 'x<token>', score when (ms)
	// RoomHolds lists the live holds of each room session: 'room:seq' ->
	// 't1,t2', so the session's end drops them at once.
	RoomHolds string // HASH
}

// RoomEventsKey lists the events of a room (SET, in the room's slot): whose
// holds a session of the room releases when it ends (Define adds the event).
func RoomEventsKey(room string) string { return "vst:{" + room + "}:bkevents" }

// KeysFor returns the keys of an event.
func KeysFor(event string) EventKeys {
	p := "vst:{" + event + "}:bk:"
	return EventKeys{
		Inventory: p + "inv", Seats: p + "seat", Stock: p + "stock", Holds: p + "hold",
		Expiry: p + "exp", Sessions: p + "sess", Orders: p + "order", Idem: p + "idem", Outbox: p + "out",
		RoomHolds: p + "sh",
	}
}

// List is the KEYS every booking script takes, in booking_lib.lua's order.
func (k EventKeys) List() []string {
	return []string{k.Inventory, k.Seats, k.Stock, k.Holds, k.Expiry, k.Sessions, k.Orders, k.Idem, k.Outbox, k.RoomHolds}
}
