// Package bookingdb is the booking kit's engine over Redis: an event's
// inventory (the types of package booking) held, confirmed, released and
// cancelled. Of the deployed code, it and the room engine (internal/roomdb)
// are what talks to Redis (internal/app only builds the client).
//
// Every state change is one Lua script from lua/ (booking_*.lua), and every
// key of an event shares the event's hash tag, so an event lives in one Redis
// Cluster slot and each operation is atomic. Time never comes from Redis: the
// Engine's clock passes it to the scripts, and tests replace it.
package bookingdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/text"
	"github.com/vestibule-dev/vestibule/lua"
)

// script is one booking script with the name errors give it.
type script = lua.Script

// Each script runs by SHA (EVALSHA) and falls back to EVAL when Redis lost it.
var (
	defineCmd  = lua.NewScript("booking_define.lua", lua.BookingDefine)
	holdCmd    = lua.NewScript("booking_hold.lua", lua.BookingHold)
	confirmCmd = lua.NewScript("booking_confirm.lua", lua.BookingConfirm)
	releaseCmd = lua.NewScript("booking_release.lua", lua.BookingRelease)
	cancelCmd  = lua.NewScript("booking_cancel.lua", lua.BookingCancel)
	sweepCmd   = lua.NewScript("booking_sweep.lua", lua.BookingSweep)
	viewCmd    = lua.NewScript("booking_view.lua", lua.BookingView)
	roomCmd    = lua.NewScript("booking_room.lua", lua.BookingRoom)
	outboxCmd  = lua.NewScript("booking_outbox.lua", lua.BookingOutbox)
	ackCmd     = lua.NewScript("booking_ack.lua", lua.BookingAck)
	activeCmd  = lua.NewScript("booking_active.lua", lua.BookingActive)
	endCmd     = lua.NewScript("booking_end.lua", lua.BookingEnd)
	extendCmd  = lua.NewScript("booking_extend.lua", lua.BookingExtend)
	ordersCmd  = lua.NewScript("booking_orders.lua", lua.BookingOrders)
	sessCmd    = lua.NewScript("booking_sessions.lua", lua.BookingSessions)
	endedCmd   = lua.NewScript("booking_ended.lua", lua.BookingEnded)
	rebuildCmd = lua.NewScript("booking_rebuild.lua", lua.BookingRebuild)
	closeCmd   = lua.NewScript("booking_close.lua", lua.BookingClose)
)

// Scripter is the narrowest Redis client the engine needs: a client, a
// cluster client or a ring all fit.
type Scripter interface {
	redis.Scripter
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
}

var _ Scripter = (redis.UniversalClient)(nil)

// viewSweep is the most overdue holds a View expires before it reads.
const viewSweep = 1000

// Engine is the booking state machine over Redis.
type Engine struct {
	rdb   Scripter
	clock func() time.Time
	defs  *restorer // nil: definitions live only in Redis
	log   *slog.Logger
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock replaces the clock (tests drive time with it).
func WithClock(c func() time.Time) Option { return func(e *Engine) { e.clock = c } }

// WithLogger is where the engine says how an event came back from a total
// loss (closed to holds, reopened); nil, or without it, nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(e *Engine) {
		if l != nil {
			e.log = l
		}
	}
}

// New returns an engine over the given Redis client (a client, a cluster
// client or a ring).
func New(rdb Scripter, opts ...Option) *Engine {
	e := &Engine{rdb: rdb, clock: time.Now, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(e)
	}
	return e
}

func (e *Engine) nowMS() int64 { return e.clock().UnixMilli() }

// run runs a booking script on an event and returns its reply as a slice.
func (e *Engine) run(ctx context.Context, s script, event string, args ...any) ([]any, error) {
	if !booking.ValidEventID(event) {
		return nil, booking.ErrInvalidEvent
	}
	return e.runKeys(ctx, s, event, KeysFor(event).List(), args...)
}

