package stack_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// testOIDCSettings is a site's ALB listener behind the room spring-tour (the gate variant carries it).
var testOIDCSettings = stack.OIDCSettings{
	ListenerArn:     "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/tickets/50dc6c495c0c9188/f2f7dc8efc522ab2",
	TargetGroupArn:  "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/tickets/73e2d6bc24d8a067",
	Room:            "spring-tour",
	ClientSecretArn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:spring-tour-oidc-AbCdEf",
	Priority:        10,
	Hosts:           []string{"tickets.example.com"},
}

// The waiting room's distribution sends /oidc/* to the API: every method, Authorization
// through the per-visitor cache policy (a relying party's client credentials, userinfo's
// token), every other viewer header but Host, and the viewer's Host copied into
// X-Forwarded-Host by a function at viewer request (the API's issuer).
func TestOIDCBehaviour(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	var cfg map[string]any
	for _, d := range f.ofType("AWS::CloudFront::Distribution") {
		cfg = props(d)["DistributionConfig"].(map[string]any)
	}
	var apiCache string
	for id := range f.ofType("AWS::CloudFront::CachePolicy") {
		if !strings.HasPrefix(id, "ShortCache") {
			apiCache = id
		}
	}
	fnID, _ := resourceOf(t, f, "AWS::CloudFront::Function", "oidc-host")
	// WHEN its /oidc/* behaviour is read
	var oidc, api map[string]any
	for _, b := range asSlice(cfg["CacheBehaviors"]) {
		switch b := b.(map[string]any); b["PathPattern"] {
		case routes.OIDCPrefix + "*":
			oidc = b
		case "/api/*":
			api = b
		}
	}
	if oidc == nil {
		t.Fatal("no /oidc/* behaviour")
	}
	// THEN it goes to the API's origin, like /api/*, with every method, caching nothing
	if oidc["TargetOriginId"] != api["TargetOriginId"] || len(asSlice(oidc["AllowedMethods"])) != 7 {
		t.Errorf("/oidc/* goes to %v with %v; want the API (%v) with every method", oidc["TargetOriginId"], oidc["AllowedMethods"], api["TargetOriginId"])
	}
	if !reflect.DeepEqual(oidc["CachePolicyId"], map[string]any{"Ref": apiCache}) {
		t.Errorf("/oidc/* cache policy %v, want the per-visitor one (%s), which forwards Authorization", oidc["CachePolicyId"], apiCache)
	}
	// and every viewer header but Host (managed AllViewerExceptHostHeader)
	if oidc["OriginRequestPolicyId"] != allViewerExceptHostHeader {
		t.Errorf("/oidc/* origin request policy %v, want AllViewerExceptHostHeader", oidc["OriginRequestPolicyId"])
	}
	// and the host function at viewer request, whose code is the gate's
	fa, _ := json.Marshal(oidc["FunctionAssociations"])
	if !strings.Contains(string(fa), `"viewer-request"`) || !strings.Contains(string(fa), fnID) {
		t.Errorf("/oidc/* functions %s, want %s at viewer request", fa, fnID)
	}
	if code := props(f.resources[fnID])["FunctionCode"]; code != gate.HostFunction {
		t.Errorf("the host function's code %v", code)
	}
	if oidc["ViewerProtocolPolicy"] != "redirect-to-https" || oidc["ResponseHeadersPolicyId"] == nil {
		t.Errorf("/oidc/*: viewer policy %v, headers %v", oidc["ViewerProtocolPolicy"], oidc["ResponseHeadersPolicyId"])
	}
	// and no ALB rule without the settings
	if n := len(f.ofType("AWS::ElasticLoadBalancingV2::ListenerRule")); n != 0 {
		t.Errorf("%d listener rules without oidcListenerArn", n)
	}
}

