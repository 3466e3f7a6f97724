package stack_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/gateattach"
)

// Managed CloudFront policies, by id: those `vestibule gate attach` (internal/gateattach) puts on
// the /.vestibule/* behaviour, so the CDK's gate and the command's agree.
const (
	cachingDisabled           = gateattach.CachingDisabledPolicyID
	allViewerExceptHostHeader = gateattach.AllViewerExceptHostHeaderPolicyID
)

// protectGate sets the gate's settings of the tests, with a placeholder gatekeys binary.
func protectGate(s *stack.Settings) {
	must(onceT{}, os.MkdirAll(filepath.Join(s.AssetDir, stack.GateKeysFunction), 0o755))
	must(onceT{}, os.WriteFile(filepath.Join(s.AssetDir, stack.GateKeysFunction, "bootstrap"), nil, 0o755))
	s.ProtectOrigin, s.ProtectRoom, s.ProtectOpenPaths = "booking-origin.example.com", "spring-tour", []string{"/assets/*", "/robots.txt"}
	// and a site's ALB behind a room as an OpenID Connect provider (oidc_test.go): this variant's
	// synthesis, nag and cfn-lint cover it too
	s.OIDC = testOIDCSettings
}

// gateStack is the stack with a protected origin, synthesized once.
var gateStack = shared(func() fixture { return synthChecked(onceT{}, "", protectGate) })

// stagingGateStack is the gate in a second stage.
var stagingGateStack = shared(func() fixture {
	return synth(onceT{}, "", true, func(s *stack.Settings) { protectGate(s); s.Stage = "staging" })
})

// resourceOf returns the one resource of typ whose JSON holds marker, and its logical id.
func resourceOf(t *testing.T, f fixture, typ, marker string) (string, map[string]any) {
	t.Helper()
	var id string
	var found map[string]any
	for rid, r := range f.ofType(typ) {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), marker) {
			if found != nil {
				t.Fatalf("two %s hold %q", typ, marker)
			}
			id, found = rid, r
		}
	}
	if found == nil {
		t.Fatalf("no %s holds %q", typ, marker)
	}
	return id, found
}