// runKeys runs a script with the given KEYS on event and returns its reply
// as a slice. With definitions (WithDefinitions), a script of restores that
// finds the event missing has it defined again from the store, then runs once more.
func (e *Engine) runKeys(ctx context.Context, s script, event string, keys []string, args ...any) ([]any, error) {
	reply, err := s.Reply(ctx, e.rdb, keys, args...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", booking.ErrUnavailable, err)
	}
	if e.defs == nil || !restores[s.Name] || len(reply) == 0 || str(reply[0]) != "noevent" {
		return reply, nil
	}
	if ok, err := e.restore(ctx, event); err != nil || !ok {
		return reply, err
	}
	if reply, err = s.Reply(ctx, e.rdb, keys, args...); err != nil {
		return nil, fmt.Errorf("%w: %w", booking.ErrUnavailable, err)
	}
	return reply, nil
}

// str and num read reply values (lua.Str, lua.Num).
var str, num = lua.Str, lua.Num

// unexpected is the error for a reply no contract allows.
func unexpected(s script, reply []any) error {
	return fmt.Errorf("%w: %s replied %v", booking.ErrUnavailable, s.Name, reply)
}

// refusals are the errors of the booking scripts' refusal words: one
// vocabulary, in which a word means the same in every script.
var refusals = map[string]error{
	"noevent":    booking.ErrUnknownEvent,     // every script but define: no such event
	"room":       booking.ErrWrongRoom,        // hold: the event belongs to another room
	"ended":      booking.ErrSessionEnded,     // hold: the room's entry session is not active
	"session":    booking.ErrWrongSession,     // confirm, release: the hold is another session's
	"confirmed":  booking.ErrAlreadyConfirmed, // confirm, release: the hold is an order already
	"conflict":   booking.ErrIdempotencyKey,   // confirm: the key confirmed another hold
	"expired":    booking.ErrHoldExpired,      // confirm: the hold's time passed; its items returned
	"stale":      booking.ErrStaleToken,       // confirm: no live hold with this token
	"unknown":    booking.ErrUnknownOrder,     // cancel: no such order
	"extlimit":   booking.ErrExtensionLimit,   // extend: past the event's bounds
	"recovering": booking.ErrRecovering,       // hold: the event came back from a loss closed to holds
	"open":       booking.ErrNotRecovering,    // rebuild: the event is open
}

// RestoredClosedMsg is the log line of an event that came back from a total
// loss closed to holds (docs/OPERATING.md, "After a total loss").
const RestoredClosedMsg = "event restored closed to holds: its sold state awaits the origin's record"

// refusal is the error of s's reply when its word is one of words (the
// refusals s's contract gives), and unexpected otherwise.
func refusal(s script, reply []any, words ...string) error {
	if w := str(reply[0]); slices.Contains(words, w) {
		return refusals[w]
	}
	return unexpected(s, reply)
}

// orderReply reads the order an "ok" or "replay" reply carries; ok is false
// for any other reply, which the caller maps.
func orderReply(s script, event string, reply []any) (o booking.OrderEvent, ok bool, err error) {
	w := str(reply[0])
	if (w != "ok" && w != "replay") || len(reply) < 2 {
		return booking.OrderEvent{}, false, nil
	}
	o, err = parseOrder(event, str(reply[1]))
	if err != nil {
		return booking.OrderEvent{}, true, fmt.Errorf("%w: %s: %w", booking.ErrUnavailable, s.Name, err)
	}
	o.Replayed = w == "replay"
	return o, true, nil
}

// unitsArgs appends sku, units pairs in sku order (deterministic ARGV).
func unitsArgs(args []any, units map[string]int64) []any {
	for _, k := range slices.Sorted(maps.Keys(units)) {
		args = append(args, k, strconv.FormatInt(units[k], 10))
	}
	return args
}

