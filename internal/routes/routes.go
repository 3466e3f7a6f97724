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
// booking routes' ids; a last segment "{path+}" captures the rest of the
// path, slashes and all (API Gateway's greedy variable).
type Route struct {
	Method   string // GET, POST, PUT, DELETE; Any for every method
	Path     string // e.g. /api/rooms/{room}/enqueue; under /api/, /oidc/ (OIDCPrefix) or, for the edge gate, /.vestibule/
	Function string // the function API Gateway sends it to
	Admin    bool   // IAM-authorised in AWS, the admin key locally
	// Sampled marks a hot route (a waiting visitor polls every few seconds,
	// the page reads its room's status): its successful requests log their
	// line only as a sample; its errors, and every request of the other
	// routes, always do.
	Sampled bool
	// MaxBody is the largest body (decoded) the route accepts, larger gets
	// 413; 0: DefaultMaxBody.
	MaxBody int
}

// DefaultMaxBody is the largest request body most routes accept (8 KiB).
const DefaultMaxBody = 8 << 10

// MaxEventBody is the body limit of an event's definition and rebuild: a
// venue's seat list is larger than the other routes' limit, about 80,000
// seats of 10-character names.
const MaxEventBody = 1 << 20

// BodyLimit is the route's MaxBody, or DefaultMaxBody.
func (r Route) BodyLimit() int {
	if r.MaxBody > 0 {
		return r.MaxBody
	}
	return DefaultMaxBody
}

// Key is the API Gateway route key, "METHOD /path".
func (r Route) Key() string { return r.Method + " " + r.Path }

// HasRoom reports whether the path carries a room id.
func (r Route) HasRoom() bool { return strings.Contains(r.Path, "{room}") }

// The routes, each by the name its product binds its handler to (a map
// keyed by the Route itself: a route's method and path are spelled here
// only).
var (
	RoomEnqueue           = Route{Method: "POST", Path: "/api/rooms/{room}/enqueue", Function: Enqueue}
	RoomPoll              = Route{Method: "GET", Path: "/api/rooms/{room}/poll", Function: Poll, Sampled: true}
	RoomLeave             = Route{Method: "POST", Path: "/api/rooms/{room}/leave", Function: Poll}
	RoomStatus            = Route{Method: "GET", Path: "/api/rooms/{room}/status", Function: Status, Sampled: true}
	RoomNotify            = Route{Method: "POST", Path: "/api/rooms/{room}/notify", Function: Poll}
	RoomWithdraw          = Route{Method: "DELETE", Path: "/api/rooms/{room}/notify", Function: Poll}
	JWKS                  = Route{Method: "GET", Path: "/api/jwks.json", Function: Status}
	EntryConsume          = Route{Method: "POST", Path: "/api/consume", Function: Consume}
	EntryComplete         = Route{Method: "POST", Path: "/api/complete", Function: Consume}
	AdminPutRoom          = Route{Method: "PUT", Path: "/api/admin/rooms/{room}", Function: Admin, Admin: true}
	AdminGetRoom          = Route{Method: "GET", Path: "/api/admin/rooms/{room}", Function: Admin, Admin: true}
	AdminListRooms        = Route{Method: "GET", Path: "/api/admin/rooms", Function: Admin, Admin: true}
	AdminDrainRoom        = Route{Method: "POST", Path: "/api/admin/rooms/{room}/drain", Function: Admin, Admin: true}
	AdminClaimRegion      = Route{Method: "POST", Path: "/api/admin/rooms/{room}/region", Function: Admin, Admin: true}
	AdminRoomHistory      = Route{Method: "GET", Path: "/api/admin/rooms/{room}/history", Function: Admin, Admin: true}
	AdminDeleteRoom       = Route{Method: "DELETE", Path: "/api/admin/rooms/{room}", Function: Admin, Admin: true}
	AdminRoomLog          = Route{Method: "GET", Path: "/api/admin/rooms/{room}/log", Function: Admin, Admin: true}
	AdminSchedule         = Route{Method: "GET", Path: "/api/admin/rooms/{room}/schedule", Function: Admin, Admin: true}
	AdminPlan             = Route{Method: "POST", Path: "/api/admin/rooms/{room}/schedule", Function: Admin, Admin: true}
	AdminUnplan           = Route{Method: "POST", Path: "/api/admin/rooms/{room}/schedule/cancel", Function: Admin, Admin: true}
	AdminReport           = Route{Method: "GET", Path: "/api/admin/rooms/{room}/report", Function: Admin, Admin: true}
	AdminCreateInvitation = Route{Method: "POST", Path: "/api/admin/rooms/{room}/invitations", Function: Admin, Admin: true}
	AdminShowInvitation   = Route{Method: "GET", Path: "/api/admin/rooms/{room}/invitations", Function: Admin, Admin: true}
	AdminRevokeInvitation = Route{Method: "POST", Path: "/api/admin/rooms/{room}/invitations/revoke", Function: Admin, Admin: true}
	AdminVisitor          = Route{Method: "GET", Path: "/api/admin/rooms/{room}/visitors", Function: Admin, Admin: true}
	AdminRestorePlace     = Route{Method: "POST", Path: "/api/admin/rooms/{room}/visitors/restore", Function: Admin, Admin: true}
	AdminTakeNotice       = Route{Method: "POST", Path: "/api/admin/rooms/{room}/notices/take", Function: Admin, Admin: true}
	AdminAckNotice        = Route{Method: "POST", Path: "/api/admin/rooms/{room}/notices/ack", Function: Admin, Admin: true}
	EventView             = Route{Method: "GET", Path: "/api/events/{event}", Function: Booking}
	EventHold             = Route{Method: "POST", Path: "/api/events/{event}/holds", Function: Booking}
	HoldConfirm           = Route{Method: "POST", Path: "/api/events/{event}/holds/{token}/confirm", Function: Booking}
	HoldExtend            = Route{Method: "POST", Path: "/api/events/{event}/holds/{token}/extend", Function: Booking}
	HoldRelease           = Route{Method: "POST", Path: "/api/events/{event}/holds/{token}/release", Function: Booking}
	OrderCancel           = Route{Method: "POST", Path: "/api/events/{event}/orders/{order}/cancel", Function: Booking}
	AdminPutEvent         = Route{Method: "PUT", Path: "/api/admin/events/{event}", Function: Booking, Admin: true, MaxBody: MaxEventBody}
	AdminGetEvent         = Route{Method: "GET", Path: "/api/admin/events/{event}", Function: Booking, Admin: true}
	AdminEventOrders      = Route{Method: "GET", Path: "/api/admin/events/{event}/orders", Function: Booking, Admin: true}
	AdminRebuildEvent     = Route{Method: "POST", Path: "/api/admin/events/{event}/rebuild", Function: Booking, Admin: true, MaxBody: MaxEventBody}
	AdminCloseEvent       = Route{Method: "POST", Path: "/api/admin/events/{event}/close", Function: Booking, Admin: true}
	AdminListEvents       = Route{Method: "GET", Path: "/api/admin/events", Function: Booking, Admin: true}
	// The edge gate's routes (docs/GATE.md): on a protected site's distribution
	// CloudFront sends /.vestibule/* to the API. HTML for a person, not JSON.
	GateEnter     = Route{Method: "POST", Path: "/.vestibule/enter", Function: Consume}
	GateLeave     = Route{Method: "POST", Path: "/.vestibule/leave", Function: Consume}
	GateLeavePage = Route{Method: "GET", Path: "/.vestibule/leave", Function: Consume}
	GateRenew     = Route{Method: "GET", Path: "/.vestibule/renew", Function: Consume}
	// The forward-auth check (docs/GATE.md, "Forward-auth"): a reverse proxy
	// asks it about every request to a protected site, so its successes are
	// logged as a sample, as polls are. Any method, since Envoy's ext_authz
	// sends the original's; {path+} is the proxy's name and, for Envoy, the
	// original path after it.
	GateCheck = Route{Method: Any, Path: "/api/gate/check/{path+}", Function: Consume, Sampled: true}
	// The room as an OpenID Connect provider (docs/GATE.md, "OpenID Connect"):
	// its issuer is <waiting room>/oidc/{room}, on the waiting room's own
	// distribution. authorize and continue answer a person (HTML errors), token
	// and userinfo a relying party (OAuth's JSON errors).
	OIDCDiscovery     = Route{Method: "GET", Path: "/oidc/{room}/.well-known/openid-configuration", Function: Consume}
	OIDCAuthorize     = Route{Method: "GET", Path: "/oidc/{room}/authorize", Function: Consume}
	OIDCAuthorizePost = Route{Method: "POST", Path: "/oidc/{room}/authorize", Function: Consume}
	OIDCContinue      = Route{Method: "POST", Path: "/oidc/{room}/continue", Function: Consume}
	OIDCToken         = Route{Method: "POST", Path: "/oidc/{room}/token", Function: Consume}
	OIDCUserinfo      = Route{Method: "GET", Path: "/oidc/{room}/userinfo", Function: Consume}
	OIDCUserinfoPost  = Route{Method: "POST", Path: "/oidc/{room}/userinfo", Function: Consume}
)

