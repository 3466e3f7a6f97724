// Package booking is the booking kit's vocabulary: what happens behind the
// door. An event's inventory of named seats and stock-keeping units (skus),
// the requests that hold them for a session with a TTL, the holds, the order
// events of a confirm (once per idempotency key) and of a cancel (when a
// payment fails after confirm: compensation), the inventory events, and the
// errors callers branch on. It links no Redis: the engine that keeps events
// in Redis is package bookingdb.
//
// Each hold carries a fencing token, a number that only ever grows across the
// whole event: a confirm with the token of a hold that expired (and whose seat
// may since be someone else's) is refused, and a store downstream (the
// origin's database) can refuse any write carrying a token lower than the last
// it saw for that seat. See docs/BOOKING.md.
package booking

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The errors the engine returns; test them with errors.Is.
var (
	ErrInvalidEvent     = errors.New("booking: invalid event id")
	ErrInvalidInventory = errors.New("booking: invalid inventory") // wrapped with the field and reason
	ErrInvalidRequest   = errors.New("booking: invalid request")   // wrapped with the field and reason
	ErrUnknownEvent     = errors.New("booking: unknown event")
	ErrInUse            = errors.New("booking: event has live holds or orders")
	ErrUnknownSeat      = errors.New("booking: unknown seat")
	ErrUnknownSKU       = errors.New("booking: unknown sku")
	ErrSeatTaken        = errors.New("booking: seat taken")       // a *TakenError names the seats
	ErrSoldOut          = errors.New("booking: not enough stock") // a *SoldOutError names the sku
	ErrLimit            = errors.New("booking: session limit reached")
	ErrStaleToken       = errors.New("booking: stale fencing token")
	ErrHoldExpired      = errors.New("booking: hold expired")
	ErrWrongSession     = errors.New("booking: hold belongs to another session")
	ErrAlreadyConfirmed = errors.New("booking: hold already confirmed")
	ErrIdempotencyKey   = errors.New("booking: idempotency key already used for another hold")
	ErrOrderCancelled   = errors.New("booking: order was cancelled")
	ErrUnknownOrder     = errors.New("booking: unknown order")
	ErrExtensionLimit   = errors.New("booking: hold cannot be extended further") // the event's maxHoldExtensions or maxHoldSeconds
	ErrWrongRoom        = errors.New("booking: session of another room")         // the event belongs to another room
	ErrSessionEnded     = errors.New("booking: session ended")                   // not (or no longer) in the room's active set
	ErrUnavailable      = errors.New("booking: redis unavailable")               // wraps the Redis error and names the script; maps to 503
	// ErrRecovering: the event came back from a total loss of Redis, or was
	// closed by Close (a region failover), closed to holds until what it sold
	// is rebuilt from the origin's record (Rebuild; docs/BOOKING.md, "After a
	// total loss", "After a region failover").
	ErrRecovering = errors.New("booking: event closed to holds until its sold state is rebuilt")
	// ErrNotRecovering: Rebuild of an event that is open (neither restored after
	// a loss nor closed by Close).
	ErrNotRecovering = errors.New("booking: event is open; only an event closed after a loss or by Close is rebuilt")
	// ErrNotRestorable: the event is missing in Redis and its stored
	// definition cannot be read (not JSON, a field twice or unknown, a value
	// out of range): an operator must define it again.
	ErrNotRestorable = errors.New("booking: stored definition unreadable; define the event again")
)

// TakenError is ErrSeatTaken with the seats of the request that someone else
// holds or bought.
type TakenError struct{ Seats []string }

// Error names the taken seats.
func (e *TakenError) Error() string {
	return "booking: seats taken: " + strings.Join(e.Seats, ", ")
}

// Unwrap makes errors.Is(err, ErrSeatTaken) true.
func (e *TakenError) Unwrap() error { return ErrSeatTaken }

// SoldOutError is ErrSoldOut with the sku that is short and what is left of it.
type SoldOutError struct {
	SKU       string
	Available int64
}

