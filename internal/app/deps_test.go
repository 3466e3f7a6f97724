package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The engines over Redis fit the interfaces declared of them: held
// here, where the composition root joins them, so that durable links no Redis
// client (TestDurableLinksNoRedis).
var (
	_ room.Engine              = (*roomdb.Engine)(nil)
	_ bookingdb.Definitions    = durable.Definitions{}
	_ durable.EventDefinitions = bookingdb.Definitions(nil)
)

// durable keeps settings, heads and definitions in S3 or on disk: it links
// neither the Redis client nor the engines over it, only the interfaces it
// declares of them.
func TestDurableLinksNoRedis(t *testing.T) {
	const mod = "github.com/vestibule-dev/vestibule/"
	out, err := exec.Command("go", "list", "-deps", mod+"internal/durable").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), mod+"internal/durable\n") {
		t.Fatalf("go list -deps gave no durable package:\n%s", out)
	}
	for _, bad := range []string{"github.com/redis/go-redis", mod + "internal/roomdb\n", mod + "internal/bookingdb\n", mod + "lua\n"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("internal/durable links %s", strings.TrimSpace(bad))
		}
	}
}

// The admit function only ticks: it links neither the token library nor the
// Secrets Manager client (the composition root keeps them in app/apiapp).
func TestAdmitLinksNoTokensNorSecrets(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/vestibule-dev/vestibule/functions/admit").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), "github.com/vestibule-dev/vestibule/internal/admission") {
		t.Fatalf("go list -deps gave no admission package:\n%s", out)
	}
	for _, bad := range []string{"golang-jwt", "secretsmanager", "internal/token", "internal/api\n"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("functions/admit links %s", strings.TrimSpace(bad))
		}
	}
}

// No function links the SDK's config package (profiles, SSO, STS, instance
// metadata: about 1.8 MB of each bootstrap): a function's credentials are in
// its environment, which awsenv reads. The operator CLI does link it.
func TestFunctionsLinkNoSharedConfig(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/vestibule-dev/vestibule/functions/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), "github.com/vestibule-dev/vestibule/internal/awsenv") {
		t.Fatalf("go list -deps gave no awsenv package:\n%s", out)
	}
	for _, bad := range []string{"github.com/aws/aws-sdk-go-v2/config\n", "service/sso\n", "service/sts\n", "feature/ec2/imds\n"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("a function links %s", strings.TrimSpace(bad))
		}
	}
	out, err = exec.Command("go", "list", "-deps", "github.com/vestibule-dev/vestibule/cmd/vestibule").Output()
	if err != nil || !strings.Contains(string(out), "github.com/aws/aws-sdk-go-v2/config\n") {
		t.Errorf("the operator CLI should keep the SDK's config (profiles, SSO): %v", err)
	}
}

// Only the engines (internal/roomdb, internal/bookingdb) and what builds or
// runs them link the Redis client and the Lua scripts: the shared types
// (internal/room, internal/booking) do not, so neither does the token code,
// the configuration, the poll policy, the CDK app, the operator's command nor
// the key-sync Lambdas.
func TestTypesLinkNoRedis(t *testing.T) {
	const mod = "github.com/vestibule-dev/vestibule/"
	for _, pkg := range []string{"internal/token", "internal/config", "internal/pollpolicy", "infra/stack", "infra",
		"cmd/vestibule", "functions/gatekeys", "functions/keysync"} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		if !strings.Contains(string(out), mod+pkg+"\n") {
			t.Fatalf("go list -deps %s does not list the package itself:\n%s", pkg, out)
		}
		for _, bad := range []string{"github.com/redis/go-redis", mod + "lua\n"} {
			if strings.Contains(string(out), bad) {
				t.Errorf("%s links %s", pkg, strings.TrimSpace(bad))
			}
		}
	}
}

