package bookingapi

import (
	"errors"
	"net/http"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/booking"
)

// Answers are the answers to the booking engine's errors (httpapi.ToError),
// in order.
var Answers = httpapi.Answers{
	{Err: booking.ErrInvalidEvent, Status: http.StatusBadRequest, Code: "invalid_event", Message: "invalid event id"},
	{Err: booking.ErrInvalidInventory, Status: http.StatusBadRequest, Code: "invalid_inventory"},
	{Err: booking.ErrInvalidRequest, Status: http.StatusBadRequest, Code: "invalid_request"},
	{Err: booking.ErrUnknownEvent, Status: http.StatusNotFound, Code: "unknown_event", Message: "no such event"},
	{Err: booking.ErrUnknownSeat, Status: http.StatusNotFound, Code: "unknown_seat"},
	{Err: booking.ErrUnknownSKU, Status: http.StatusNotFound, Code: "unknown_sku"},
	{Err: booking.ErrUnknownOrder, Status: http.StatusNotFound, Code: "unknown_order", Message: "no such order"},
	{Err: booking.ErrWrongRoom, Status: http.StatusUnauthorized, Code: "invalid_session", Message: "booking session of another room"},
	{Err: booking.ErrSessionEnded, Status: http.StatusUnauthorized, Code: "session_ended", Message: "the entry session ended"},
	{Err: booking.ErrWrongSession, Status: http.StatusForbidden, Code: "wrong_session", Message: "the hold belongs to another session"},
	{Err: booking.ErrSeatTaken, Status: http.StatusConflict, Code: "seat_taken", Message: "seats held or sold by someone else",
		Detail: func(e *httpapi.Error, err error) {
			var te *booking.TakenError
			if errors.As(err, &te) {
				e.Seats = te.Seats
			}
		}},
	{Err: booking.ErrSoldOut, Status: http.StatusConflict, Code: "sold_out", Message: "not enough units left",
		Detail: func(e *httpapi.Error, err error) {
			var se *booking.SoldOutError
			if errors.As(err, &se) {
				e.SKU, e.Available = se.SKU, &se.Available
			}
		}},
	{Err: booking.ErrLimit, Status: http.StatusConflict, Code: "session_limit"},
	{Err: booking.ErrStaleToken, Status: http.StatusConflict, Code: "stale_token", Message: "no live hold with this token: released, expired, or never issued"},
	{Err: booking.ErrAlreadyConfirmed, Status: http.StatusConflict, Code: "already_confirmed", Message: "the hold is already an order (under another idempotency key)"},
	{Err: booking.ErrOrderCancelled, Status: http.StatusConflict, Code: "order_cancelled", Message: "the order of this idempotency key was cancelled"},
	{Err: booking.ErrInUse, Status: http.StatusConflict, Code: "event_in_use"},
	{Err: booking.ErrExtensionLimit, Status: http.StatusConflict, Code: "extension_limit"},
	{Err: booking.ErrHoldExpired, Status: http.StatusGone, Code: "hold_expired", Message: "the hold expired; its items were returned"},
	{Err: booking.ErrIdempotencyKey, Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused", Message: "the idempotency key confirmed another hold"},
	// Neither is a Redis outage (no RedisErrors metric): the event came back
	// from a total loss closed to holds until an operator rebuilds what it
	// sold; or its stored definition cannot be read, and an operator defines it again.
	{Err: booking.ErrRecovering, Status: http.StatusServiceUnavailable, Code: "event_recovering",
		Message: "the event is closed to holds until its sales are restored after a data loss; retry later",
		Detail:  func(e *httpapi.Error, _ error) { e.RetryAfter = httpapi.RecoveringRetryAfter }},
	{Err: booking.ErrNotRestorable, Status: http.StatusServiceUnavailable, Code: "event_unrestorable",
		Message: "the event's stored definition cannot be read; an operator must define the event again"},
	{Err: booking.ErrNotRecovering, Status: http.StatusConflict, Code: "event_open", Message: "the event is open to holds: only an event closed after a data loss, or by an admin's close, is rebuilt"},
}
