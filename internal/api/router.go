package api

import (
	"maps"
	"slices"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// route is one entry of the route table with its handler.
type route struct {
	routes.Route
	fn httpapi.HandlerFunc
	// segs is Path split at "/" and key is Key(), made once, not on every request.
	segs []string
	key  string
}

// bind is the router's view of routes.All, or of the routes of function
// when it is not "": each route with the handler one of the products gives
// it. A product keys its handlers by the routes themselves
// (routes.RoomEnqueue…), so a path is spelled once; a route without a
// handler, a handler for a route not in the table (or of another function),
// or a route two products claim is a wiring bug that stops the program at
// start-up (and every test).
func bind(function string, products ...map[routes.Route]httpapi.HandlerFunc) []route {
	handlers := map[routes.Route]httpapi.HandlerFunc{}
	for _, p := range products {
		for r := range p {
			if _, dup := handlers[r]; dup {
				panic("api: two handlers for " + r.Key())
			}
		}
		maps.Copy(handlers, p)
	}
	var t []route
	for _, r := range routes.All {
		if function != "" && r.Function != function {
			continue
		}
		fn, ok := handlers[r]
		if !ok {
			panic("api: no handler for " + r.Key())
		}
		delete(handlers, r)
		t = append(t, route{r, fn, strings.Split(r.Path, "/"), r.Key()})
	}
	if len(handlers) > 0 {
		extra := slices.Collect(maps.Keys(handlers))
		if function != "" {
			panic("api: a handler for " + extra[0].Key() + ", which is not a route of " + function)
		}
		panic("api: a handler for " + extra[0].Key() + ", which routes.All lacks")
	}
	return t
}

// match finds the route of method and path in t. When the path matches but
// the method does not, it returns nil and the allowed methods.
func match(t []route, method, path string) (*route, httpapi.PathParams, string) {
	segs := strings.Split(path, "/")
	var allowed []string
	for i := range t {
		rt := &t[i]
		param, ok := matchPath(rt.segs, segs)
		if !ok {
			continue
		}
		if rt.Method == method || rt.Method == routes.Any {
			return rt, param, ""
		}
		allowed = append(allowed, rt.Method)
	}
	return nil, httpapi.PathParams{}, strings.Join(allowed, ", ")
}

// matchPath matches segs against a pattern's segments (ps), whose "{name}"
// segments capture any non-empty segment, and whose last segment "{path+}"
// captures the rest of the path as sent, slashes and all (it may be empty).
func matchPath(ps []string, segs []string) (httpapi.PathParams, bool) {
	var out httpapi.PathParams
	if n := len(ps); n > 0 && ps[n-1] == "{path+}" {
		if len(segs) < n {
			return out, false
		}
		out.Rest = strings.Join(segs[n-1:], "/")
		ps, segs = ps[:n-1], segs[:n-1]
	}
	if len(ps) != len(segs) {
		return out, false
	}
	for i, p := range ps {
		var dst *string
		switch p {
		case "{room}":
			dst = &out.Room
		case "{event}":
			dst = &out.Event
		case "{token}":
			dst = &out.Token
		case "{order}":
			dst = &out.Order
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
