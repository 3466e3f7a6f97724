package api

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

type handlerFunc func(h *Handler, ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error)

// route is one method + path pattern. A "{room}" segment captures the room id.
type route struct {
	method  string
	pattern string
	name    string // the API Gateway route key, used in logs
	hasRoom bool
	admin   bool
	fn      handlerFunc
}

// routes is the whole API, exactly as docs/API.md lists it.
var routes []route

func init() {
	add := func(method, pattern string, admin bool, fn handlerFunc) {
		routes = append(routes, route{
			method: method, pattern: pattern, name: method + " " + pattern,
			hasRoom: strings.Contains(pattern, "{room}"), admin: admin, fn: fn,
		})
	}
	add("POST", "/api/rooms/{room}/enqueue", false, (*Handler).enqueue)
	add("GET", "/api/rooms/{room}/poll", false, (*Handler).poll)
	add("POST", "/api/rooms/{room}/leave", false, (*Handler).leave)
	add("GET", "/api/rooms/{room}/status", false, (*Handler).status)
	add("POST", "/api/consume", false, (*Handler).consume)
	add("POST", "/api/complete", false, (*Handler).complete)
	add("GET", "/api/jwks.json", false, (*Handler).jwks)
	add("PUT", "/api/admin/rooms/{room}", true, (*Handler).putRoom)
	add("GET", "/api/admin/rooms/{room}", true, (*Handler).getRoom)
	add("GET", "/api/admin/rooms", true, (*Handler).listRooms)
}

// RouteKeys returns the API Gateway route keys ("METHOD /path/{room}") of every
// route, for infrastructure code and tests.
func RouteKeys() []string {
	keys := make([]string, len(routes))
	for i, rt := range routes {
		keys[i] = rt.name
	}
	return keys
}

// match finds the route of method and path. When the path matches but the
// method does not, it returns nil and the allowed methods.
func match(method, path string) (*route, string, string) {
	segs := strings.Split(path, "/")
	var allowed []string
	for i := range routes {
		rt := &routes[i]
		param, ok := matchPath(rt.pattern, segs)
		if !ok {
			continue
		}
		if rt.method == method {
			return rt, param, ""
		}
		allowed = append(allowed, rt.method)
	}
	return nil, "", strings.Join(allowed, ", ")
}

func matchPath(pattern string, segs []string) (string, bool) {
	ps := strings.Split(pattern, "/")
	if len(ps) != len(segs) {
		return "", false
	}
	param := ""
	for i, p := range ps {
		if p == "{room}" {
			if segs[i] == "" {
				return "", false
			}
			param = segs[i]
			continue
		}
		if p != segs[i] {
			return "", false
		}
	}
	return param, true
}