// Define creates or replaces an event's inventory. An event with live holds
// or confirmed, uncancelled orders is never replaced (ErrInUse). The fencing
// token counter survives a replacement. With definitions (WithDefinitions)
// the definition is stored too, after Redis took it; a failure to store it
// is ErrUnavailable (the event is defined in Redis: define it again). An
// event the store has already but Redis lacks was lost with Redis: it is
// created closed to holds (ErrRecovering) until Rebuild, and a definition
// never reopens an event closed so.
func (e *Engine) Define(ctx context.Context, event string, inv booking.Inventory) error {
	how := defineNew
	if e.defs != nil && booking.ValidEventID(event) {
		// A definition the store has already: an event missing in Redis now
		// was lost with it, and what it sold is not known here.
		_, err := e.defs.d.Definition(ctx, event)
		switch {
		case err == nil, errors.Is(err, booking.ErrNotRestorable):
			how = defineKnown
		case !errors.Is(err, booking.ErrUnknownEvent):
			return fmt.Errorf("%w: the stored definition: %w", booking.ErrUnavailable, err)
		}
	}
	if err := e.define(ctx, event, inv, how); err != nil {
		return err
	}
	if e.defs != nil {
		if err := e.defs.d.PutDefinition(ctx, event, inv); err != nil {
			return fmt.Errorf("%w: the definition was not stored: %w", booking.ErrUnavailable, err)
		}
		e.defs.forget(event)
	}
	return nil
}

// How define defines: booking_define.lua's ARGV[7].
const (
	defineNew     = ""  // as asked
	defineRestore = "1" // only a missing event (ErrInUse when it exists), closed to holds
	defineKnown   = "2" // an event the store has: closed to holds if missing
)

// define runs booking_define.lua.
func (e *Engine) define(ctx context.Context, event string, inv booking.Inventory, how string) error {
	if !booking.ValidEventID(event) {
		return booking.ErrInvalidEvent
	}
	if err := inv.Validate(); err != nil {
		return err
	}
	ttl, life := inv.HoldBounds()
	roomID := inv.Room
	if roomID == "" {
		roomID = event
	}
	args := make([]any, 0, 5+len(inv.Seats)+2*len(inv.Stock))
	args = append(args, e.nowMS(), ttl.Milliseconds(), inv.SessionLimit, roomID, inv.MaxHoldExtensions, life.Milliseconds(),
		how, len(inv.Seats))
	for _, s := range inv.Seats {
		args = append(args, s)
	}
	args = unitsArgs(args, inv.Stock)
	reply, err := e.run(ctx, defineCmd, event, args...)
	if err != nil {
		return err
	}
	switch str(reply[0]) {
	case "ok":
		if err := e.rdb.SAdd(ctx, RegistryKey, event).Err(); err != nil {
			return fmt.Errorf("%w: registry: %w", booking.ErrUnavailable, err)
		}
		if err := e.rdb.SAdd(ctx, RoomEventsKey(roomID), event).Err(); err != nil {
			return fmt.Errorf("%w: the room's events: %w", booking.ErrUnavailable, err)
		}
		if len(reply) >= 3 && str(reply[2]) == "now" {
			e.log.LogAttrs(ctx, slog.LevelWarn, RestoredClosedMsg, slog.String("event", event),
				slog.String("restore", "closed to holds until its sold state is rebuilt from the origin's record (booking reconcile --apply)"))
		}
		return nil
	case "exists":
		return booking.ErrInUse
	case "inuse":
		if len(reply) >= 3 {
			return fmt.Errorf("%w: %d holds, %d orders", booking.ErrInUse, num(reply[1]), num(reply[2]))
		}
		return booking.ErrInUse
	}
	return unexpected(defineCmd, reply)
}

// Hold holds seats and units for a session, all or nothing, for the event's
// hold TTL. The session is the caller's (the room's entry session, 'room:seq').
// Errors: ErrUnknownEvent, ErrUnknownSeat, ErrUnknownSKU, ErrLimit, a
// *TakenError (ErrSeatTaken), a *SoldOutError (ErrSoldOut), ErrInvalidRequest.
func (e *Engine) Hold(ctx context.Context, event, session string, req booking.Request) (booking.Hold, error) {
	return e.hold(ctx, event, session, nil, req)
}

