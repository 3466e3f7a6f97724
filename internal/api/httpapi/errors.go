package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
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
// This is the one place where errors become statuses: an *Error is its own
// answer, an engine's error is answered by the first of the answers that
// knows it (each product's own: Answering), and anything else is a 503.
func ToError(err error, answers ...Answers) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	if e := ToErrorOf(err, answers...); e != nil {
		return e
	}
	// The engines' ErrUnavailable, context deadlines, and anything unforeseen from
	// Redis: the visitor retries shortly; the cause goes to the log only.
	return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "temporarily unavailable, retry shortly", Cause: err}
}

// Answer is a product's answer to one of its engine's errors: the status,
// the code and the message ("": the error's own text, which names the field
// and the reason and carries no secret); Detail adds what the error carries.
type Answer struct {
	Err           error
	Status        int
	Code, Message string
	Detail        func(e *Error, err error)
}

// Answers are a product's answers to its engine's errors, tried in order.
type Answers []Answer

func (as Answers) answer(err error) *Error {
	for _, a := range as {
		if !errors.Is(err, a.Err) {
			continue
		}
		e := &Error{Status: a.Status, Code: a.Code, Message: a.Message}
		if e.Message == "" {
			e.Message = err.Error()
		}
		if a.Detail != nil {
			a.Detail(e, err)
		}
		return e
	}
	return nil
}

// Answering wraps a product's handlers so that an error one returns is
// answered by answers (ToError) before it leaves the product.
func Answering[K comparable](hs map[K]HandlerFunc, answers ...Answers) map[K]HandlerFunc {
	out := make(map[K]HandlerFunc, len(hs))
	for k, fn := range hs {
		out[k] = func(ctx context.Context, r *Request) (events.APIGatewayV2HTTPResponse, error) {
			resp, err := fn(ctx, r)
			if err != nil {
				var ae *Error
				if !errors.As(err, &ae) {
					if e := ToErrorOf(err, answers...); e != nil {
						return resp, e
					}
				}
			}
			return resp, err
		}
	}
	return out
}

// ToErrorOf is the answer of answers to err, or nil when none knows it.
func ToErrorOf(err error, answers ...Answers) *Error {
	for _, as := range answers {
		if e := as.answer(err); e != nil {
			return e
		}
	}
	return nil
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
