// Package api is Vestibule's HTTP API: one router that turns API Gateway HTTP
// API (payload 2.0) requests into calls on the products behind it, and their
// results and errors into responses. It composes its products, each in a
// package of its own that defines what it needs of the engines:
//
//   - queueapi: the waiting room (enqueue, poll, leave, status, consume,
//     complete, jwks) and the admin routes of rooms;
//   - bookingapi: the booking kit's events, holds and orders;
//   - gateapi: the edge gate's HTML routes under /.vestibule/;
//   - noticeapi: the notices of a visitor's turn (sign-up, withdrawal, and
//     the notify function's take and ack);
//   - oidcapi: the room as an OpenID Connect provider, under /oidc/.
//
// They share httpapi (the request, the JSON answers, the one error table).
// This package binds each route of internal/routes to its product's handler
// (router.go) and runs every request through one middleware chain (chain.go):
// recovery, the request log, the edge and admin checks, the body limit.
//
// A Handler serves a Part of the table: All of it (the local stack, the
// simulator, the bench) or one Lambda function's routes (EnqueuePart,
// PollPart…: those routes.Route.Function names, the ones API Gateway sends
// it), so each function's bootstrap links the handlers of its own routes
// only; a route of another function answers 404 there. The domain packages
// never import events.
package api

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/bookingapi"
	"github.com/vestibule-dev/vestibule/internal/api/gateapi"
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/noticeapi"
	"github.com/vestibule-dev/vestibule/internal/api/oidcapi"
	"github.com/vestibule-dev/vestibule/internal/api/queueapi"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// MaxBody is the largest request body most routes accept (decoded); larger
// gets 413 (routes.Route.MaxBody).
const MaxBody = routes.DefaultMaxBody

// MaxEventBody is the body limit of an event's definition and rebuild.
const MaxEventBody = routes.MaxEventBody

// TicketTTL is how long a ticket stays valid (queueapi.TicketTTL).
const TicketTTL = queueapi.TicketTTL

// RetryAfterSeconds is the Retry-After of 503 and 429 responses (httpapi.RetryAfterSeconds).
const RetryAfterSeconds = httpapi.RetryAfterSeconds

// AdminAuth is how admin routes are authenticated (config.AdminAuth).
type AdminAuth = config.AdminAuth

// The admin authentication modes, as config defines them.
const (
	AdminIAM = config.AdminIAM
	AdminKey = config.AdminKey
)

// GateOptions are what the gate's routes need: the cookie keys and how to
// write the cookie (gateapi.Cookies).
type GateOptions = gateapi.Cookies

// Queue is the room engine, as the queue API, the gate's routes and the OIDC
// provider use it (durable.Queue).
type Queue interface {
	queueapi.Engine
	gateapi.Engine
	noticeapi.Engine
	oidcapi.Engine
}

// NoticeOptions are what the notices' routes need (noticeapi): the sealer
// of addresses (nil: the deployment sends no notices), the addresses the
// deployment takes, and the hash of an address for its sign-up limit.
type NoticeOptions struct {
	Sealer *notice.Sealer
	Policy notice.Policy
	Hasher notice.Hasher
}