// HoldSession is Hold for a room's consumed entry session (session id
// s.ID()): the event must belong to s.Room (ErrWrongRoom) and the session must
// still be in the room's active set with the end s.Ends (ErrSessionEnded:
// completed, reclaimed by a tick, or past its end). When the event is named
// after its room, its keys and the room's share a cluster slot and the hold
// script checks the session itself, atomically with the hold; otherwise one
// read of the room's active set comes first (a session that ends between the
// two was active when the visitor asked, and the hold lasts its TTL either way).
func (e *Engine) HoldSession(ctx context.Context, event string, s booking.RoomSession, req booking.Request) (booking.Hold, error) {
	if !booking.ValidEventID(s.Room) || s.Seq < 1 {
		return booking.Hold{}, booking.ErrSessionEnded
	}
	if s.Room != event {
		k := roomdb.KeysFor(s.Room).Active
		v, err := activeCmd.Run(ctx, e.rdb, []string{k}, e.nowMS(), strconv.FormatInt(s.Seq, 10), s.Ends.UnixMilli()).Result()
		if err != nil {
			return booking.Hold{}, fmt.Errorf("%w: %s: %w", booking.ErrUnavailable, activeCmd.Name, err)
		}
		if r, _ := v.([]any); len(r) == 0 || str(r[0]) != "ok" {
			return booking.Hold{}, booking.ErrSessionEnded
		}
	}
	return e.hold(ctx, event, s.ID(), &s, req)
}

// hold runs booking_hold.lua; with s, the event must be s.Room's, and when
// the event is named after the room the script checks the session too.
func (e *Engine) hold(ctx context.Context, event, session string, s *booking.RoomSession, req booking.Request) (booking.Hold, error) {
	if !booking.ValidEventID(event) {
		return booking.Hold{}, booking.ErrInvalidEvent
	}
	if !booking.ValidSession(session) {
		return booking.Hold{}, fmt.Errorf("%w: session %q", booking.ErrInvalidRequest, session)
	}
	if err := req.Validate(); err != nil {
		return booking.Hold{}, err
	}
	args := make([]any, 0, 6+len(req.Seats)+2*len(req.Units))
	args = append(args, e.nowMS(), session, len(req.Seats))
	keys := KeysFor(event).List()
	if s != nil {
		args = append(args, s.Room, strconv.FormatInt(s.Seq, 10), s.Ends.UnixMilli())
		if s.Room == event {
			keys = append(keys, roomdb.KeysFor(s.Room).Active)
		}
	} else {
		args = append(args, "", "", "")
	}
	for _, seat := range req.Seats {
		args = append(args, seat)
	}
	args = unitsArgs(args, req.Units)
	reply, err := e.runKeys(ctx, holdCmd, event, keys, args...)
	if err != nil {
		return booking.Hold{}, err
	}
	switch str(reply[0]) {
	case "ok":
		if len(reply) < 3 {
			break
		}
		return booking.Hold{Event: event, Session: session, Token: num(reply[1]),
			Seats: slices.Clone(req.Seats), Units: maps.Clone(req.Units),
			ExpiresAt: time.UnixMilli(num(reply[2]))}, nil
	case "unknownseat":
		return booking.Hold{}, fmt.Errorf("%w: %s", booking.ErrUnknownSeat, str(reply[len(reply)-1]))
	case "unknownsku":
		return booking.Hold{}, fmt.Errorf("%w: %s", booking.ErrUnknownSKU, str(reply[len(reply)-1]))
	case "limit":
		if len(reply) >= 3 {
			return booking.Hold{}, fmt.Errorf("%w: the session has %d items of %d", booking.ErrLimit, num(reply[1]), num(reply[2]))
		}
		return booking.Hold{}, booking.ErrLimit
	case "taken":
		te := &booking.TakenError{}
		for _, s := range reply[1:] {
			te.Seats = append(te.Seats, str(s))
		}
		return booking.Hold{}, te
	case "soldout":
		if len(reply) >= 3 {
			return booking.Hold{}, &booking.SoldOutError{SKU: str(reply[1]), Available: num(reply[2])}
		}
	}
	return booking.Hold{}, refusal(holdCmd, reply, "noevent", "recovering", "room", "ended")
}

