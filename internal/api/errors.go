package api

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

// apiError is a client-visible error: status, snake_case code and a message
// that is safe to show. cause is logged, never sent.
type apiError struct {
	status  int
	code    string
	message string
	cause   error
	// retryAfter is the Retry-After of a 429 in seconds (0: RetryAfterSeconds).
	retryAfter int
	// What a booking conflict names: the seats taken, the sku short and what is left of it.
	seats     []string
	sku       string
	available *int64
	// page, when set, makes the response a small HTML page for a person (the
	// edge gate's routes, gate.go) instead of the JSON error body.
	page *gatePage
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

var (
	errTooLarge         = &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "request body over 8 KiB"}
	errBadJSON          = &apiError{status: http.StatusBadRequest, code: "bad_json", message: "request body is not the expected JSON"}
	errMissingTicket    = &apiError{status: http.StatusUnauthorized, code: "missing_ticket", message: "Authorization: Bearer <ticket> required"}
	errInvalidTicket    = &apiError{status: http.StatusUnauthorized, code: "invalid_ticket", message: "ticket invalid, expired or for another room"}
	errMissingToken     = &apiError{status: http.StatusBadRequest, code: "missing_token", message: `body must be {"token": "<entry token>"}`}
	errInvalidToken     = &apiError{status: http.StatusUnauthorized, code: "invalid_token", message: "entry token invalid"}
	errTokenExpired     = &apiError{status: http.StatusGone, code: "token_expired", message: "entry token expired"}
	errChallengeInvalid = &apiError{status: http.StatusForbidden, code: "challenge_invalid", message: "join challenge invalid, expired or unsolved"}
	errNotOrigin        = &apiError{status: http.StatusUnauthorized, code: "invalid_origin_credential", message: "Authorization: Bearer <the room's origin credential> required"}
)

// toAPIError maps an error from a route handler to the response it deserves.
// This is the one place where errors become statuses: an *apiError is its
// own answer, the engines' errors are answered by errorAnswers, and anything
// else is a 503.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	for _, a := range errorAnswers {
		if !errors.Is(err, a.err) {
			continue
		}
		e := &apiError{status: a.status, code: a.code, message: a.message}
		if e.message == "" {
			// The engine's message names the field and the reason, and carries no secret.
			e.message = err.Error()
		}
		if a.detail != nil {
			a.detail(e, err)
		}
		return e
	}
	// room.ErrUnavailable, booking.ErrUnavailable, context deadlines, and anything unforeseen from
	// Redis: the visitor retries shortly; the cause goes to the log only.
	return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "temporarily unavailable, retry shortly", cause: err}
}

// errorAnswers are the answers to the engines' errors, tried in order: the
// status, the code and the message ("": the error's own text); detail adds
// what the error carries.
var errorAnswers = []struct {
	err           error
	status        int
	code, message string
	detail        func(e *apiError, err error)
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
	{err: room.ErrChallengeSpent, status: http.StatusForbidden, code: "challenge_used", message: "this join challenge was used already; solve a new one"},
	{err: room.ErrRateLimited, status: http.StatusTooManyRequests, code: "rate_limited", message: "too many requests, retry later",
		detail: func(e *apiError, err error) {
			e.retryAfter = RetryAfterSeconds
			var re *room.RetryError
			if errors.As(err, &re) {
				e.retryAfter = max(1, int(math.Ceil(re.After.Seconds())))
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
		detail: func(e *apiError, err error) {
			var te *booking.TakenError
			if errors.As(err, &te) {
				e.seats = te.Seats
			}
		}},
	{err: booking.ErrSoldOut, status: http.StatusConflict, code: "sold_out", message: "not enough units left",
		detail: func(e *apiError, err error) {
			var se *booking.SoldOutError
			if errors.As(err, &se) {
				e.sku, e.available = se.SKU, &se.Available
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
}

type errorBody struct {
	Error struct {
		Code      string   `json:"code"`
		Message   string   `json:"message"`
		Seats     []string `json:"seats,omitempty"`
		SKU       string   `json:"sku,omitempty"`
		Available *int64   `json:"available,omitempty"`
	} `json:"error"`
}

func errorResponse(e *apiError) events.APIGatewayV2HTTPResponse {
	var resp events.APIGatewayV2HTTPResponse
	if e.page != nil {
		resp = e.page.response(e)
	} else {
		var b errorBody
		b.Error.Code, b.Error.Message = e.code, e.message
		b.Error.Seats, b.Error.SKU, b.Error.Available = e.seats, e.sku, e.available
		resp = jsonResponse(e.status, b)
	}
	if e.status == http.StatusServiceUnavailable || e.status == http.StatusTooManyRequests {
		after := e.retryAfter
		if after <= 0 {
			after = RetryAfterSeconds
		}
		resp.Headers["Retry-After"] = strconv.Itoa(after)
	}
	return resp
}

// jsonResponse encodes v; responses are private and uncached unless a route
// says otherwise.
func jsonResponse(status int, v any) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	return jsonBytesResponse(status, b)
}

// jsonBytesResponse is jsonResponse of a body already encoded.
func jsonBytesResponse(status int, b []byte) events.APIGatewayV2HTTPResponse {
	resp := newResponse(status, "application/json; charset=utf-8")
	resp.Body = string(b)
	return resp
}

// newResponse is an answer with the headers every answer carries: its content
// type, no caching (unless the route changes Cache-Control) and no sniffing.
func newResponse(status int, contentType string) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":           contentType,
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		},
	}
}
