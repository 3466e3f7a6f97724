package httpapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// RetryAfterSeconds is the Retry-After of 503 and 429 responses: long enough for
// a failover to finish, short enough that a waiting page catches up quickly.
const RetryAfterSeconds = 2

// Error is a client-visible error: status, snake_case code and a message
// that is safe to show. Cause is logged, never sent.
type Error struct {
	Status  int
	Code    string
	Message string
	Cause   error
	// RetryAfter is the Retry-After of a 429 in seconds (0: RetryAfterSeconds).
	RetryAfter int
	// What a booking conflict names: the seats taken, the sku short and what is left of it.
	Seats     []string
	SKU       string
	Available *int64
	// Render, when set, writes the answer instead of the JSON error body:
	// the edge gate's routes answer a person with a small HTML page.
	Render func(*Error) events.APIGatewayV2HTTPResponse
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errors that more than one product answers.
var (
	// ErrBadJSON is a body that is not the JSON object a route expects.
	ErrBadJSON = &Error{Status: http.StatusBadRequest, Code: "bad_json", Message: "request body is not the expected JSON"}
	// ErrInvalidToken and ErrTokenExpired refuse an entry token (VerifyEntry).
	ErrInvalidToken = &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Message: "entry token invalid"}
	ErrTokenExpired = &Error{Status: http.StatusGone, Code: "token_expired", Message: "entry token expired"}
	// ErrNotOrigin refuses a caller that is not the room's origin (FromOrigin).
	ErrNotOrigin = &Error{Status: http.StatusUnauthorized, Code: "invalid_origin_credential", Message: "Authorization: Bearer <the room's origin credential> required"}
)

// ToError maps an error from a route handler to the response it deserves.
// This is the one place where errors become statuses: an *Error is its
// own answer, the engines' errors are answered by errorAnswers, and anything
// else is a 503.
func ToError(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	for _, a := range errorAnswers {
		if !errors.Is(err, a.err) {
			continue
		}
		e := &Error{Status: a.status, Code: a.code, Message: a.message}
		if e.Message == "" {
			// The engine's message names the field and the reason, and carries no secret.
			e.Message = err.Error()
		}
		if a.detail != nil {
			a.detail(e, err)
		}
		return e
	}
	// room.ErrUnavailable, booking.ErrUnavailable, context deadlines, and anything unforeseen from
	// Redis: the visitor retries shortly; the cause goes to the log only.
	return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "temporarily unavailable, retry shortly", Cause: err}
}