// Confirm turns the session's hold into an order, once per idempotency key:
// a retry with the same key returns the same order (Replayed set), a key
// reused for another hold is refused (ErrIdempotencyKey). A hold that expired
// is refused: ErrHoldExpired when the confirm finds it overdue, ErrStaleToken
// when it is gone (released, expired earlier, its seats perhaps held by
// someone else since, or a token never issued). Other errors: ErrWrongSession
// (the hold, or the order a retried key names, is another session's),
// ErrAlreadyConfirmed (the hold is an order under another key),
// ErrOrderCancelled (a retry of a confirm whose order was since cancelled),
// ErrUnknownEvent, ErrInvalidRequest.
func (e *Engine) Confirm(ctx context.Context, event, session string, token int64, idempotencyKey string) (booking.OrderEvent, error) {
	if !booking.ValidEventID(event) {
		return booking.OrderEvent{}, booking.ErrInvalidEvent
	}
	if !booking.ValidSession(session) {
		return booking.OrderEvent{}, fmt.Errorf("%w: session %q", booking.ErrInvalidRequest, session)
	}
	if !booking.ValidSession(idempotencyKey) {
		return booking.OrderEvent{}, fmt.Errorf("%w: idempotency key %q", booking.ErrInvalidRequest, idempotencyKey)
	}
	if token <= 0 {
		return booking.OrderEvent{}, booking.ErrStaleToken
	}
	keys, seq, err := e.sessionKeys(ctx, event, session)
	if err != nil {
		return booking.OrderEvent{}, err
	}
	reply, err := e.runKeys(ctx, confirmCmd, event, keys, e.nowMS(), session, strconv.FormatInt(token, 10), idempotencyKey, seq)
	if err != nil {
		return booking.OrderEvent{}, err
	}
	if o, ok, err := orderReply(confirmCmd, event, reply); ok {
		if err != nil {
			return o, err
		}
		if o.Type == booking.OrderCancelled {
			return o, fmt.Errorf("%w: order %s", booking.ErrOrderCancelled, o.Order)
		}
		return o, nil
	}
	return booking.OrderEvent{}, refusal(confirmCmd, reply, "noevent", "conflict", "confirmed", "session", "expired", "stale")
}

// Release gives the session's hold up before its TTL: its seats and units
// return at once. Releasing a hold that is already gone (released, expired)
// is not an error. Errors: ErrWrongSession, ErrAlreadyConfirmed (cancel the
// order instead), ErrUnknownEvent, ErrInvalidRequest.
func (e *Engine) Release(ctx context.Context, event, session string, token int64) error {
	if !booking.ValidEventID(event) {
		return booking.ErrInvalidEvent
	}
	if !booking.ValidSession(session) {
		return fmt.Errorf("%w: session %q", booking.ErrInvalidRequest, session)
	}
	if token <= 0 {
		return nil
	}
	reply, err := e.run(ctx, releaseCmd, event, e.nowMS(), session, strconv.FormatInt(token, 10))
	if err != nil {
		return err
	}
	if w := str(reply[0]); w == "ok" || w == "gone" {
		return nil
	}
	return refusal(releaseCmd, reply, "confirmed", "session", "noevent")
}

// Cancel is the compensation path: a confirmed order (payment failed after
// confirm, a refund) is cancelled and its seats and units return. A second
// cancel changes nothing and returns the cancelled order with Replayed set.
// Errors: ErrUnknownOrder, ErrUnknownEvent, ErrInvalidRequest.
func (e *Engine) Cancel(ctx context.Context, event, order, reason string) (booking.OrderEvent, error) {
	if !booking.ValidEventID(event) {
		return booking.OrderEvent{}, booking.ErrInvalidEvent
	}
	if t, err := strconv.ParseInt(order, 10, 64); err != nil || t <= 0 || strconv.FormatInt(t, 10) != order {
		return booking.OrderEvent{}, booking.ErrUnknownOrder
	}
	if len(reason) > 200 || !text.Clean(reason, false) {
		return booking.OrderEvent{}, fmt.Errorf("%w: reason: at most 200 bytes, no control characters", booking.ErrInvalidRequest)
	}
	reply, err := e.run(ctx, cancelCmd, event, e.nowMS(), order, reason)
	if err != nil {
		return booking.OrderEvent{}, err
	}
	if o, ok, err := orderReply(cancelCmd, event, reply); ok {
		return o, err
	}
	return booking.OrderEvent{}, refusal(cancelCmd, reply, "unknown", "noevent")
}

