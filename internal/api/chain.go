package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/gateapi"
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/oidcapi"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Every request goes through one chain of small steps (Handle):
//
//	logged → recovered → serve: matched → checks (edge, body, admin, room id) → the route's handler
//
// A step that refuses answers the request itself (exchange.fail), and the
// steps after it do not run; logged writes the request's line whatever
// happened, a panic included.

// exchange is one request on its way through the chain: what the steps pass
// on to each other and to the request's log line.
type exchange struct {
	ev     *events.APIGatewayV2HTTPRequest
	start  time.Time
	method string
	path   string
	// answer is the response to an error: JSON, or a page on the gate's paths.
	answer func(*httpapi.Error) events.APIGatewayV2HTTPResponse

	route *route           // nil until matched
	req   *httpapi.Request // the handler's view, once matched
	// roomID and eventID are logged once the checks passed: only valid ids
	// reach the log, the raw path segments are the client's, of any length.
	roomID, eventID string

	resp events.APIGatewayV2HTTPResponse
	err  *httpapi.Error // the error answered, if any: its cause and code are logged
}

// newExchange starts the exchange of ev at start.
func newExchange(ev *events.APIGatewayV2HTTPRequest, start time.Time) *exchange {
	x := &exchange{ev: ev, start: start, method: ev.RequestContext.HTTP.Method, path: ev.RawPath,
		answer: httpapi.ErrorResponse}
	if x.path == "" {
		x.path = ev.RequestContext.HTTP.Path
	}
	if gateapi.Path(x.path) {
		// The gate's routes answer a person: every error is a page.
		x.answer = gateapi.ErrorPage
	}
	if a := oidcapi.ErrorAnswer(x.path); a != nil {
		// The OIDC provider's: a page for a person, OAuth's JSON for a client.
		x.answer = a
	}
	return x
}

// fail answers the exchange with e.
func (x *exchange) fail(e *httpapi.Error) {
	x.err = e
	x.resp = x.answer(e)
}

// routeName is the route's key for the log; "unknown" before (or without) a match.
func (x *exchange) routeName() string {
	if x.route == nil {
		return "unknown"
	}
	return x.route.key
}

// Handle is the Lambda handler: it never returns an error and never panics;
// every outcome is an HTTP response.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	x := newExchange(&ev, time.Now())
	h.logged(ctx, x, func() {
		recovered(x, func() { h.serve(ctx, x) })
	})
	return x.resp, nil
}

// logged runs next, then writes the request's log line, unless the request
// is a sampled route's success that Options.LogSample leaves out.
func (h *Handler) logged(ctx context.Context, x *exchange, next func()) {
	next()
	if h.sampledOut(x) {
		return
	}
	level, attrs := logLine(x)
	h.o.Logger.LogAttrs(ctx, level, "request", attrs...)
}

// sampledOut reports whether the request's line is left out of the log: a
// success (below 400) of a sampled route, not drawn by Options.LogSample.
func (h *Handler) sampledOut(x *exchange) bool {
	return x.route != nil && x.route.Sampled && x.resp.StatusCode < 400 && h.o.LogSample != nil && !h.o.LogSample()
}

// logLine is the level and attributes of the request's log line: an answer
// of 500 or more is an error, with its cause, and a 503 of Redis trouble
// carries the RedisErrors metric.
func logLine(x *exchange) (slog.Level, []slog.Attr) {
	attrs := []slog.Attr{
		slog.String("route", x.routeName()),
		slog.String("method", x.method),
		slog.Int("status", x.resp.StatusCode),
		slog.Float64("latency_ms", float64(time.Since(x.start).Microseconds())/1000),
	}
	if x.roomID != "" {
		attrs = append(attrs, slog.String("room", x.roomID))
	}
	if x.eventID != "" {
		attrs = append(attrs, slog.String("event", x.eventID))
	}
	if id := x.ev.RequestContext.RequestID; id != "" {
		attrs = append(attrs, slog.String("request_id", id))
	}
	if x.resp.StatusCode < 500 {
		return slog.LevelInfo, attrs
	}
	if x.err != nil && x.err.Cause != nil {
		// Engine and Redis errors carry no tokens; they are what an
		// operator needs to see, and only ever in the log.
		attrs = append(attrs, slog.String("error", x.err.Cause.Error()))
	}
	if x.resp.StatusCode == http.StatusServiceUnavailable && (x.err == nil || !httpapi.NotRedisTrouble[x.err.Code]) {
		attrs = append(attrs, metrics.RedisErrorAttrs(x.start)...)
	}
	return slog.LevelError, attrs
}

// recovered runs next, answering a panic as a 500 whose cause is logged.
func recovered(x *exchange, next func()) {
	defer func() {
		if p := recover(); p != nil {
			x.fail(httpapi.InternalError(fmt.Errorf("panic: %v", p)))
		}
	}()
	next()
}