// With the settings, the stack adds to the site's listener a rule that authenticates through the
// room's endpoints, the client secret resolved from Secrets Manager (never in the template), the
// ALB's session as long as the room's, then forwards to the site's target group.
func TestOIDCListenerRule(t *testing.T) {
	// GIVEN the variant with a site's ALB behind room spring-tour
	f := gateStack(t)
	// WHEN its listener rule is read
	rules := f.ofType("AWS::ElasticLoadBalancingV2::ListenerRule")
	if len(rules) != 1 {
		t.Fatalf("%d listener rules, want 1", len(rules))
	}
	var p map[string]any
	for _, r := range rules {
		p = props(r)
	}
	// THEN it is on the listener, at its priority, for its host, on every path
	if p["ListenerArn"] != testOIDCSettings.ListenerArn || p["Priority"] != float64(10) {
		t.Errorf("listener %v priority %v", p["ListenerArn"], p["Priority"])
	}
	conds, _ := json.Marshal(p["Conditions"])
	if !strings.Contains(string(conds), `"Values":["/*"]`) || !strings.Contains(string(conds), `"Values":["tickets.example.com"]`) {
		t.Errorf("conditions %s", conds)
	}
	actions := asSlice(p["Actions"])
	if len(actions) != 2 {
		t.Fatalf("actions %v", actions)
	}
	auth := actions[0].(map[string]any)
	oc, _ := auth["AuthenticateOidcConfig"].(map[string]any)
	iss, _ := json.Marshal(oc["Issuer"])
	// and authenticates with the room's issuer (the waiting room's distribution + /oidc/<room>)
	// and endpoints
	if auth["Type"] != "authenticate-oidc" || auth["Order"] != float64(1) || oc["ClientId"] != "spring-tour" ||
		!strings.Contains(string(iss), "/oidc/spring-tour") || !strings.Contains(string(iss), "DomainName") {
		t.Errorf("authenticate action %v (issuer %s)", auth, iss)
	}
	for field, suffix := range map[string]string{"AuthorizationEndpoint": "/authorize", "TokenEndpoint": "/token", "UserInfoEndpoint": "/userinfo"} {
		if b, _ := json.Marshal(oc[field]); !strings.Contains(string(b), "/oidc/spring-tour"+suffix+`"`) {
			t.Errorf("%s = %s, want the issuer + %s", field, b, suffix)
		}
	}
	// and its client secret is a dynamic reference, resolved by CloudFormation
	if s := oc["ClientSecret"]; s != "{{resolve:secretsmanager:"+testOIDCSettings.ClientSecretArn+":SecretString:::}}" {
		t.Errorf("client secret %v, want a dynamic reference", s)
	}
	// and the session ends when the room's would (the room defaults' sessionTTLSeconds)
	if oc["SessionTimeout"] != float64(stack.DefaultRoomDefaults().SessionTTLSeconds) || oc["Scope"] != "openid" {
		t.Errorf("session timeout %v scope %v", oc["SessionTimeout"], oc["Scope"])
	}
	fwd := actions[1].(map[string]any)
	if fwd["Type"] != "forward" || fwd["TargetGroupArn"] != testOIDCSettings.TargetGroupArn || fwd["Order"] != float64(2) {
		t.Errorf("forward action %v", fwd)
	}
	// and the issuer is an output
	f.output(t, "OIDCIssuer", map[string]any{})
}

// Bad rule settings stop the synthesis, naming the key.
func TestOIDCSettingsRefused(t *testing.T) {
	for key, v := range map[string]string{
		stack.CtxOIDCListenerArn:     "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/x/1",
		stack.CtxOIDCTargetGroupArn:  "tg",
		stack.CtxOIDCRoom:            "spring tour",
		stack.CtxOIDCClientSecretArn: "my-secret",
		stack.CtxOIDCPriority:        "0",
		stack.CtxOIDCSessionSeconds:  "604801",
	} {
		// GIVEN the rule's keys, one of them wrong
		ctx := map[string]any{
			stack.CtxOIDCListenerArn: testOIDCSettings.ListenerArn, stack.CtxOIDCTargetGroupArn: testOIDCSettings.TargetGroupArn,
			stack.CtxOIDCRoom: "spring-tour", stack.CtxOIDCClientSecretArn: testOIDCSettings.ClientSecretArn, stack.CtxOIDCPriority: "10",
		}
		ctx[key] = v
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
		// WHEN they are read THEN the error names it
		_, err := stack.FromContext(app.Node())
		if !errors.Is(err, stack.ErrBadSetting) || !strings.Contains(fmt2(err), key) {
			t.Errorf("%s=%s: %v", key, v, err)
		}
	}
	// and the keys read right are the settings
	ctx := map[string]any{
		stack.CtxOIDCListenerArn: testOIDCSettings.ListenerArn, stack.CtxOIDCTargetGroupArn: testOIDCSettings.TargetGroupArn,
		stack.CtxOIDCRoom: "spring-tour", stack.CtxOIDCClientSecretArn: testOIDCSettings.ClientSecretArn, stack.CtxOIDCPriority: "10",
		stack.CtxOIDCHosts: "tickets.example.com", stack.CtxOIDCSessionSeconds: "900",
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	s, err := stack.FromContext(app.Node())
	want := testOIDCSettings
	want.SessionSeconds = 900
	if err != nil || !reflect.DeepEqual(s.OIDC, want) {
		t.Errorf("read %+v, %v; want %+v", s.OIDC, err, want)
	}
}

func fmt2(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