// Sweep expires at most max overdue holds (the scripts also expire them
// lazily) and returns how many it expired and how many are still overdue.
func (e *Engine) Sweep(ctx context.Context, event string, max int) (expired, overdue int64, err error) {
	if max < 1 {
		max = 1
	}
	reply, err := e.run(ctx, sweepCmd, event, e.nowMS(), max)
	if err != nil {
		return 0, 0, err
	}
	if str(reply[0]) == "ok" && len(reply) >= 3 {
		return num(reply[1]), num(reply[2]), nil
	}
	return 0, 0, refusal(sweepCmd, reply, "noevent")
}

// View returns what the event has left (after expiring overdue holds) and its counters.
func (e *Engine) View(ctx context.Context, event string) (booking.View, error) {
	reply, err := e.run(ctx, viewCmd, event, e.nowMS(), viewSweep)
	if err != nil {
		return booking.View{}, err
	}
	if str(reply[0]) != "ok" || len(reply) < 4 {
		return booking.View{}, refusal(viewCmd, reply, "noevent")
	}
	pairs := func(v any) []any { p, _ := v.([]any); return p }
	seats, stock, inv := pairs(reply[1]), pairs(reply[2]), pairs(reply[3])
	v := booking.View{Seats: make(map[string]booking.SeatState, len(seats)/2), Stock: make(map[string]int64, len(stock)/2)}
	for i := 0; i+1 < len(seats); i += 2 {
		st := booking.SeatAvailable
		switch str(seats[i+1]) {
		case "h":
			st = booking.SeatHeld
		case "o":
			st = booking.SeatSold
		}
		v.Seats[str(seats[i])] = st
	}
	for i := 0; i+1 < len(stock); i += 2 {
		v.Stock[str(stock[i])] = num(stock[i+1])
	}
	fields := v.CounterFields()
	fields["fence"] = &v.Fence
	fields["limit"] = &v.SessionLimit
	fields["maxext"] = &v.MaxHoldExtensions
	var ttl, life, recover, restored, closed, reopened int64
	fields["ttl"], fields["maxhold"] = &ttl, &life
	fields["recover"], fields["restored"], fields["reopened"], fields["rebuilt"] = &recover, &restored, &reopened, &v.Restore.Rebuilt
	fields["closed"] = &closed
	for i := 0; i+1 < len(inv); i += 2 {
		if name := str(inv[i]); name == "room" {
			v.Room = str(inv[i+1])
		} else if p := fields[name]; p != nil {
			*p = num(inv[i+1])
		}
	}
	v.Restore.Recovering = recover == 1
	if restored > 0 {
		v.Restore.RestoredAt = time.UnixMilli(restored).UTC()
	}
	if closed > 0 {
		v.Restore.ClosedAt = time.UnixMilli(closed).UTC()
	}
	if reopened > 0 {
		v.Restore.ReopenedAt = time.UnixMilli(reopened).UTC()
	}
	if life == 0 {
		life = ttl // defined before holds could be extended
	}
	v.HoldTTL, v.MaxHold = time.Duration(ttl)*time.Millisecond, time.Duration(life)*time.Millisecond
	return v, nil
}

// parseOrder decodes an order record (booking_lib.lua):
// 'state|session|token|at|idem|seats|units|cancelledAt|reason'.
func parseOrder(event, rec string) (booking.OrderEvent, error) {
	f := strings.SplitN(rec, "|", 9)
	if len(f) != 9 {
		return booking.OrderEvent{}, fmt.Errorf("order record with %d fields", len(f))
	}
	o := booking.OrderEvent{Type: booking.OrderConfirmed, Event: event, Session: f[1], Order: f[2],
		FencingToken: num(f[2]), ConfirmedAt: time.UnixMilli(num(f[3])).UTC(), IdempotencyKey: f[4]}
	if f[0] == "x" {
		o.Type = booking.OrderCancelled
		at := time.UnixMilli(num(f[7])).UTC()
		o.CancelledAt, o.Reason = &at, f[8]
	}
	if f[5] != "" {
		o.Seats = strings.Split(f[5], ",")
	}
	if f[6] != "" {
		o.Units = map[string]int64{}
		for _, p := range strings.Split(f[6], ",") {
			k, q, _ := strings.Cut(p, "=")
			o.Units[k] = num(q)
		}
	}
	return o, nil
}