// The wrappers of the room engine and the queue API call it through one
// interface (room.Engine, queueapi.Engine) that has every capability: none
// asks the engine under it whether it has one (a type assertion on the
// wrapped engine). The report's whole-life history stays optional: without a
// settings store there is none, and the report covers what Redis keeps.
func TestNoCapabilityAssertions(t *testing.T) {
	allowed := map[string]bool{"internal/api/queueapi/report.go LifeHistorian": true}
	for _, dir := range []string{"internal/durable", "internal/admission", "internal/api/queueapi"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel := dir + "/" + filepath.Base(f)
			ast.Inspect(af, func(n ast.Node) bool {
				ta, ok := n.(*ast.TypeAssertExpr)
				if !ok || ta.Type == nil {
					return true
				}
				sel, ok := ta.X.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "eng" && sel.Sel.Name != "Engine" && sel.Sel.Name != "Queue") {
					return true
				}
				name := "interface"
				if id, ok := ta.Type.(*ast.Ident); ok {
					name = id.Name
				}
				if !allowed[rel+" "+name] {
					t.Errorf("%s asserts %s on the engine %s: add it to the engine's interface", rel, name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

// The engine's events are published by roomevents.Emitter, under durable;
// the admission loop ticks through it without knowing it. So the loop links
// no event bus, and the emitter links neither the loop nor durable (no
// admission → durable → admission loop).
func TestEventsApartFromTheLoop(t *testing.T) {
	const mod = "github.com/vestibule-dev/vestibule/"
	rules := map[string][]string{
		"internal/admission":  {mod + "internal/eventbus\n", mod + "internal/roomevents\n"},
		"internal/roomevents": {mod + "internal/admission\n", mod + "internal/durable\n", "github.com/redis/go-redis"},
	}
	for pkg, bad := range rules {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		if !strings.Contains(string(out), mod+pkg+"\n") {
			t.Fatalf("go list -deps %s does not list the package itself:\n%s", pkg, out)
		}
		for _, b := range bad {
			if strings.Contains(string(out), b) {
				t.Errorf("%s links %s", pkg, strings.TrimSpace(b))
			}
		}
	}
}

// Each product answers its own engine's errors: the HTTP layer under them
// all (api/httpapi) links no domain package, so no product's errors, tokens
// or types pass through it.
func TestHTTPLayerLinksNoDomain(t *testing.T) {
	const mod = "github.com/vestibule-dev/vestibule/"
	out, err := exec.Command("go", "list", "-deps", mod+"internal/api/httpapi").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), mod+"internal/api/httpapi\n") {
		t.Fatalf("go list -deps gave no httpapi package:\n%s", out)
	}
	for _, bad := range []string{"room", "roomdb", "booking", "bookingdb", "token"} {
		if strings.Contains(string(out), mod+"internal/"+bad+"\n") {
			t.Errorf("internal/api/httpapi links internal/%s", bad)
		}
	}
}

// A route's method and path, sampling and body limit are its row in
// routes.All: the router, its chain and the products (internal/api/...)
// spell no route key of their own; a product binds its handlers to the
// routes themselves.
func TestRouteKeysSpelledOnce(t *testing.T) {
	key := regexp.MustCompile(`^"(GET|POST|PUT|DELETE) /`)
	files, err := filepath.Glob(filepath.Join("..", "api", "*.go"))
	products, err2 := filepath.Glob(filepath.Join("..", "api", "*", "*.go"))
	files = append(files, products...)
	if err != nil || err2 != nil || len(products) == 0 {
		t.Fatalf("internal/api: no Go files (%v, %v)", err, err2)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && key.MatchString(lit.Value) {
				t.Errorf("%s spells the route key %s: bind the handler to its routes.Route", f, lit.Value)
			}
			return true
		})
	}
}

// Of the functions in the VPC, only booking (order events, BOOKING_EVENT_BUS)
// and admit (the booking sweep) may put events on EventBridge themselves; the
// others write their events to the log (eventbus.Log) and link no
// EventBridge client (putevents holds the one call), which was about 0.4 MB
// of each bootstrap.
func TestAPIFunctionsLinkNoEventBridge(t *testing.T) {
	for _, fn := range []string{"enqueue", "poll", "status", "consume", "admin"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/vestibule-dev/vestibule/functions/"+fn).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		if !strings.Contains(string(out), "github.com/vestibule-dev/vestibule/internal/eventbus\n") {
			t.Fatalf("go list -deps gave no eventbus package for %s:\n%s", fn, out)
		}
		for _, bad := range []string{"service/eventbridge\n", "internal/eventbus/putevents\n", "internal/orders\n"} {
			if strings.Contains(string(out), bad) {
				t.Errorf("functions/%s links %s", fn, strings.TrimSpace(bad))
			}
		}
	}
}