// check is a step before the handler: a non-nil error refuses the request.
type check func(h *Handler, ctx context.Context, x *exchange) *httpapi.Error

// checks run in this order on a matched request.
var checks = []check{
	(*Handler).checkEdge,
	(*Handler).readBody,
	(*Handler).checkAdmin,
	(*Handler).checkRoomID,
}

// serve matches the request's route, runs the checks and the route's handler.
func (h *Handler) serve(ctx context.Context, x *exchange) {
	if !h.matched(x) {
		return
	}
	for _, c := range checks {
		if e := c(h, ctx, x); e != nil {
			x.fail(e)
			return
		}
	}
	x.roomID = x.req.Room
	if booking.ValidEventID(x.req.Path.Event) {
		x.eventID = x.req.Path.Event
	}
	resp, err := x.route.fn(ctx, x.req)
	if err != nil {
		x.fail(httpapi.ToError(err))
		return
	}
	x.resp = resp
}

// matched finds the request's route and makes the handler's request; it
// answers 405 (with Allow) or 404 when there is none.
func (h *Handler) matched(x *exchange) bool {
	rt, params, allowed := match(h.table, x.method, x.path)
	switch {
	case rt == nil && allowed != "":
		x.fail(&httpapi.Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: "method not allowed; allowed: " + allowed})
		x.resp.Headers["Allow"] = allowed
		return false
	case rt == nil:
		x.fail(&httpapi.Error{Status: http.StatusNotFound, Code: "unknown_route", Message: "no such route"})
		return false
	}
	x.route = rt
	x.req = &httpapi.Request{Event: x.ev, Room: params.Room, Path: params, Now: h.o.Clock()}
	return true
}

// errForbidden answers a public route reached without CloudFront's origin header.
var errForbidden = &httpapi.Error{Status: http.StatusForbidden, Code: "forbidden",
	Message: "call this API through the waiting room's CloudFront address"}

// checkEdge refuses a public route without the origin header when the handler
// has an EdgeGuard, and records whether the request provably came through
// CloudFront. Admin routes are IAM-signed to the API's own host, never
// through CloudFront: it lets them pass.
func (h *Handler) checkEdge(ctx context.Context, x *exchange) *httpapi.Error {
	if x.route.Admin || h.o.Edge == nil {
		return nil
	}
	if !h.o.Edge.Verify(ctx, x.req.Header(strings.ToLower(config.OriginHeader))) {
		return errForbidden
	}
	x.req.ViaEdge = true
	return nil
}

// readBody decodes the request's body into the handler's request, within the
// route's limit.
func (*Handler) readBody(_ context.Context, x *exchange) *httpapi.Error {
	b, e := decodeBody(x.ev, x.route.BodyLimit())
	x.req.Body = b
	return e
}

var errTooLarge = &httpapi.Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: "request body over 8 KiB"}

// decodeBody returns the request's body, refusing one over limit bytes (MaxBody for most routes).
func decodeBody(ev *events.APIGatewayV2HTTPRequest, limit int) ([]byte, *httpapi.Error) {
	errTooLarge := errTooLarge
	if limit != MaxBody {
		errTooLarge = &httpapi.Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: fmt.Sprintf("request body over %d KiB", limit>>10)}
	}
	// Reject on the encoded length first, so a huge body is never decoded.
	if len(ev.Body) > limit*4/3+4 {
		return nil, errTooLarge
	}
	b := []byte(ev.Body)
	if ev.IsBase64Encoded {
		d, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, &httpapi.Error{Status: http.StatusBadRequest, Code: "bad_body", Message: "body is not valid base64"}
		}
		b = d
	}
	if len(b) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// checkAdmin refuses an admin route without the admin credentials: an IAM
// principal API Gateway authorised, or the admin key. Public routes pass.
func (h *Handler) checkAdmin(_ context.Context, x *exchange) *httpapi.Error {
	if !x.route.Admin {
		return nil
	}
	switch h.o.AdminAuth {
	case AdminIAM:
		a := x.ev.RequestContext.Authorizer
		if a != nil && a.IAM != nil && (a.IAM.UserARN != "" || a.IAM.CallerID != "" || a.IAM.AccountID != "") {
			return nil
		}
	case AdminKey:
		got, ok := x.req.Bearer()
		// Compare digests so the comparison takes the same time whatever the
		// lengths; an empty configured key never matches (wiring refuses it anyway).
		sum := sha256.Sum256([]byte(got))
		if ok && h.o.AdminKey != "" && subtle.ConstantTimeCompare(sum[:], h.adminHash[:]) == 1 {
			return nil
		}
	}
	return &httpapi.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "admin credentials missing or invalid"}
}

// checkRoomID refuses a route's {room} that is not a valid room id.
func (*Handler) checkRoomID(_ context.Context, x *exchange) *httpapi.Error {
	if x.route.HasRoom() && !room.ValidRoomID(x.req.Room) {
		return &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_room", Message: "invalid room id"}
	}
	return nil
}