// Error names the sku and what is left of it.
func (e *SoldOutError) Error() string {
	return fmt.Sprintf("booking: not enough %s: %d left", e.SKU, e.Available)
}

// Unwrap makes errors.Is(err, ErrSoldOut) true.
func (e *SoldOutError) Unwrap() error { return ErrSoldOut }

// Limits of what the engine accepts.
const (
	MaxSeats        = 100_000       // seats in one event
	MaxSKUs         = 1_000         // skus in one event
	MaxUnits        = 1_000_000_000 // units of one sku
	MaxHoldItems    = 1_000         // the highest per-session limit
	MaxRequestSeats = 100           // seats in one hold
	MinHoldTTL      = time.Second
	MaxHoldTTL      = time.Hour
	DefaultHoldTTL  = 5 * time.Minute
	MaxExtensions   = 100           // the most extensions of one hold an event may allow
	MaxHoldLife     = 2 * time.Hour // the longest an event may let a hold last, extensions included
	// MaxRebuildOrders is the most orders one Rebuild takes: the script checks
	// and writes them all at once, so a venue's worth goes in several calls.
	MaxRebuildOrders = 5000
)

// The order ids a rebuild takes (SoldOrder.Validate; docs/BOOKING.md, "After
// a total loss"). An order id is the fencing token of the hold it confirmed:
// max(fence + 1, now in µs) when the hold was made (booking_hold.lua), so a
// microsecond count since the epoch, a little ahead of the engine's clock at
// most. Its scripts count in Lua numbers (doubles), exact for whole numbers
// below 2^53 only: a fence of 2^53 or more plus one is itself, and every
// later hold would get the same token.
const (
	// MinOrderID is 2020-01-01T00:00:00Z in µs: no token the kit issued is
	// smaller (the clock of a hold is past it), so a smaller id is another
	// system's order number, not the kit's.
	MinOrderID = 1_577_836_800_000_000
	// MaxOrderID is the largest id a double holds exactly with room to count
	// past it: 2^53 − 1.
	MaxOrderID = 1<<53 - 1
	// OrderIDAhead is how far past the clock an id may lie (clocks differ,
	// and a burst of holds counts the fence past the microsecond by one a
	// hold): an id further ahead would move the fence, and every later token,
	// past anything the clock issues for that long.
	OrderIDAhead = 24 * time.Hour
)