// errorAnswers are the answers to the engines' errors, tried in order: the
// status, the code and the message ("": the error's own text); detail adds
// what the error carries.
var errorAnswers = []struct {
	err           error
	status        int
	code, message string
	detail        func(e *Error, err error)
}{
	{err: room.ErrInvalidRoom, status: http.StatusBadRequest, code: "invalid_room", message: "invalid room id"},
	{err: room.ErrInvalidConfig, status: http.StatusBadRequest, code: "invalid_config"},
	{err: room.ErrUnknownRoom, status: http.StatusNotFound, code: "unknown_room", message: "no such room"},
	// Not a Redis outage (no RedisErrors metric): an operator PUTs the room again.
	{err: room.ErrNotRestorable, status: http.StatusServiceUnavailable, code: "room_unrestorable",
		message: "the room's stored settings cannot be read; an operator must PUT the room again"},
	{err: room.ErrNotClosed, status: http.StatusConflict, code: "room_not_closed", message: "only a closed room can be drained"},
	{err: room.ErrClosed, status: http.StatusConflict, code: "room_closed", message: "the room is closed"},
	{err: room.ErrAlreadyConsumed, status: http.StatusConflict, code: "already_consumed", message: "this entry was already used"},
	{err: room.ErrGrantExpired, status: http.StatusGone, code: "grant_expired", message: "the entry expired before it was used"},
	{err: room.ErrWrongAudience, status: http.StatusUnauthorized, code: "invalid_token", message: "entry token is for another origin"},
	{err: room.ErrUnknownGrant, status: http.StatusUnauthorized, code: "unknown_grant", message: "no such entry"},
	{err: room.ErrInvitationRequired, status: http.StatusForbidden, code: "invitation_required", message: "this room admits invited visitors only"},
	{err: room.ErrInvitationInvalid, status: http.StatusForbidden, code: "invitation_invalid", message: "the invitation is invalid, expired or for another room"},
	{err: room.ErrInvitationRevoked, status: http.StatusForbidden, code: "invitation_revoked", message: "the invitation was revoked"},
	{err: room.ErrInvitationUsedUp, status: http.StatusForbidden, code: "invitation_used", message: "every use of the invitation was taken"},
	{err: room.ErrUnknownVisitor, status: http.StatusNotFound, code: "unknown_visitor", message: "no visitor of the last two days has that reference"},
	{err: room.ErrPlaceStands, status: http.StatusConflict, code: "place_not_lost", message: "the visitor still waits, holds a grant or a session, or was served: nothing to restore"},
	{err: room.ErrChallengeSpent, status: http.StatusForbidden, code: "challenge_used", message: "this join challenge was used already; solve a new one"},
	{err: room.ErrRateLimited, status: http.StatusTooManyRequests, code: "rate_limited", message: "too many requests, retry later",
		detail: func(e *Error, err error) {
			e.RetryAfter = RetryAfterSeconds
			var re *room.RetryError
			if errors.As(err, &re) {
				e.RetryAfter = max(1, int(math.Ceil(re.After.Seconds())))
			}
		}},
	{err: booking.ErrInvalidEvent, status: http.StatusBadRequest, code: "invalid_event", message: "invalid event id"},
	{err: booking.ErrInvalidInventory, status: http.StatusBadRequest, code: "invalid_inventory"},
	{err: booking.ErrInvalidRequest, status: http.StatusBadRequest, code: "invalid_request"},
	{err: booking.ErrUnknownEvent, status: http.StatusNotFound, code: "unknown_event", message: "no such event"},
	{err: booking.ErrUnknownSeat, status: http.StatusNotFound, code: "unknown_seat"},
	{err: booking.ErrUnknownSKU, status: http.StatusNotFound, code: "unknown_sku"},
	{err: booking.ErrUnknownOrder, status: http.StatusNotFound, code: "unknown_order", message: "no such order"},
	{err: booking.ErrWrongRoom, status: http.StatusUnauthorized, code: "invalid_session", message: "booking session of another room"},
	{err: booking.ErrSessionEnded, status: http.StatusUnauthorized, code: "session_ended", message: "the entry session ended"},
	{err: booking.ErrWrongSession, status: http.StatusForbidden, code: "wrong_session", message: "the hold belongs to another session"},
	{err: booking.ErrSeatTaken, status: http.StatusConflict, code: "seat_taken", message: "seats held or sold by someone else",
		detail: func(e *Error, err error) {
			var te *booking.TakenError
			if errors.As(err, &te) {
				e.Seats = te.Seats
			}
		}},
	{err: booking.ErrSoldOut, status: http.StatusConflict, code: "sold_out", message: "not enough units left",
		detail: func(e *Error, err error) {
			var se *booking.SoldOutError
			if errors.As(err, &se) {
				e.SKU, e.Available = se.SKU, &se.Available
			}
		}},
	{err: booking.ErrLimit, status: http.StatusConflict, code: "session_limit"},
	{err: booking.ErrStaleToken, status: http.StatusConflict, code: "stale_token", message: "no live hold with this token: released, expired, or never issued"},
	{err: booking.ErrAlreadyConfirmed, status: http.StatusConflict, code: "already_confirmed", message: "the hold is already an order (under another idempotency key)"},
	{err: booking.ErrOrderCancelled, status: http.StatusConflict, code: "order_cancelled", message: "the order of this idempotency key was cancelled"},
	{err: booking.ErrInUse, status: http.StatusConflict, code: "event_in_use"},
	{err: booking.ErrExtensionLimit, status: http.StatusConflict, code: "extension_limit"},
	{err: booking.ErrHoldExpired, status: http.StatusGone, code: "hold_expired", message: "the hold expired; its items were returned"},
	{err: booking.ErrIdempotencyKey, status: http.StatusUnprocessableEntity, code: "idempotency_key_reused", message: "the idempotency key confirmed another hold"},
	// Neither is a Redis outage (no RedisErrors metric): the event came back
	// from a total loss closed to holds until an operator rebuilds what it
	// sold; or its stored definition cannot be read, and an operator defines it again.
	{err: booking.ErrRecovering, status: http.StatusServiceUnavailable, code: "event_recovering",
		message: "the event is closed to holds until its sales are restored after a data loss; retry later",
		detail:  func(e *Error, _ error) { e.RetryAfter = RecoveringRetryAfter }},
	{err: booking.ErrNotRestorable, status: http.StatusServiceUnavailable, code: "event_unrestorable",
		message: "the event's stored definition cannot be read; an operator must define the event again"},
	{err: booking.ErrNotRecovering, status: http.StatusConflict, code: "event_open", message: "the event is open to holds: only an event closed after a data loss is rebuilt"},
}

// RecoveringRetryAfter is the Retry-After of 503 event_recovering, in
// seconds: an operator's rebuild takes minutes, not the seconds of a failover.
const RecoveringRetryAfter = 30

// NotRedisTrouble are the codes of 503s that are no Redis outage: the
// request log leaves the RedisErrors metric off them.
var NotRedisTrouble = map[string]bool{"room_unrestorable": true, "event_unrestorable": true, "event_recovering": true}

// ErrorBody is the JSON body of an error answer.
type ErrorBody struct {
	Error struct {
		Code      string   `json:"code"`
		Message   string   `json:"message"`
		Seats     []string `json:"seats,omitempty"`
		SKU       string   `json:"sku,omitempty"`
		Available *int64   `json:"available,omitempty"`
	} `json:"error"`
}

// ErrorResponse is e's answer: its Render's, or the JSON error body; with
// Retry-After on a 503 or a 429.
func ErrorResponse(e *Error) events.APIGatewayV2HTTPResponse {
	var resp events.APIGatewayV2HTTPResponse
	if e.Render != nil {
		resp = e.Render(e)
	} else {
		var b ErrorBody
		b.Error.Code, b.Error.Message = e.Code, e.Message
		b.Error.Seats, b.Error.SKU, b.Error.Available = e.Seats, e.SKU, e.Available
		resp = JSON(e.Status, b)
	}
	if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests {
		after := e.RetryAfter
		if after <= 0 {
			after = RetryAfterSeconds
		}
		resp.Headers["Retry-After"] = strconv.Itoa(after)
	}
	return resp
}

// InternalError is a 500 whose cause goes to the log only.
func InternalError(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error", Cause: err}
}

// JSON is the answer whose body is v encoded; answers are private and
// uncached unless a route says otherwise.
func JSON(status int, v any) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	return JSONBytes(status, b)
}

// JSONBytes is JSON of a body already encoded.
func JSONBytes(status int, b []byte) events.APIGatewayV2HTTPResponse {
	resp := NewResponse(status, "application/json; charset=utf-8")
	resp.Body = string(b)
	return resp
}

// NewResponse is an answer with the headers every answer carries: its content
// type, no caching (unless the route changes Cache-Control) and no sniffing.
func NewResponse(status int, contentType string) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":           contentType,
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		},
	}
}
