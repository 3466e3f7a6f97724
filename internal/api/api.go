// Package api is Vestibule's HTTP API: one router that turns API Gateway HTTP
// API (payload 2.0) requests into calls on the room engine and the token
// package, and their results and errors into JSON responses.
//
// Every Lambda function wires the whole router; API Gateway sends each function
// only its own routes (see docs/API.md for the grouping), so a route that reaches
// the "wrong" function still works, and the local stack serves every route
// through the very same Handler. The domain packages never import events.
package api

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// MaxBody is the largest request body accepted (decoded); larger gets 413.
const MaxBody = 8 << 10

// TicketTTL is how long a ticket stays valid: longer than any sensible wait,
// short enough that a leaked one goes stale by the next on-sale.
const TicketTTL = 24 * time.Hour

// AdminAuth is how admin routes are authenticated (config.AdminAuth).
type AdminAuth = config.AdminAuth

// The admin authentication modes, as config defines them.
const (
	AdminIAM = config.AdminIAM
	AdminKey = config.AdminKey
)

// Options are the Handler's dependencies. Queue, Tickets and Entries are required.
type Options struct {
	Queue   room.Queue
	Tickets *token.Tickets
	Entries *token.Entries
	// Challenges issues and verifies join challenges (rooms with
	// joinChallengeBits); nil: a key of this process only, which serves tests
	// but not a deployment of many processes (apiapp sets the deployment's).
	Challenges *challenge.Challenges
	// Origins checks the per-room origin credential that consume and complete
	// require (Authorization: Bearer), so only the room's origin redeems tokens.
	Origins *token.Origins
	// Gate signs and reads the edge gate's session cookies (/.vestibule/enter
	// and leave, gate.go); nil: those routes answer 404.
	Gate *GateOptions

	// Booking is the engine of the booking routes (/api/events/…); nil: they
	// answer 404. Sessions issues the bookingSession consume hands the origin
	// and checks it on holds. Orders publishes order events; nil: they wait in
	// the outbox for the sweep (docs/BOOKING.md).
	Booking  *bookingdb.Engine
	Sessions *token.BookingSessions
	Orders   booking.Publisher

	AdminAuth AdminAuth
	AdminKey  string // required when AdminAuth is AdminKey

	// Edge, when set, makes every public route require CloudFront's origin
	// header (403 forbidden without it) and lets the enqueue limit key on the
	// viewer address CloudFront reports. nil (make dev, tests): no header is
	// required and the limit keys on the source address.
	Edge *EdgeGuard

	// DefaultRoom is the base for the fields an admin PUT of a new room leaves out.
	DefaultRoom room.Config
	// TickInterval is how often the admit loop ticks; pollAfterMs uses it to know
	// how many visitors one tick admits. Default 1 s.
	TickInterval time.Duration

	Clock  func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: discard
	// LogSample decides, per request, whether a successful (status below 400)
	// poll or status read writes its request line; nil: every one does.
	// SampleLog(f) logs the fraction f. Answers of 400 or more, and the other
	// routes, are always logged.
	LogSample func() bool
	// Jitter returns a factor in [0.9, 1.1] for pollAfterMs; nil: random.
	Jitter func() float64
}

// SampleLog returns an Options.LogSample that logs the fraction f (from 0 to 1)
// of the requests it is asked about, each decided by a random draw of its own:
// no lock, no counter shared between requests.
func SampleLog(f float64) func() bool {
	switch {
	case f >= 1:
		return func() bool { return true }
	case f > 0:
		return func() bool { return rand.Float64() < f }
	}
	return func() bool { return false }
}

// Handler serves every route of the API.
type Handler struct {
	o         Options
	adminHash [32]byte
}

