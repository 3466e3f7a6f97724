package api

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

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
	// page, when set, makes the response a small HTML page for a person (the
	// edge gate's routes, gate.go) instead of the JSON error body.
	page *gatePage
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

var (
	errTooLarge      = &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "request body over 8 KiB"}
	errBadJSON       = &apiError{status: http.StatusBadRequest, code: "bad_json", message: "request body is not the expected JSON"}
	errMissingTicket = &apiError{status: http.StatusUnauthorized, code: "missing_ticket", message: "Authorization: Bearer <ticket> required"}
	errInvalidTicket = &apiError{status: http.StatusUnauthorized, code: "invalid_ticket", message: "ticket invalid, expired or for another room"}
	errMissingToken  = &apiError{status: http.StatusBadRequest, code: "missing_token", message: `body must be {"token": "<entry token>"}`}
	errInvalidToken  = &apiError{status: http.StatusUnauthorized, code: "invalid_token", message: "entry token invalid"}
	errTokenExpired  = &apiError{status: http.StatusGone, code: "token_expired", message: "entry token expired"}
	errNotOrigin     = &apiError{status: http.StatusUnauthorized, code: "invalid_origin_credential", message: "Authorization: Bearer <the room's origin credential> required"}
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
	case errors.Is(err, room.ErrRateLimited):
		e := &apiError{status: http.StatusTooManyRequests, code: "rate_limited", message: "too many requests, retry later", retryAfter: RetryAfterSeconds}
		var re *room.RetryError
		if errors.As(err, &re) {
			e.retryAfter = max(1, int(math.Ceil(re.After.Seconds())))
		}
		return e
	default:
		// room.ErrUnavailable, context deadlines, and anything unforeseen from
		// Redis: the visitor retries shortly; the cause goes to the log only.
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "temporarily unavailable, retry shortly", cause: err}
	}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func errorResponse(e *apiError) events.APIGatewayV2HTTPResponse {
	var resp events.APIGatewayV2HTTPResponse
	if e.page != nil {
		resp = e.page.response(e)
	} else {
		var b errorBody
		b.Error.Code, b.Error.Message = e.code, e.message
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
