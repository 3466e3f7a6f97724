package lua

import (
	_ "embed" // the scripts below are //go:embed files
)

// The booking scripts: one per operation on an event's inventory.
// Each opens with its contract; booking_lib.lua holds what they share (the
// KEYS every one of them takes) and is put in front of each.

//go:embed booking_lib.lua
var bookingLib string

//go:embed booking_define.lua
var bookingDefine string

//go:embed booking_hold.lua
var bookingHold string

//go:embed booking_confirm.lua
var bookingConfirm string

//go:embed booking_release.lua
var bookingRelease string

//go:embed booking_cancel.lua
var bookingCancel string

//go:embed booking_sweep.lua
var bookingSweep string

//go:embed booking_view.lua
var bookingView string

//go:embed booking_room.lua
var bookingRoom string

//go:embed booking_outbox.lua
var bookingOutbox string

//go:embed booking_ack.lua
var bookingAck string

//go:embed booking_end.lua
var bookingEnd string

//go:embed booking_extend.lua
var bookingExtend string

//go:embed booking_orders.lua
var bookingOrders string

//go:embed booking_sessions.lua
var bookingSessions string

//go:embed booking_rebuild.lua
var bookingRebuild string

//go:embed booking_close.lua
var bookingClose string

// BookingEnded names which of a room's sessions ended, for the sweep. It
// stands alone (no booking_lib.lua): its one key is the room's.
//
//go:embed booking_ended.lua
var BookingEnded string

// BookingActive checks that a room's entry session is still active, for a
// hold on an event in another slot. It stands alone (no booking_lib.lua):
// its one key is the room's.
//
//go:embed booking_active.lua
var BookingActive string

// The booking scripts, ready to load: what each uses of booking_lib.lua, then the operation.
var (
	BookingDefine   = withLib(bookingLib, bookingDefine)   // define or replace an event's inventory
	BookingHold     = withLib(bookingLib, bookingHold)     // hold seats and units for a session, with a fencing token
	BookingConfirm  = withLib(bookingLib, bookingConfirm)  // turn a hold into an order, once per idempotency key
	BookingRelease  = withLib(bookingLib, bookingRelease)  // give a hold up before its TTL
	BookingCancel   = withLib(bookingLib, bookingCancel)   // compensation: cancel a confirmed order
	BookingSweep    = withLib(bookingLib, bookingSweep)    // expire overdue holds
	BookingView     = withLib(bookingLib, bookingView)     // seats, stock and counters
	BookingRoom     = withLib(bookingLib, bookingRoom)     // the room an event belongs to
	BookingOutbox   = withLib(bookingLib, bookingOutbox)   // order events not yet published
	BookingAck      = withLib(bookingLib, bookingAck)      // order events published: out of the outbox
	BookingEnd      = withLib(bookingLib, bookingEnd)      // room sessions ended: their holds go
	BookingExtend   = withLib(bookingLib, bookingExtend)   // a hold gets more time, within the event's bounds
	BookingOrders   = withLib(bookingLib, bookingOrders)   // a page of the event's orders
	BookingSessions = withLib(bookingLib, bookingSessions) // the room sessions that hold something
	BookingRebuild  = withLib(bookingLib, bookingRebuild)  // after a total loss or a close: the origin's orders sold again, the event reopened
	BookingClose    = withLib(bookingLib, bookingClose)    // an open event closed to holds until rebuilt (a region failover)
)