// New returns a Handler. It panics if a required dependency is missing, which
// is a wiring bug found at start-up, never in a request.
func New(o Options) *Handler {
	if o.Queue == nil || o.Tickets == nil || o.Entries == nil {
		panic("api: Queue, Tickets and Entries are required")
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Jitter == nil {
		o.Jitter = func() float64 { return 0.9 + 0.2*rand.Float64() }
	}
	if o.Challenges == nil {
		secret := make([]byte, 32)
		crand.Read(secret) // never fails (crypto/rand, Go ≥ 1.24)
		o.Challenges = challenge.New(secret)
	}
	if o.TickInterval <= 0 {
		o.TickInterval = time.Second
	}
	if o.AdminAuth == "" {
		o.AdminAuth = AdminKey
	}
	return &Handler{o: o, adminHash: sha256.Sum256([]byte(o.AdminKey))}
}

// request is what a route handler sees of an API Gateway event.
type request struct {
	ev   *events.APIGatewayV2HTTPRequest
	room string     // the {room} path parameter, when the route has one
	path pathParams // every path parameter
	body []byte
	now  time.Time
	// viaEdge is true when the request carried CloudFront's origin header.
	viaEdge bool
}

// header returns a request header. API Gateway lower-cases header names in
// payload 2.0; the lookup tolerates other casings from hand-made events.
func (r *request) header(name string) string {
	if v, ok := r.ev.Headers[name]; ok {
		return v
	}
	for k, v := range r.ev.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func (r *request) bearer() (string, bool) {
	h := strings.TrimSpace(r.header("authorization"))
	const p = "bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	t := strings.TrimSpace(h[len(p):])
	return t, t != ""
}

// Handle is the Lambda handler: it never returns an error and never panics;
// every outcome is an HTTP response.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, _ error) {
	start := time.Now()
	method := ev.RequestContext.HTTP.Method
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	// The gate's routes (gate.go) answer a person: every error is a page.
	errorResponse := pageFor(path)
	routeName, roomID, eventID := "unknown", "", ""
	sampled := false // the route's successful requests are logged as a sample
	var cause error
	code := "" // the error's code, of an error answer
	defer func() {
		if p := recover(); p != nil {
			cause = fmt.Errorf("panic: %v", p)
			resp = errorResponse(&apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error"})
		}
		if sampled && resp.StatusCode < 400 && h.o.LogSample != nil && !h.o.LogSample() {
			return
		}
		attrs := []slog.Attr{
			slog.String("route", routeName),
			slog.String("method", method),
			slog.Int("status", resp.StatusCode),
			slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
		}
		if roomID != "" {
			attrs = append(attrs, slog.String("room", roomID))
		}
		if eventID != "" {
			attrs = append(attrs, slog.String("event", eventID))
		}
		if id := ev.RequestContext.RequestID; id != "" {
			attrs = append(attrs, slog.String("request_id", id))
		}
		level := slog.LevelInfo
		if resp.StatusCode >= 500 {
			level = slog.LevelError
			if cause != nil {
				// Engine and Redis errors carry no tokens; they are what an
				// operator needs to see, and only ever in the log.
				attrs = append(attrs, slog.String("error", cause.Error()))
			}
			if resp.StatusCode == http.StatusServiceUnavailable && code != "room_unrestorable" {
				attrs = append(attrs, metrics.RedisErrorAttrs(start)...)
			}
		}
		h.o.Logger.LogAttrs(ctx, level, "request", attrs...)
	}()

	rt, params, allowed := match(method, path)
	if rt == nil {
		if allowed != "" {
			e := &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", message: "method not allowed; allowed: " + allowed}
			resp = errorResponse(e)
			resp.Headers["Allow"] = allowed
			return resp, nil
		}
		return errorResponse(&apiError{status: http.StatusNotFound, code: "unknown_route", message: "no such route"}), nil
	}
	routeName, sampled = rt.key, rt.sampled
	r := &request{ev: &ev, room: params.room, path: params, now: h.o.Clock()}
	if !rt.Admin {
		// Public routes answer only what came through CloudFront (when deployed so).
		// Admin routes are IAM-signed to the API's own host, never through CloudFront.
		if e := h.checkEdge(ctx, r); e != nil {
			return errorResponse(e), nil
		}
	}
	body, aerr := decodeBody(&ev, bodyLimit(rt.key))
	if aerr != nil {
		return errorResponse(aerr), nil
	}
	r.body = body
	if rt.Admin {
		if e := h.checkAdmin(r); e != nil {
			return errorResponse(e), nil
		}
	}
	if rt.HasRoom() && !room.ValidRoomID(r.room) {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "invalid_room", message: "invalid room id"}), nil
	}
	// Only valid ids reach the log: the raw path segments are the client's,
	// of any length.
	roomID = r.room
	if booking.ValidEventID(r.path.event) {
		eventID = r.path.event
	}
	resp, err := rt.fn(h, ctx, r)
	if err != nil {
		e := toAPIError(err)
		cause, code = e.cause, e.code
		return errorResponse(e), nil
	}
	return resp, nil
}

// decodeBody returns the request's body, refusing one over limit bytes (MaxBody for most routes).
func decodeBody(ev *events.APIGatewayV2HTTPRequest, limit int) ([]byte, *apiError) {
	errTooLarge := errTooLarge
	if limit != MaxBody {
		errTooLarge = &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: fmt.Sprintf("request body over %d KiB", limit>>10)}
	}
	// Reject on the encoded length first, so a huge body is never decoded.
	if len(ev.Body) > limit*4/3+4 {
		return nil, errTooLarge
	}
	b := []byte(ev.Body)
	if ev.IsBase64Encoded {
		d, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, code: "bad_body", message: "body is not valid base64"}
		}
		b = d
	}
	if len(b) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

func (h *Handler) checkAdmin(r *request) *apiError {
	switch h.o.AdminAuth {
	case AdminIAM:
		a := r.ev.RequestContext.Authorizer
		if a != nil && a.IAM != nil && (a.IAM.UserARN != "" || a.IAM.CallerID != "" || a.IAM.AccountID != "") {
			return nil
		}
	case AdminKey:
		got, ok := r.bearer()
		// Compare digests so the comparison takes the same time whatever the
		// lengths; an empty configured key never matches (wiring refuses it anyway).
		sum := sha256.Sum256([]byte(got))
		if ok && h.o.AdminKey != "" && subtle.ConstantTimeCompare(sum[:], h.adminHash[:]) == 1 {
			return nil
		}
	}
	return &apiError{status: http.StatusUnauthorized, code: "unauthorized", message: "admin credentials missing or invalid"}
}
