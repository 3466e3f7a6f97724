package routes_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/routes"
)

// root is the module root, two folders up from this package.
var root = filepath.Join("..", "..")

// docsTable reads docs/API.md's table of functions and their routes, as
// "METHOD /path" -> function.
func docsTable(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z]+)` \\| (.*)\\|$")
	key := regexp.MustCompile("`((?:GET|POST|PUT|DELETE|ANY) /[^`]*)`")
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, k := range key.FindAllStringSubmatch(m[2], -1) {
			if prev, dup := out[k[1]]; dup {
				t.Errorf("docs/API.md gives %s to both %s and %s", k[1], prev, m[1])
			}
			out[k[1]] = m[1]
		}
	}
	return out
}

// The route table of docs/API.md is the code's: the same routes, each with
// the same function.
func TestDocsListTheRouteTable(t *testing.T) {
	docs := docsTable(t)
	code := map[string]string{}
	for _, r := range routes.All {
		if _, dup := code[r.Key()]; dup {
			t.Errorf("%s twice in routes.All", r.Key())
		}
		code[r.Key()] = r.Function
	}
	for k, fn := range code {
		if docs[k] != fn {
			t.Errorf("%s: code sends it to %q, docs/API.md to %q", k, fn, docs[k])
		}
	}
	for k := range docs {
		if _, ok := code[k]; !ok {
			t.Errorf("docs/API.md lists %s, which the code does not serve", k)
		}
	}
}

// Every function a route names is a Lambda of functions/, and every route's
// path is one the router can match.
func TestRoutesNameRealFunctions(t *testing.T) {
	var fns []string
	for _, r := range routes.All {
		if !slices.Contains(fns, r.Function) {
			fns = append(fns, r.Function)
		}
		if _, err := os.Stat(filepath.Join(root, "functions", r.Function, "main.go")); err != nil {
			t.Errorf("%s: function %q has no functions/%s/main.go", r.Key(), r.Function, r.Function)
		}
		if !(strings.HasPrefix(r.Path, "/api/") || strings.HasPrefix(r.Path, routes.GatePrefix) || strings.HasPrefix(r.Path, routes.OIDCPrefix)) ||
			r.HasRoom() != strings.Contains(r.Path, "/{room}") {
			t.Errorf("%s: path outside /api/, %s and %s, or a malformed {room} segment", r.Key(), routes.GatePrefix, routes.OIDCPrefix)
		}
		if strings.HasPrefix(r.Path, routes.OIDCPrefix) && (!strings.HasPrefix(r.Path, routes.OIDCPrefix+"{room}/") || r.Admin || r.Function != routes.Consume) {
			t.Errorf("%s: an OIDC route is the room's issuer's (%s{room}/…), public, on the consume function", r.Key(), routes.OIDCPrefix)
		}
		if strings.HasPrefix(r.Path, routes.GatePrefix) && (r.HasRoom() || r.Admin || r.Function != routes.Consume) {
			t.Errorf("%s: the gate's routes carry no room, are not admin routes, and are the consume function's", r.Key())
		}
		for _, seg := range strings.Split(r.Path, "/") {
			if strings.HasPrefix(seg, "{") && !slices.Contains([]string{"{room}", "{event}", "{token}", "{order}", "{path+}"}, seg) {
				t.Errorf("%s: parameter %s, which the router does not capture", r.Key(), seg)
			}
		}
		if r.Admin != strings.HasPrefix(r.Path, "/api/admin/") {
			t.Errorf("%s: admin routes are exactly those under /api/admin/", r.Key())
		}
	}
	sort.Strings(fns)
	if want := []string{routes.Admin, routes.Booking, routes.Consume, routes.Enqueue, routes.Poll, routes.Status}; !slices.Equal(fns, want) {
		t.Errorf("functions with routes %v, want %v", fns, want)
	}
}