// Any is the method of a route that takes every method.
const Any = "ANY"

// All is the whole API, in the order docs/API.md lists it.
var All = []Route{
	RoomEnqueue,
	RoomPoll,
	RoomLeave,
	RoomStatus,
	RoomNotify,
	RoomWithdraw,
	JWKS,
	EntryConsume,
	EntryComplete,
	AdminPutRoom,
	AdminGetRoom,
	AdminListRooms,
	AdminDrainRoom,
	AdminClaimRegion,
	AdminRoomHistory,
	AdminDeleteRoom,
	AdminRoomLog,
	AdminSchedule,
	AdminPlan,
	AdminUnplan,
	AdminReport,
	AdminCreateInvitation,
	AdminShowInvitation,
	AdminRevokeInvitation,
	AdminVisitor,
	AdminRestorePlace,
	AdminTakeNotice,
	AdminAckNotice,
	EventView,
	EventHold,
	HoldConfirm,
	HoldExtend,
	HoldRelease,
	OrderCancel,
	AdminPutEvent,
	AdminGetEvent,
	AdminEventOrders,
	AdminRebuildEvent,
	AdminCloseEvent,
	AdminListEvents,
	GateEnter,
	GateLeave,
	GateLeavePage,
	GateRenew,
	GateCheck,
	OIDCDiscovery,
	OIDCAuthorize,
	OIDCAuthorizePost,
	OIDCContinue,
	OIDCToken,
	OIDCUserinfo,
	OIDCUserinfoPost,
}

// GatePrefix is where the edge gate's routes live on a protected site; the
// OIDC provider's are under OIDCPrefix; every other route is under /api/.
const GatePrefix = "/.vestibule/"

// OIDCPrefix is where the OIDC provider's routes live, on the waiting room's
// host.
const OIDCPrefix = "/oidc/"