// Room returns the room an event belongs to: whose origin credential may
// confirm, release and cancel. Errors: ErrUnknownEvent, ErrInvalidEvent.
func (e *Engine) Room(ctx context.Context, event string) (string, error) {
	reply, err := e.run(ctx, roomCmd, event)
	if err != nil {
		return "", err
	}
	if str(reply[0]) != "ok" {
		return "", refusal(roomCmd, reply, "noevent")
	}
	if len(reply) >= 2 && str(reply[1]) != "" {
		return str(reply[1]), nil
	}
	return event, nil // defined before events named their room
}

// Events lists every event ever defined (the registry RegistryKey), in no order.
func (e *Engine) Events(ctx context.Context) ([]string, error) {
	ids, err := e.rdb.SMembers(ctx, RegistryKey).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: registry: %w", booking.ErrUnavailable, err)
	}
	return ids, nil
}

// Outbox returns at most max order events that Confirm and Cancel wrote to
// the event's outbox (in the same script as the change, so none is lost to a
// crash between the change and its publication), no later than before, and
// that nobody acknowledged yet, oldest first. A confirmed event whose order
// was cancelled since is still the confirmed event.
func (e *Engine) Outbox(ctx context.Context, event string, max int, before time.Time) ([]booking.Pending, error) {
	if max < 1 {
		max = 1
	}
	reply, err := e.run(ctx, outboxCmd, event, max, before.UnixMilli())
	if err != nil {
		return nil, err
	}
	if str(reply[0]) != "ok" {
		return nil, unexpected(outboxCmd, reply)
	}
	out := make([]booking.Pending, 0, (len(reply)-1)/2)
	for i := 1; i+1 < len(reply); i += 2 {
		id := str(reply[i])
		if strings.HasPrefix(id, "i") {
			iv, err := parseInventory(event, id)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", booking.ErrUnavailable, outboxCmd.Name, err)
			}
			out = append(out, booking.Pending{ID: id, Inventory: &iv})
			continue
		}
		o, err := parseOrder(event, str(reply[i+1]))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", booking.ErrUnavailable, outboxCmd.Name, err)
		}
		if strings.HasPrefix(id, "c") {
			o.Type, o.CancelledAt, o.Reason = booking.OrderConfirmed, nil, ""
		}
		out = append(out, booking.Pending{ID: id, Event: o})
	}
	return out, nil
}

// Ack removes published order events from the event's outbox.
func (e *Engine) Ack(ctx context.Context, event string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	reply, err := e.run(ctx, ackCmd, event, args...)
	if err != nil {
		return err
	}
	if str(reply[0]) != "ok" {
		return unexpected(ackCmd, reply)
	}
	return nil
}