func TestGateDistribution(t *testing.T) {
	// GIVEN a stack that protects an origin
	f := gateStack(t)
	// THEN the gate's function runs on cloudfront-js-2.0 with the store associated
	storeID, _ := resourceOf(t, f, "AWS::CloudFront::KeyValueStore", "session cookies' keys")
	fnID, fn := resourceOf(t, f, "AWS::CloudFront::Function", "Vestibule gate for room spring-tour")
	cfg := props(fn)["FunctionConfig"].(map[string]any)
	if cfg["Runtime"] != gate.FunctionRuntime {
		t.Errorf("runtime %v, want %s", cfg["Runtime"], gate.FunctionRuntime)
	}
	assocs, _ := json.Marshal(cfg["KeyValueStoreAssociations"])
	if want, _ := json.Marshal([]any{map[string]any{"KeyValueStoreARN": getAtt(storeID, "Arn")}}); string(assocs) != string(want) {
		t.Errorf("store associations %s, want %s", assocs, want)
	}
	// and its code is gate.CloudFrontFunction's, with the waiting room's domain and the settings in it
	code, _ := json.Marshal(props(fn)["FunctionCode"])
	for _, s := range []string{`\"r\":\"spring-tour\"`, `\"open\":[\"/assets/*\",\"/robots.txt\"]`, "cf.kvs()", "DomainName"} {
		if !strings.Contains(string(code), s) {
			t.Errorf("function code lacks %s: %.300s", s, code)
		}
	}
	if strings.Contains(string(code), "vestibule.invalid") {
		t.Error("the waiting room placeholder is still in the function")
	}

	// and the protected distribution runs it on its default behaviour, at viewer request, in front
	// of the origin, and at viewer response (the site's end-of-session header)
	_, dist := resourceOf(t, f, "AWS::CloudFront::Distribution", "booking-origin.example.com")
	dc := props(dist)["DistributionConfig"].(map[string]any)
	def := dc["DefaultCacheBehavior"].(map[string]any)
	fa, _ := json.Marshal(def["FunctionAssociations"])
	if want, _ := json.Marshal([]any{
		map[string]any{"EventType": "viewer-request", "FunctionARN": getAtt(fnID, "FunctionARN")},
		map[string]any{"EventType": "viewer-response", "FunctionARN": getAtt(fnID, "FunctionARN")},
	}); string(fa) != string(want) {
		t.Errorf("default behaviour's functions %s, want %s", fa, want)
	}
	// and /.vestibule/* goes to the HTTP API, uncached, with every viewer header but Host
	var behaviour map[string]any
	for _, b := range asSlice(dc["CacheBehaviors"]) {
		if b.(map[string]any)["PathPattern"] == "/.vestibule/*" {
			behaviour = b.(map[string]any)
		}
	}
	if behaviour == nil {
		t.Fatalf("no /.vestibule/* behaviour: %v", dc["CacheBehaviors"])
	}
	if behaviour["CachePolicyId"] != cachingDisabled || behaviour["OriginRequestPolicyId"] != allViewerExceptHostHeader ||
		len(asSlice(behaviour["AllowedMethods"])) != 7 {
		t.Errorf("/.vestibule/* behaviour: %v", behaviour)
	}
	for _, o := range asSlice(dc["Origins"]) {
		o := o.(map[string]any)
		if o["Id"] != behaviour["TargetOriginId"] {
			continue
		}
		b, _ := json.Marshal(o["DomainName"])
		if !strings.Contains(string(b), "ApiEndpoint") {
			t.Errorf("/.vestibule/* goes to %s, want the HTTP API", b)
		}
	}
	hf, _ := json.Marshal(behaviour["FunctionAssociations"])
	if !strings.Contains(string(hf), "viewer-request") || strings.Contains(string(hf), fnID) {
		t.Errorf("/.vestibule/* should run the host function, not the gate: %s", hf)
	}

	// and the keys reach the store at deploy: a custom resource runs the gatekeys function, which
	// may read the entry secret and write only this store
	keysID, keys := resourceOf(t, f, "AWS::Lambda::Function", "writes the cookie keys")
	if props(keys)["VpcConfig"] != nil {
		t.Error("the gatekeys function is in the VPC, where the KeyValueStore API is unreachable")
	}
	f.has(t, "Custom::VestibuleGateKeys", map[string]any{"ServiceToken": getAtt(keysID, "Arn")})
	found := false
	for _, sts := range statements(f) {
		for _, s := range sts {
			b, _ := json.Marshal(s)
			if strings.Contains(string(b), "cloudfront-keyvaluestore:UpdateKeys") {
				found = true
				if res, _ := json.Marshal(s["Resource"]); string(res) != `{"Fn::GetAtt":["`+storeID+`","Arn"]}` {
					t.Errorf("UpdateKeys on %s, want the gate's store only", res)
				}
			}
		}
	}
	if !found {
		t.Error("no statement lets the gatekeys function write the store")
	}
	// and the site's URL and the parts to attach elsewhere are outputs
	for _, o := range []string{"ProtectedSiteUrl", "GateKeysFunctionName", "GateFunctionArn", "GateKeyValueStoreArn"} {
		f.output(t, o, map[string]any{"Value": assertions.Match_AnyValue()})
	}
}

// Without a protected origin the stack has no gate.
func TestNoGateByDefault(t *testing.T) {
	f := defaultStack(t)
	f.count(t, "AWS::CloudFront::KeyValueStore", 0)
	f.count(t, "AWS::CloudFront::Distribution", 1)
	f.count(t, "Custom::VestibuleGateKeys", 0)
}

// The gate's settings are checked before anything is synthesized.
func TestGateSettings(t *testing.T) {
	base := stack.DefaultSettings()
	ok := base
	ok.ProtectOrigin, ok.ProtectRoom, ok.ProtectOpenPaths = "booking.example.com", "demo", []string{"/static/*"}
	if err := stack.ValidateGate(ok); err != nil {
		t.Errorf("valid settings: %v", err)
	}
	for name, edit := range map[string]func(*stack.Settings){
		"a URL, not a domain": func(s *stack.Settings) { s.ProtectOrigin = "https://booking.example.com/" },
		"no room":             func(s *stack.Settings) { s.ProtectRoom = "" },
		"an open path /*":     func(s *stack.Settings) { s.ProtectOpenPaths = []string{"/*"} },
		"a room, no origin":   func(s *stack.Settings) { s.ProtectOrigin = "" },
	} {
		s := ok
		edit(&s)
		if err := stack.ValidateGate(s); !errors.Is(err, stack.ErrBadSetting) {
			t.Errorf("%s: %v, want ErrBadSetting", name, err)
		}
	}
}
