package stack_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/infra/stack"
)

// `-c protectRoutes=…` puts rooms on paths of the stack's gate: the context is read as `vestibule
// gate attach --routes` reads it (gate.ParseRoutes), and the gate's function carries the routes
// (gate.Config.Routes), so a path no route matches passes and each route's path waits in its room.
func TestGateRoomsByPath(t *testing.T) {
	// GIVEN the context of `cdk synth -c protectOrigin=… -c protectRoutes=/tickets=spring-tour,/merch=merch`
	ctx := map[string]any{stack.CtxProtectOrigin: "booking-origin.example.com",
		stack.CtxProtectRoutes: "/tickets=spring-tour, /merch=merch", stack.CtxProtectOpenPaths: "/robots.txt"}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	set, err := stack.FromContext(app.Node())
	if err != nil {
		t.Fatal(err)
	}
	want := []gate.Route{{Prefix: "/tickets", Room: "spring-tour"}, {Prefix: "/merch", Room: "merch"}}
	if b, w := mustJSON(set.ProtectRoutes), mustJSON(want); b != w {
		t.Fatalf("routes %s, want %s", b, w)
	}
	// WHEN the stack is synthesized with them
	f := synthChecked(t, "", func(s *stack.Settings) {
		must(t, os.MkdirAll(filepath.Join(s.AssetDir, stack.GateKeysFunction), 0o755))
		must(t, os.WriteFile(filepath.Join(s.AssetDir, stack.GateKeysFunction, "bootstrap"), nil, 0o755))
		s.ProtectOrigin, s.ProtectRoutes, s.ProtectOpenPaths = set.ProtectOrigin, set.ProtectRoutes, set.ProtectOpenPaths
	})
	// THEN the gate's function is the gate's own rendering of those routes, the waiting room put in
	_, fn := resourceOf(t, f, "AWS::CloudFront::Function", "Vestibule gate for room spring-tour, merch")
	code := mustJSON(props(fn)["FunctionCode"])
	src, err := gate.CloudFrontFunction(gate.Config{Routes: want, OpenPaths: []string{"/robots.txt"},
		WaitingRoomURL: "https://waiting-room.vestibule.invalid/"})
	if err != nil {
		t.Fatal(err)
	}
	routes := src[strings.Index(src, `"routes":`):]
	routes = routes[:strings.Index(routes, "]")+1]
	if !strings.Contains(code, strings.Trim(mustJSON(routes), `"`)) {
		t.Errorf("function code lacks the routes %s: %.400s", routes, code)
	}
	// and no route guards the whole site
	if strings.Contains(code, `\"p\":\"/\"`) {
		t.Errorf("a route of every path in %.400s", code)
	}
	_, dist := resourceOf(t, f, "AWS::CloudFront::Distribution", "booking-origin.example.com")
	if c := mustJSON(props(dist)["DistributionConfig"].(map[string]any)["Comment"]); !strings.Contains(c, "spring-tour, merch") {
		t.Errorf("distribution comment %s", c)
	}
}

// Routes are checked with the other gate settings: one or the other of a room and routes, each
// route's form and room.
func TestGateRoutesSettings(t *testing.T) {
	for name, c := range map[string]struct {
		ctx  map[string]any
		fine bool
	}{
		"routes":                    {map[string]any{stack.CtxProtectOrigin: "b.example.com", stack.CtxProtectRoutes: "/a=x,shop.example.com/b=y"}, true},
		"routes as a cdk.json list": {map[string]any{stack.CtxProtectOrigin: "b.example.com", stack.CtxProtectRoutes: []any{"/a=x", "/b=y"}}, true},
		"a room and routes":         {map[string]any{stack.CtxProtectOrigin: "b.example.com", stack.CtxProtectRoom: "x", stack.CtxProtectRoutes: "/a=x"}, false},
		"a route without a path":    {map[string]any{stack.CtxProtectOrigin: "b.example.com", stack.CtxProtectRoutes: "tickets=x"}, false},
		"a route to no room id":     {map[string]any{stack.CtxProtectOrigin: "b.example.com", stack.CtxProtectRoutes: "/a=no room"}, false},
		"routes without an origin":  {map[string]any{stack.CtxProtectRoutes: "/a=x"}, false},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &c.ctx, Outdir: jsii.String(t.TempDir())})
		_, err := stack.FromContext(app.Node())
		if c.fine && err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !c.fine && !errors.Is(err, stack.ErrBadSetting) {
			t.Errorf("%s: %v, want ErrBadSetting", name, err)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