// Rebuild puts back the orders the origin recorded (its export:
// docs/BOOKING.md, "Reconciliation") into an event closed to holds, after a
// total loss or a Close: their seats sold, their units out of the stock, the
// fence past every token. An order the event has already is kept as it is, so
// a retried or split rebuild adds nothing twice. A closed event's live holds
// yield to the record: the hold an order was confirmed from becomes that
// order, with its session (Converted); another hold on a seat of an order is
// given up (Released), so its confirm finds no hold (ErrStaleToken). With
// reopen, the event then takes holds again. All or nothing per call: errors
// ErrNotRecovering (the event is open), ErrUnknownSeat, ErrUnknownSKU, a
// *TakenError (a seat of another order of the kit, or in two orders), a
// *SoldOutError (more units than the stock), ErrInvalidRequest,
// ErrUnknownEvent.
func (e *Engine) Rebuild(ctx context.Context, event string, orders []booking.SoldOrder, reopen bool) (booking.Rebuilt, error) {
	if !booking.ValidEventID(event) {
		return booking.Rebuilt{}, booking.ErrInvalidEvent
	}
	if len(orders) > booking.MaxRebuildOrders {
		return booking.Rebuilt{}, fmt.Errorf("%w: %d orders in one call, at most %d", booking.ErrInvalidRequest, len(orders), booking.MaxRebuildOrders)
	}
	now := e.clock()
	args := make([]any, 0, 5+3*len(orders))
	args = append(args, now.UnixMilli(), map[bool]string{true: "1"}[reopen], len(orders),
		int64(booking.MinOrderID), min(int64(booking.MaxOrderID), now.Add(booking.OrderIDAhead).UnixMicro()))
	seen := make(map[string]bool, len(orders))
	for _, o := range orders {
		if err := o.Validate(now); err != nil {
			return booking.Rebuilt{}, err
		}
		if seen[o.Order] {
			return booking.Rebuilt{}, fmt.Errorf("%w: order %s twice", booking.ErrInvalidRequest, o.Order)
		}
		seen[o.Order] = true
		var units []string
		for _, k := range slices.Sorted(maps.Keys(o.Units)) {
			units = append(units, k+"="+strconv.FormatInt(o.Units[k], 10))
		}
		args = append(args, o.Order, strings.Join(o.Seats, ","), strings.Join(units, ","))
	}
	reply, err := e.run(ctx, rebuildCmd, event, args...)
	if err != nil {
		return booking.Rebuilt{}, err
	}
	switch str(reply[0]) {
	case "ok":
		if len(reply) < 4 {
			break
		}
		r := booking.Rebuilt{Added: num(reply[1]), Kept: num(reply[2]), Recovering: str(reply[3]) == "1"}
		if len(reply) >= 6 {
			r.Released, r.Converted = num(reply[4]), num(reply[5])
		}
		if reopen {
			e.log.LogAttrs(ctx, slog.LevelInfo, ReopenedMsg, slog.String("event", event), slog.Int64("rebuilt", r.Added), slog.Int64("kept", r.Kept))
		}
		return r, nil
	case "badorder":
		return booking.Rebuilt{}, fmt.Errorf("%w: order %.40q: not an id the kit issued", booking.ErrInvalidRequest, str(reply[len(reply)-1]))
	case "unknownseat":
		return booking.Rebuilt{}, fmt.Errorf("%w: %s", booking.ErrUnknownSeat, str(reply[len(reply)-1]))
	case "unknownsku":
		return booking.Rebuilt{}, fmt.Errorf("%w: %s", booking.ErrUnknownSKU, str(reply[len(reply)-1]))
	case "taken":
		return booking.Rebuilt{}, &booking.TakenError{Seats: []string{str(reply[1])}}
	case "soldout":
		if len(reply) >= 3 {
			return booking.Rebuilt{}, &booking.SoldOutError{SKU: str(reply[1]), Available: num(reply[2])}
		}
	}
	return booking.Rebuilt{}, refusal(rebuildCmd, reply, "noevent", "open")
}

// Close closes an open event to holds until Rebuild puts back the origin's
// record and reopens it, as a total loss leaves it (docs/BOOKING.md, "After a
// region failover"): a region failover closes the standby's events, whose copy
// lost the old region's last writes. New holds are refused (ErrRecovering);
// live holds may still be confirmed, extended and released. Closing a closed
// event changes nothing (Closed.Now false). Errors: ErrUnknownEvent,
// ErrInvalidEvent, ErrUnavailable.
func (e *Engine) Close(ctx context.Context, event string) (booking.Closed, error) {
	reply, err := e.run(ctx, closeCmd, event, e.nowMS())
	if err != nil {
		return booking.Closed{}, err
	}
	if str(reply[0]) != "ok" || len(reply) < 4 {
		return booking.Closed{}, refusal(closeCmd, reply, "noevent")
	}
	c := booking.Closed{Now: str(reply[1]) == "1", Holds: num(reply[2]), Live: num(reply[3])}
	if c.Now {
		e.log.LogAttrs(ctx, slog.LevelWarn, ClosedMsg, slog.String("event", event),
			slog.Int64("holds", c.Holds), slog.Int64("live", c.Live))
	}
	return c, nil
}

// ClosedMsg is the log line of an event an admin closed to holds.
const ClosedMsg = "event closed to holds: its sold state awaits the origin's record"

// ReopenedMsg is the log line of an event reopened to holds once its sold
// state was rebuilt from the origin's record.
const ReopenedMsg = "event reopened to holds: its sold state rebuilt from the origin's record"