var (
	eventID   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	itemID    = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	sessionRe = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,128}$`)
)

// ValidEventID reports whether s is an event id: 1 to 64 of [A-Za-z0-9_-],
// the same alphabet as a room id (an event may be named after its room).
func ValidEventID(s string) bool { return eventID.MatchString(s) }

// ValidItemID reports whether s names a seat or a sku: 1 to 64 of [A-Za-z0-9_.-].
func ValidItemID(s string) bool { return itemID.MatchString(s) }

// ValidSession reports whether s is a session id or an idempotency key: 1 to
// 128 of [A-Za-z0-9_.:@-] (a room's entry session is 'room:seq').
func ValidSession(s string) bool { return sessionRe.MatchString(s) }

// Inventory is what an event sells: named seats and/or skus with a quantity.
type Inventory struct {
	// Room is the room whose entry sessions may hold (HoldSession) and whose
	// origin credential confirms, releases and cancels; "" means the event's
	// own id. An event named after its room lives in the room's cluster slot,
	// so the hold checks the session in the same script.
	Room  string           `json:"room,omitempty"`
	Seats []string         `json:"seats,omitempty"`
	Stock map[string]int64 `json:"stock,omitempty"`
	// HoldTTL is how long a hold lasts (default DefaultHoldTTL).
	HoldTTL time.Duration `json:"-"`
	// SessionLimit is the most items (seats + units) one session may hold or
	// have bought at once; released, expired and cancelled items do not count.
	SessionLimit int64 `json:"sessionLimit"`
	// MaxHoldExtensions is how many times one hold may be extended (Extend),
	// 0 (none) to MaxExtensions.
	MaxHoldExtensions int64 `json:"maxHoldExtensions,omitempty"`
	// MaxHold is the longest a hold may last from its creation, extensions
	// included: 0 means the hold TTL times 1 + MaxHoldExtensions (at most
	// MaxHoldLife); otherwise from the hold TTL to MaxHoldLife, whole seconds.
	MaxHold time.Duration `json:"-"`
}

// HoldBounds are the inventory's hold TTL and longest hold life with the defaults filled in.
func (inv Inventory) HoldBounds() (ttl, life time.Duration) {
	ttl = inv.HoldTTL
	if ttl == 0 {
		ttl = DefaultHoldTTL
	}
	life = inv.MaxHold
	if life == 0 {
		life = min(ttl*time.Duration(1+inv.MaxHoldExtensions), max(MaxHoldLife, ttl))
	}
	return ttl, life
}

// Validate checks an inventory against the engine's limits.
func (inv Inventory) Validate() error {
	if inv.Room != "" && !ValidEventID(inv.Room) {
		return invalid(ErrInvalidInventory, "room %q: 1 to 64 of [A-Za-z0-9_-]", inv.Room)
	}
	if err := inventoryItems.check(inv.Seats, inv.Stock); err != nil {
		return err
	}
	if inv.HoldTTL != 0 && (inv.HoldTTL < MinHoldTTL || inv.HoldTTL > MaxHoldTTL || inv.HoldTTL%time.Millisecond != 0) {
		return invalid(ErrInvalidInventory, "hold TTL %s, want whole milliseconds from %s to %s", inv.HoldTTL, MinHoldTTL, MaxHoldTTL)
	}
	if inv.SessionLimit < 1 || inv.SessionLimit > MaxHoldItems {
		return invalid(ErrInvalidInventory, "session limit %d, want 1 to %d", inv.SessionLimit, MaxHoldItems)
	}
	if inv.MaxHoldExtensions < 0 || inv.MaxHoldExtensions > MaxExtensions {
		return invalid(ErrInvalidInventory, "maxHoldExtensions %d, want 0 to %d", inv.MaxHoldExtensions, MaxExtensions)
	}
	if ttl, _ := inv.HoldBounds(); inv.MaxHold != 0 && (inv.MaxHold < ttl || inv.MaxHold > MaxHoldLife || inv.MaxHold%time.Second != 0) {
		return invalid(ErrInvalidInventory, "maxHoldSeconds %s, want whole seconds from the hold TTL (%s) to %s", inv.MaxHold, ttl, MaxHoldLife)
	}
	return nil
}

// invalid is err (ErrInvalidInventory or ErrInvalidRequest) with the reason.
func invalid(err error, format string, a ...any) error {
	return fmt.Errorf("%w: %s", err, fmt.Sprintf(format, a...))
}

// itemRules are what an inventory's or a request's seats and skus must be.
type itemRules struct {
	err                error  // what the error wraps
	empty              string // the reason when there are neither seats nor skus
	idHint             string // follows a bad seat or sku name in the reason
	maxSeats           int
	minUnits, maxUnits int64 // units of one sku
}

var (
	inventoryItems = itemRules{err: ErrInvalidInventory, empty: "no seats and no stock", idHint: ": 1 to 64 of [A-Za-z0-9_.-]",
		maxSeats: MaxSeats, minUnits: 0, maxUnits: MaxUnits}
	requestItems = itemRules{err: ErrInvalidRequest, empty: "nothing to hold",
		maxSeats: MaxRequestSeats, minUnits: 1, maxUnits: MaxHoldItems}
	soldItems = itemRules{err: ErrInvalidRequest, empty: "an order with nothing in it", idHint: ": 1 to 64 of [A-Za-z0-9_.-]",
		maxSeats: MaxSeats, minUnits: 1, maxUnits: MaxUnits}
)

// check checks seats and skus against the rules: something named, at most
// maxSeats seats and MaxSKUs skus, every seat a valid name once, every sku a
// valid name with minUnits to maxUnits units.
func (r itemRules) check(seats []string, units map[string]int64) error {
	if len(seats) == 0 && len(units) == 0 {
		return invalid(r.err, "%s", r.empty)
	}
	if len(seats) > r.maxSeats {
		return invalid(r.err, "%d seats, at most %d", len(seats), r.maxSeats)
	}
	if len(units) > MaxSKUs {
		return invalid(r.err, "%d skus, at most %d", len(units), MaxSKUs)
	}
	seen := make(map[string]bool, len(seats))
	for _, s := range seats {
		if !ValidItemID(s) {
			return invalid(r.err, "seat %q%s", s, r.idHint)
		}
		if seen[s] {
			return invalid(r.err, "seat %q twice", s)
		}
		seen[s] = true
	}
	for k, q := range units {
		if !ValidItemID(k) {
			return invalid(r.err, "sku %q%s", k, r.idHint)
		}
		if q < r.minUnits || q > r.maxUnits {
			return invalid(r.err, "sku %q: %d units, want %d to %d", k, q, r.minUnits, r.maxUnits)
		}
	}
	return nil
}

// Request is what a session asks to hold: seats, units of skus, or both. A
// hold is all or nothing.
type Request struct {
	Seats []string         `json:"seats,omitempty"`
	Units map[string]int64 `json:"units,omitempty"`
}

// Validate checks a request's shape; the script checks it against the inventory.
func (r Request) Validate() error { return requestItems.check(r.Seats, r.Units) }

// Extension is a hold after Extend: its new end and how many extensions it had.
type Extension struct {
	Token      int64
	ExpiresAt  time.Time
	Extensions int64
	// Replayed is true when that extension was made already: nothing changed.
	Replayed bool
}

// Hold is a session's claim on seats and units until ExpiresAt.
type Hold struct {
	Event   string
	Session string
	// Token is the hold's fencing token: larger than every token the event
	// issued before it. Confirm and Release name the hold by it.
	Token     int64
	Seats     []string
	Units     map[string]int64
	ExpiresAt time.Time
}

// The types of OrderEvent.
const (
	OrderConfirmed = "booking.order.confirmed"
	OrderCancelled = "booking.order.cancelled"
)

// OrderEvent is what Confirm and Cancel produce: the in-process form of the
// event phase 2 will put on EventBridge (detail-type Type, detail the JSON).
type OrderEvent struct {
	Type  string `json:"type"`  // OrderConfirmed or OrderCancelled
	Event string `json:"event"` // the event id
	// Order is the order id: the fencing token of the hold it confirmed, in decimal.
	Order          string           `json:"order"`
	Session        string           `json:"session"`
	FencingToken   int64            `json:"fencingToken"`
	IdempotencyKey string           `json:"idempotencyKey"`
	Seats          []string         `json:"seats,omitempty"`
	Units          map[string]int64 `json:"units,omitempty"`
	ConfirmedAt    time.Time        `json:"confirmedAt"`
	CancelledAt    *time.Time       `json:"cancelledAt,omitempty"`
	Reason         string           `json:"reason,omitempty"`
	// Replayed is true when the call changed nothing: a confirm retried with
	// its idempotency key, or a second cancel. Publish only when false.
	Replayed bool `json:"-"`
}

// SeatState is where a seat stands.
type SeatState string

// The seat states.
const (
	SeatAvailable SeatState = "available"
	SeatHeld      SeatState = "held"
	SeatSold      SeatState = "sold"
)

// RoomSession is a room's consumed entry session, as the room's active set
// holds it: member Seq, score Ends (whole milliseconds). Its booking session
// id is "room:seq".
type RoomSession struct {
	Room string
	Seq  int64
	Ends time.Time
}

// ID is the session's name in the engine: "room:seq".
func (s RoomSession) ID() string { return s.Room + ":" + strconv.FormatInt(s.Seq, 10) }

// View is what an event has left, and its counters.
type View struct {
	// Room is the room the event belongs to.
	Room  string
	Seats map[string]SeatState
	Stock map[string]int64 // units available per sku
	// Fence is the last fencing token issued.
	Fence int64
	// The definition: hold TTL, per-session limit, extensions of a hold and its longest life.
	HoldTTL, MaxHold                time.Duration
	SessionLimit, MaxHoldExtensions int64
	// Counters: holds, confirmed, cancelled, released, expired, ended (dropped
	// when their room session ended), extended (extensions made; all time),
	// live (confirmed, not cancelled).
	Holds, Confirmed, Cancelled, Released, Expired, Ended, Extended, Live int64
	// Restore says whether and how the event came back from a total loss.
	Restore Restore
}

// Restore is how an event came back from a total loss of Redis (defined
// again from the stored definition) or was closed by Close (a region
// failover): closed to holds (Recovering) until Rebuild put back the origin's
// orders and reopened it. The zero value: never lost, never closed.
type Restore struct {
	Recovering bool      // closed to holds now
	RestoredAt time.Time // when it came back closed; zero: never lost
	ClosedAt   time.Time // when Close last closed it; zero: never
	ReopenedAt time.Time // when Rebuild reopened it; zero: not yet
	Rebuilt    int64     // the origin's orders put back
}

// Closed is what a Close did.
type Closed struct {
	Now         bool  // this call closed the event (false: it was closed already)
	Holds, Live int64 // the holds live at the close (they may still be confirmed); the orders not cancelled
}

// SoldOrder is an order the origin recorded, to sell again after a total
// loss (Rebuild): the order id (the kit's, its fencing token in decimal) and
// its seats and units.
type SoldOrder struct {
	Order string           `json:"order"`
	Seats []string         `json:"seats,omitempty"`
	Units map[string]int64 `json:"units,omitempty"`
}

// Validate checks an order at the time now: an id the kit could have issued
// by then (a decimal in its one spelling, from MinOrderID to now +
// OrderIDAhead, never above MaxOrderID), valid distinct seats, skus with 1
// or more units.
func (o SoldOrder) Validate(now time.Time) error {
	t, err := strconv.ParseInt(o.Order, 10, 64)
	if err != nil || t <= 0 || strconv.FormatInt(t, 10) != o.Order {
		return invalid(ErrInvalidRequest, "order %.40q: the kit's order id, a positive decimal (its fencing token)", o.Order)
	}
	if last := min(MaxOrderID, now.Add(OrderIDAhead).UnixMicro()); t < MinOrderID || t > last {
		return invalid(ErrInvalidRequest, "order %s: not an id the kit issued: its ids are fencing tokens, microseconds "+
			"from %d (2020) to %d (a day past now), exact in a Lua number", o.Order, int64(MinOrderID), last)
	}
	return soldItems.check(o.Seats, o.Units)
}

// Rebuilt is what a Rebuild did.
type Rebuilt struct {
	Added, Kept int64 // orders put back now; orders the event had already
	Recovering  bool  // still closed to holds (the call did not reopen it)
	// Of the live holds of an event closed by Close: those given up (a seat
	// of theirs the origin's record sold to another order) and those that
	// became the order the origin recorded for them (the confirm's write lost).
	Released, Converted int64
}

// CounterFields are the view's counters by the names the event's state and the
// admin API give them, to fill in (the engine reads a view into them).
func (v *View) CounterFields() map[string]*int64 {
	return map[string]*int64{"holds": &v.Holds, "confirmed": &v.Confirmed, "cancelled": &v.Cancelled,
		"released": &v.Released, "expired": &v.Expired, "ended": &v.Ended, "extended": &v.Extended, "live": &v.Live}
}

// Counters returns the counters by name: holds, confirmed, cancelled,
// released, expired, ended, extended and live.
func (v View) Counters() map[string]int64 {
	out := make(map[string]int64, 8)
	for name, p := range v.CounterFields() {
		out[name] = *p
	}
	return out
}

// Pending is an event waiting in the outbox: an order event (Event), or an
// inventory event (Inventory set). ID is what Ack takes.
type Pending struct {
	ID        string
	Event     OrderEvent
	Inventory *InventoryEvent
}

// OutboxID is the outbox id of an order event Confirm or Cancel returned.
func OutboxID(o OrderEvent) string {
	if o.Type == OrderCancelled {
		return "x" + o.Order
	}
	return "c" + o.Order
}