// Options are the Handler's dependencies. Queue, Tickets and Entries are required.
type Options struct {
	Queue   Queue
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
	// and leave, gateapi); nil: those routes answer 404.
	Gate *GateOptions
	// OIDC seals the OpenID Connect provider's requests, codes and access
	// tokens and signs its ID tokens (oidcapi); nil: its routes answer 404.
	OIDC *token.OIDC

	// Booking is the engine of the booking routes (/api/events/…); nil: they
	// answer 404. Sessions issues the bookingSession consume hands the origin
	// and checks it on holds. Orders publishes order events; nil: they wait in
	// the outbox for the sweep (docs/BOOKING.md).
	Booking  bookingapi.Engine
	Sessions *token.BookingSessions
	Orders   booking.Publisher

	AdminAuth AdminAuth
	AdminKey  string // required when AdminAuth is AdminKey

	// Edge, when set, makes every public route require CloudFront's origin
	// header (403 forbidden without it) and lets the enqueue limit key on the
	// viewer address CloudFront reports. nil (make dev, tests): no header is
	// required and the limit keys on the source address.
	Edge *EdgeGuard

	// Notices, when set, lets visitors sign up for a notice of their turn
	// (docs/ENGINE.md, "Notices"); nil: the routes answer 409 notices_off.
	Notices *NoticeOptions

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

// Handler serves the routes of a Part.
type Handler struct {
	o         Options
	adminHash [32]byte
	table     []route // the part's routes, bound to the products' handlers
}

// New returns a Handler of every route (All). It panics if a required
// dependency is missing, which is a wiring bug found at start-up, never in a
// request.
func New(o Options) *Handler { return NewPart(o, All()) }

// NewPart returns a Handler of part's routes; it panics as New does, and
// when the part's handlers are not exactly its routes (bind).
func NewPart(o Options, part Part) *Handler {
	if o.Queue == nil || o.Tickets == nil || o.Entries == nil {
		panic("api: Queue, Tickets and Entries are required")
	}
	o = withDefaults(o)
	return &Handler{o: o, adminHash: sha256.Sum256([]byte(o.AdminKey)),
		table: bind(part.Function, part.handlers(newProducts(o))...)}
}

// products are the products' APIs over the options. Making them costs
// nothing; what a program links is the handlers its Part binds.
type products struct {
	queue   *queueapi.API
	booking *bookingapi.API
	gate    *gateapi.API
	notices *noticeapi.API
	oidc    *oidcapi.API
}

func newProducts(o Options) *products {
	var q *queueapi.API
	b := bookingapi.New(bookingapi.Options{Booking: o.Booking, Sessions: o.Sessions, Orders: o.Orders,
		Origins: o.Origins, Logger: o.Logger, Audit: func(ctx context.Context, r *httpapi.Request, roomID string, a room.AuditEntry) {
			q.Record(ctx, r, roomID, a) // the rooms' audit trail, in the event's room's log
		}})
	no := noticeapi.Options{Queue: o.Queue, Tickets: o.Tickets}
	if o.Notices != nil {
		no.Sealer, no.Policy, no.Hasher = o.Notices.Sealer, o.Notices.Policy, o.Notices.Hasher
	}
	q = queueapi.New(queueapi.Options{Queue: o.Queue, Tickets: o.Tickets, Entries: o.Entries,
		Challenges: o.Challenges, Origins: o.Origins, Sessions: o.Sessions, EndHolds: b.EndHolds, Orders: o.Booking,
		AdminAuth: o.AdminAuth, DefaultRoom: o.DefaultRoom, TickInterval: o.TickInterval,
		Clock: o.Clock, Logger: o.Logger, Jitter: o.Jitter, Notices: notice.OfferOf(no.Sealer, no.Policy)})
	return &products{queue: q, booking: b, notices: noticeapi.New(no),
		gate: gateapi.New(gateapi.Options{Cookies: o.Gate, Queue: o.Queue, Entries: o.Entries, EndHolds: b.EndHolds}),
		oidc: oidcapi.New(oidcapi.Options{Queue: o.Queue, Entries: o.Entries, Origins: o.Origins, OIDC: o.OIDC})}
}

// handlers are a product's routes bound to their handlers.
type handlers = map[routes.Route]httpapi.HandlerFunc

// A Part is the routes one Handler serves: every route, or the routes of one
// Lambda function (routes.Route.Function). Each is a function of its own,
// not a table of them, so that a program links only the handlers of the
// parts it names.
type Part struct {
	// Function is the function whose routes the part serves; "" for every route.
	Function string
	handlers func(*products) []handlers
}

// All is every route of the table: the local stack, the simulator, the bench.
func All() Part {
	return Part{"", func(p *products) []handlers {
		return []handlers{p.queue.Handlers(), p.booking.Handlers(), p.gate.Handlers(), p.notices.Handlers(), p.oidc.Handlers()}
	}}
}

// EnqueuePart is the enqueue function's route: a visitor's join.
func EnqueuePart() Part {
	return Part{routes.Enqueue, func(p *products) []handlers { return []handlers{p.queue.EnqueueHandlers()} }}
}

// PollPart is the poll function's routes: poll and leave, and the notices' sign-up and withdrawal.
func PollPart() Part {
	return Part{routes.Poll, func(p *products) []handlers {
		return []handlers{p.queue.PollHandlers(), p.notices.PollHandlers()}
	}}
}

// StatusPart is the status function's routes: a room's status and the token keys.
func StatusPart() Part {
	return Part{routes.Status, func(p *products) []handlers { return []handlers{p.queue.StatusHandlers()} }}
}

// ConsumePart is the consume function's routes: the origin's consume and
// complete, the edge gate's and the OIDC provider's.
func ConsumePart() Part {
	return Part{routes.Consume, func(p *products) []handlers {
		return []handlers{p.queue.ConsumeHandlers(), p.gate.Handlers(), p.oidc.Handlers()}
	}}
}

// AdminPart is the admin function's routes: the rooms' admin routes and the notify function's take and ack.
func AdminPart() Part {
	return Part{routes.Admin, func(p *products) []handlers {
		return []handlers{p.queue.AdminHandlers(), p.notices.AdminHandlers()}
	}}
}

// BookingPart is the booking function's routes: the booking kit's.
func BookingPart() Part {
	return Part{routes.Booking, func(p *products) []handlers { return []handlers{p.booking.Handlers()} }}
}

// withDefaults fills in the options left out.
func withDefaults(o Options) Options {
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
	return o
}
