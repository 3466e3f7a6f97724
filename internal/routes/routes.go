// Package routes is the HTTP API's route table: every route's method, path,
// the Lambda function API Gateway sends it to, and whether it is an admin
// (IAM-authorised) route. The API's router (internal/api) binds a handler to
// each route, and the CDK app (infra/) makes one API Gateway route per entry,
// so the two cannot disagree; docs/API.md lists the same table, and a test
// checks it.
package routes

import "strings"

// The Lambda functions behind the routes (functions/<name>/main.go). admit has
// no route: EventBridge invokes it.
const (
	Enqueue = "enqueue"
	Poll    = "poll"
	Status  = "status"
	Consume = "consume"
	Admin   = "admin"
	Booking = "booking" // the booking kit: events, holds, orders (docs/BOOKING.md)
)

// IdempotencyHeader carries a booking confirm's idempotency key; the API reads
// it and CloudFront forwards it to the API.
const IdempotencyHeader = "Idempotency-Key"

// Route is one method + path. A "{room}" segment captures the room id;
// "{event}", "{token}" (a hold's fencing token) and "{order}" capture the
// booking routes' ids.
type Route struct {
	Method   string // GET, POST, PUT, DELETE
	Path     string // e.g. /api/rooms/{room}/enqueue; under /api/ or, for the edge gate, /.vestibule/
	Function string // the function API Gateway sends it to
	Admin    bool   // IAM-authorised in AWS, the admin key locally
}

// Key is the API Gateway route key, "METHOD /path".
func (r Route) Key() string { return r.Method + " " + r.Path }

// HasRoom reports whether the path carries a room id.
func (r Route) HasRoom() bool { return strings.Contains(r.Path, "{room}") }

// All is the whole API, in the order docs/API.md lists it.
var All = []Route{
	{"POST", "/api/rooms/{room}/enqueue", Enqueue, false},
	{"GET", "/api/rooms/{room}/poll", Poll, false},
	{"POST", "/api/rooms/{room}/leave", Poll, false},
	{"GET", "/api/rooms/{room}/status", Status, false},
	{"GET", "/api/jwks.json", Status, false},
	{"POST", "/api/consume", Consume, false},
	{"POST", "/api/complete", Consume, false},
	{"PUT", "/api/admin/rooms/{room}", Admin, true},
	{"GET", "/api/admin/rooms/{room}", Admin, true},
	{"GET", "/api/admin/rooms", Admin, true},
	{"POST", "/api/admin/rooms/{room}/drain", Admin, true},
	{"GET", "/api/admin/rooms/{room}/history", Admin, true},
	{"DELETE", "/api/admin/rooms/{room}", Admin, true},
	{"GET", "/api/admin/rooms/{room}/log", Admin, true},
	{"GET", "/api/admin/rooms/{room}/schedule", Admin, true},
	{"POST", "/api/admin/rooms/{room}/schedule", Admin, true},
	{"POST", "/api/admin/rooms/{room}/schedule/cancel", Admin, true},
	{"GET", "/api/admin/rooms/{room}/report", Admin, true},
	{"POST", "/api/admin/rooms/{room}/invitations", Admin, true},
	{"GET", "/api/admin/rooms/{room}/invitations", Admin, true},
	{"POST", "/api/admin/rooms/{room}/invitations/revoke", Admin, true},
	{"GET", "/api/admin/rooms/{room}/visitors", Admin, true},
	{"POST", "/api/admin/rooms/{room}/visitors/restore", Admin, true},
	{"GET", "/api/events/{event}", Booking, false},
	{"POST", "/api/events/{event}/holds", Booking, false},
	{"POST", "/api/events/{event}/holds/{token}/confirm", Booking, false},
	{"POST", "/api/events/{event}/holds/{token}/extend", Booking, false},
	{"POST", "/api/events/{event}/holds/{token}/release", Booking, false},
	{"POST", "/api/events/{event}/orders/{order}/cancel", Booking, false},
	{"PUT", "/api/admin/events/{event}", Booking, true},
	{"GET", "/api/admin/events/{event}", Booking, true},
	{"GET", "/api/admin/events/{event}/orders", Booking, true},
	{"POST", "/api/admin/events/{event}/rebuild", Booking, true},
	// The edge gate's routes (docs/GATE.md): on a protected site's distribution
	// CloudFront sends /.vestibule/* to the API. HTML for a person, not JSON.
	{"POST", "/.vestibule/enter", Consume, false},
	{"POST", "/.vestibule/leave", Consume, false},
	{"GET", "/.vestibule/leave", Consume, false},
	{"GET", "/.vestibule/renew", Consume, false},
}

// GatePrefix is where the edge gate's routes live on a protected site; every
// other route is under /api/.
const GatePrefix = "/.vestibule/"
