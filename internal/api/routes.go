package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/routes"
)

type handlerFunc func(h *Handler, ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error)

// route is one entry of the route table with its handler.
type route struct {
	routes.Route
	fn handlerFunc
	// segs is Path split at "/" and key is Key(), made once, not on every request.
	segs []string
	key  string
	// sampled: a successful request logs its line only as Options.LogSample's
	// sample (sampledRoutes).
	sampled bool
}

// sampledRoutes are the hot routes: a waiting visitor polls every few seconds,
// and the page reads its room's status. Their successful requests are logged
// as a sample; their errors, and every request of the other routes (joins,
// consumes, admin calls, bookings), always are.
var sampledRoutes = map[string]bool{
	"GET /api/rooms/{room}/poll":   true,
	"GET /api/rooms/{room}/status": true,
}

// handlers binds each route of routes.All, by key, to its handler.
var handlers = map[string]handlerFunc{
	"POST /api/rooms/{room}/enqueue":      (*Handler).enqueue,
	"GET /api/rooms/{room}/poll":          (*Handler).poll,
	"POST /api/rooms/{room}/leave":        (*Handler).leave,
	"GET /api/rooms/{room}/status":        (*Handler).status,
	"POST /api/consume":                   (*Handler).consume,
	"POST /api/complete":                  (*Handler).complete,
	"GET /api/jwks.json":                  (*Handler).jwks,
	"PUT /api/admin/rooms/{room}":         (*Handler).putRoomAudited, // audit.go
	"DELETE /api/admin/rooms/{room}":      (*Handler).deleteRoom,     // admin_delete.go
	"GET /api/admin/rooms/{room}/log":     (*Handler).roomLog,        // audit.go
	"GET /api/admin/rooms/{room}":         (*Handler).getRoom,
	"GET /api/admin/rooms":                (*Handler).listRooms,
	"POST /api/admin/rooms/{room}/drain":  (*Handler).drainRoomAudited, // audit.go
	"GET /api/admin/rooms/{room}/history": (*Handler).roomHistory,

	// The booking kit (booking.go).
	"GET /api/events/{event}":                        (*Handler).eventView,
	"POST /api/events/{event}/holds":                 (*Handler).holdSeats,
	"POST /api/events/{event}/holds/{token}/confirm": (*Handler).confirmHold,
	"POST /api/events/{event}/holds/{token}/extend":  (*Handler).extendHold,
	"GET /api/admin/events/{event}/orders":           (*Handler).eventOrders,
	"POST /api/events/{event}/holds/{token}/release": (*Handler).releaseHold,
	"POST /api/events/{event}/orders/{order}/cancel": (*Handler).cancelOrder,
	"PUT /api/admin/events/{event}":                  (*Handler).putEvent,
	"GET /api/admin/events/{event}":                  (*Handler).getEvent,
	"POST /.vestibule/enter":                         (*Handler).gateEnter,
	"POST /.vestibule/leave":                         (*Handler).gateLeave,
	"GET /.vestibule/leave":                          (*Handler).gateLeavePage,
	"GET /.vestibule/renew":                          (*Handler).gateRenew,
}

// table is the router's view of routes.All. A route without a handler, or a
// handler without a route, is a wiring bug that stops the program at start-up
// (and every test).
var table = func() []route {
	if len(handlers) != len(routes.All) {
		panic(fmt.Sprintf("api: %d handlers for %d routes", len(handlers), len(routes.All)))
	}
	t := make([]route, len(routes.All))
	for i, r := range routes.All {
		fn, ok := handlers[r.Key()]
		if !ok {
			panic("api: no handler for " + r.Key())
		}
		t[i] = route{r, fn, strings.Split(r.Path, "/"), r.Key(), sampledRoutes[r.Key()]}
	}
	return t
}()

// pathParams are the path's captured segments; each is "" when the route has
// no such parameter.
type pathParams struct {
	room, event, token, order string
}

// match finds the route of method and path. When the path matches but the
// method does not, it returns nil and the allowed methods.
func match(method, path string) (*route, pathParams, string) {
	segs := strings.Split(path, "/")
	var allowed []string
	for i := range table {
		rt := &table[i]
		param, ok := matchPath(rt.segs, segs)
		if !ok {
			continue
		}
		if rt.Method == method {
			return rt, param, ""
		}
		allowed = append(allowed, rt.Method)
	}
	return nil, pathParams{}, strings.Join(allowed, ", ")
}

// matchPath matches segs against a pattern's segments (ps), whose "{name}"
// segments capture any non-empty segment.
func matchPath(ps []string, segs []string) (pathParams, bool) {
	var out pathParams
	if len(ps) != len(segs) {
		return out, false
	}
	for i, p := range ps {
		var dst *string
		switch p {
		case "{room}":
			dst = &out.room
		case "{event}":
			dst = &out.event
		case "{token}":
			dst = &out.token
		case "{order}":
			dst = &out.order
		default:
			if p != segs[i] {
				return out, false
			}
			continue
		}
		if segs[i] == "" {
			return out, false
		}
		*dst = segs[i]
	}
	return out, true
}
