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
// This is the one place where errors become statuses.
func toAPIError(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, room.ErrInvalidRoom):
		return &apiError{status: http.StatusBadRequest, code: "invalid_room", message: "invalid room id"}
	case errors.Is(err, room.ErrInvalidConfig):
		// The engine's message names the field and the reason, and carries no secret.
		return &apiError{status: http.StatusBadRequest, code: "invalid_config", message: err.Error()}
	case errors.Is(err, room.ErrUnknownRoom):
		return &apiError{status: http.StatusNotFound, code: "unknown_room", message: "no such room"}
	case errors.Is(err, room.ErrNotClosed):
		return &apiError{status: http.StatusConflict, code: "room_not_closed", message: "only a closed room can be drained"}
	case errors.Is(err, room.ErrClosed):
		return &apiError{status: http.StatusConflict, code: "room_closed", message: "the room is closed"}
	case errors.Is(err, room.ErrAlreadyConsumed):
		return &apiError{status: http.StatusConflict, code: "already_consumed", message: "this entry was already used"}
	case errors.Is(err, room.ErrGrantExpired):
		return &apiError{status: http.StatusGone, code: "grant_expired", message: "the entry expired before it was used"}
	case errors.Is(err, room.ErrWrongAudience):
		return &apiError{status: http.StatusUnauthorized, code: "invalid_token", message: "entry token is for another origin"}
	case errors.Is(err, room.ErrUnknownGrant):
		return &apiError{status: http.StatusUnauthorized, code: "unknown_grant", message: "no such entry"}
	case errors.Is(err, room.ErrChallengeSpent):
		return &apiError{status: http.StatusForbidden, code: "challenge_used", message: "this join challenge was used already; solve a new one"}
	case errors.Is(err, room.ErrRateLimited):
		e := &apiError{status: http.StatusTooManyRequests, code: "rate_limited", message: "too many requests, retry later", retryAfter: RetryAfterSeconds}
		var re *room.RetryError
		if errors.As(err, &re) {
			e.retryAfter = max(1, int(math.Ceil(re.After.Seconds())))
		}
		return e
	case errors.Is(err, booking.ErrInvalidEvent):
		return &apiError{status: http.StatusBadRequest, code: "invalid_event", message: "invalid event id"}
	case errors.Is(err, booking.ErrInvalidInventory):
		// The engine's message names the field and the reason.
		return &apiError{status: http.StatusBadRequest, code: "invalid_inventory", message: err.Error()}
	case errors.Is(err, booking.ErrInvalidRequest):
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", message: err.Error()}
	case errors.Is(err, booking.ErrUnknownEvent):
		return &apiError{status: http.StatusNotFound, code: "unknown_event", message: "no such event"}
	case errors.Is(err, booking.ErrUnknownSeat):
		return &apiError{status: http.StatusNotFound, code: "unknown_seat", message: err.Error()}
	case errors.Is(err, booking.ErrUnknownSKU):
		return &apiError{status: http.StatusNotFound, code: "unknown_sku", message: err.Error()}
	case errors.Is(err, booking.ErrUnknownOrder):
		return &apiError{status: http.StatusNotFound, code: "unknown_order", message: "no such order"}
	case errors.Is(err, booking.ErrWrongRoom):
		return &apiError{status: http.StatusUnauthorized, code: "invalid_session", message: "booking session of another room"}
	case errors.Is(err, booking.ErrSessionEnded):
		return &apiError{status: http.StatusUnauthorized, code: "session_ended", message: "the entry session ended"}
	case errors.Is(err, booking.ErrWrongSession):
		return &apiError{status: http.StatusForbidden, code: "wrong_session", message: "the hold belongs to another session"}
	case errors.Is(err, booking.ErrSeatTaken):
		e := &apiError{status: http.StatusConflict, code: "seat_taken", message: "seats held or sold by someone else"}
		var te *booking.TakenError
		if errors.As(err, &te) {
			e.seats = te.Seats
		}
		return e
	case errors.Is(err, booking.ErrSoldOut):
		e := &apiError{status: http.StatusConflict, code: "sold_out", message: "not enough units left"}
		var se *booking.SoldOutError
		if errors.As(err, &se) {
			e.sku, e.available = se.SKU, &se.Available
		}
		return e
	case errors.Is(err, booking.ErrLimit):
		return &apiError{status: http.StatusConflict, code: "session_limit", message: err.Error()}
	case errors.Is(err, booking.ErrStaleToken):
		return &apiError{status: http.StatusConflict, code: "stale_token", message: "no live hold with this token: released, expired, or never issued"}
	case errors.Is(err, booking.ErrAlreadyConfirmed):
		return &apiError{status: http.StatusConflict, code: "already_confirmed", message: "the hold is already an order (under another idempotency key)"}
	case errors.Is(err, booking.ErrOrderCancelled):
		return &apiError{status: http.StatusConflict, code: "order_cancelled", message: "the order of this idempotency key was cancelled"}
	case errors.Is(err, booking.ErrInUse):
		return &apiError{status: http.StatusConflict, code: "event_in_use", message: err.Error()}
	case errors.Is(err, booking.ErrHoldExpired):
		return &apiError{status: http.StatusGone, code: "hold_expired", message: "the hold expired; its items were returned"}
	case errors.Is(err, booking.ErrIdempotencyKey):
		return &apiError{status: http.StatusUnprocessableEntity, code: "idempotency_key_reused", message: "the idempotency key confirmed another hold"}
	default:
		// room.ErrUnavailable, booking.ErrUnavailable, context deadlines, and anything unforeseen from
		// Redis: the visitor retries shortly; the cause goes to the log only.
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "temporarily unavailable, retry shortly", cause: err}
	}
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
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":           "application/json; charset=utf-8",
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		},
		Body: string(b),
	}
}
