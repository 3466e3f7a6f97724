package stack_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

// The tests of issue 31: what a first deploy in a real account needs.

// topicPolicyStatements returns the statements of the alarm topic's policy.
func topicPolicyStatements(t *testing.T, f fixture) []map[string]any {
	t.Helper()
	pols := f.ofType("AWS::SNS::TopicPolicy")
	if len(pols) != 1 {
		t.Fatalf("%d topic policies, want 1 (the alarm topic's)", len(pols))
	}
	var out []map[string]any
	for _, p := range pols {
		for _, s := range asSlice(props(p)["PolicyDocument"].(map[string]any)["Statement"]) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

func TestCloudWatchMayPublishAlarmsToTheTopic(t *testing.T) {
	// GIVEN the default stack, whose alarm topic enforces TLS (a policy with a Deny)
	f := defaultStack()
	var topic string
	for id := range f.ofType("AWS::SNS::Topic") {
		topic = id
	}
	// WHEN its topic policy is read
	var allow map[string]any
	for _, s := range topicPolicyStatements(t, f) {
		if s["Effect"] == "Allow" {
			allow = s
		}
	}
	// THEN an Allow lets CloudWatch publish to this topic, for alarms of this account only:
	// a topic policy replaces SNS's default one, so without it CloudWatch's publish is refused
	if allow == nil {
		t.Fatal("the alarm topic's policy allows nothing: CloudWatch cannot publish the alarms")
	}
	f.has(t, "AWS::SNS::TopicPolicy", map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
			map[string]any{
				"Sid":       "CloudWatchAlarmsPublish",
				"Effect":    "Allow",
				"Action":    "sns:Publish",
				"Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"},
				"Resource":  map[string]any{"Ref": topic},
				"Condition": map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": map[string]any{"Ref": "AWS::AccountId"}}},
			},
		})},
	})
}

func TestAdmitReservesConcurrencyOnlyWhenAsked(t *testing.T) {
	// GIVEN a stack deployed with admitReservedConcurrency=1
	f := synth(t, "", false, func(s *stack.Settings) { s.AdmitReservedConcurrency = 1 })
	// WHEN its functions are read
	// THEN admit, and admit alone, reserves 1
	for name, r := range f.ours(t) {
		rc, has := props(r)["ReservedConcurrentExecutions"]
		if name == stack.Admit && rc != 1.0 {
			t.Errorf("admit reserved concurrency %v, want 1", rc)
		}
		if name != stack.Admit && has {
			t.Errorf("%s reserves %v", name, rc)
		}
	}
}

func TestAdmitReservedConcurrencyFromContext(t *testing.T) {
	for _, c := range []struct {
		value any
		want  int
		ok    bool
	}{{nil, 0, true}, {"1", 1, true}, {"0", 0, true}, {float64(2), 2, true}, {"-1", 0, false}, {"one", 0, false}, {"1.5", 0, false}} {
		// GIVEN the context value WHEN the settings are read
		ctx := map[string]any{}
		if c.value != nil {
			ctx[stack.CtxAdmitReserved] = c.value
		}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		s, err := stack.FromContext(app.Node())
		// THEN a whole number from 0 up is taken, anything else refused
		if c.ok && (err != nil || s.AdmitReservedConcurrency != c.want) {
			t.Errorf("%v: %d %v, want %d", c.value, s.AdmitReservedConcurrency, err, c.want)
		}
		if !c.ok && !errors.Is(err, stack.ErrBadSetting) {
			t.Errorf("%v: err %v, want ErrBadSetting", c.value, err)
		}
	}
}

const (
	testCert       = "arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555"
	testGateCert   = "arn:aws:acm:us-east-1:123456789012:certificate/66666666-2222-3333-4444-555555555555"
	testAPICert    = "arn:aws:acm:us-east-1:123456789012:certificate/77777777-2222-3333-4444-555555555555"
	testClientCert = "arn:aws:acm:us-east-1:123456789012:certificate/88888888-2222-3333-4444-555555555555"
	testTruststore = "s3://example-truststore/vestibule/ca.pem"
)

// withDomains sets every domain of the stack: the waiting room's, the gate's and the API's with
// origin mTLS.
func withDomains(s *stack.Settings) {
	protectGate(s)
	s.Domain, s.CertificateArn = "queue.example.com", testCert
	s.ProtectDomain, s.ProtectCertificateArn = "booking.example.com", testGateCert
	s.APIDomain, s.APICertificateArn = "api.queue.example.com", testAPICert
	s.APIClientCertificateArn, s.APITruststore = testClientCert, testTruststore
}

// domainsStack is the stack with every custom domain, in us-east-1, synthesized once.
var domainsStack = sync.OnceValue(func() fixture { return synth(onceT{}, "us-east-1", true, withDomains) })

// distributionFor returns the DistributionConfig of the distribution whose comment holds marker.
func distributionFor(t *testing.T, f fixture, marker string) map[string]any {
	t.Helper()
	for _, d := range f.ofType("AWS::CloudFront::Distribution") {
		cfg := props(d)["DistributionConfig"].(map[string]any)
		if c, _ := cfg["Comment"].(string); strings.Contains(c, marker) {
			return cfg
		}
	}
	t.Fatalf("no distribution with %q in its comment", marker)
	return nil
}

func TestCustomDomainsServeTLS12(t *testing.T) {
	// GIVEN a stack with the waiting room on queue.example.com and the gate on booking.example.com
	f := domainsStack()
	for _, c := range []struct{ marker, domain, cert string }{
		{"waiting room", "queue.example.com", testCert},
		{"Vestibule gate", "booking.example.com", testGateCert},
	} {
		// WHEN each distribution is read
		cfg := distributionFor(t, f, c.marker)
		// THEN it answers to the domain with the certificate, TLS 1.2 at least, by SNI
		if a := asSlice(cfg["Aliases"]); len(a) != 1 || a[0] != c.domain {
			t.Errorf("%s: aliases %v, want [%s]", c.marker, a, c.domain)
		}
		vc, _ := cfg["ViewerCertificate"].(map[string]any)
		if vc["AcmCertificateArn"] != c.cert || vc["MinimumProtocolVersion"] != "TLSv1.2_2021" || vc["SslSupportMethod"] != "sni-only" {
			t.Errorf("%s: viewer certificate %v", c.marker, vc)
		}
	}
	// and the waiting room's URL, in the output and in the gate's function, is the domain
	f.output(t, "WaitingRoomUrl", map[string]any{"Value": "https://queue.example.com/"})
	f.output(t, "ProtectedSiteUrl", map[string]any{"Value": "https://booking.example.com/"})
	_, fn := resourceOf(t, f, "AWS::CloudFront::Function", "Vestibule gate for room")
	if code, _ := props(fn)["FunctionCode"].(string); !strings.Contains(code, "https://queue.example.com/") {
		t.Error("the gate's function does not send visitors to https://queue.example.com/")
	}
}

func TestCloudFrontLogsExpire(t *testing.T) {
	for name, f := range map[string]func() fixture{"default": defaultStack, "gate": gateStack} {
		// GIVEN the stack WHEN its distributions are read
		dists := f().ofType("AWS::CloudFront::Distribution")
		for id, d := range dists {
			// THEN each logs to a bucket of the stack
			lg, _ := props(d)["DistributionConfig"].(map[string]any)["Logging"].(map[string]any)
			b, _ := json.Marshal(lg["Bucket"])
			var bucket string
			for bid := range f().ofType("AWS::S3::Bucket") {
				if strings.Contains(string(b), `"`+bid+`"`) {
					bucket = bid
				}
			}
			if bucket == "" {
				t.Errorf("%s %s: logs to %s, no bucket of the stack", name, id, b)
				continue
			}
			// whose objects expire after the log retention
			rules := asSlice(props(f().resources[bucket])["LifecycleConfiguration"].(map[string]any)["Rules"])
			if len(rules) == 0 || rules[0].(map[string]any)["ExpirationInDays"] != float64(stack.DefaultSettings().LogRetentionDays) {
				t.Errorf("%s: the log bucket's lifecycle %v", name, rules)
			}
		}
	}
}

func TestAPIDomainClosesThePathAroundCloudFront(t *testing.T) {
	// GIVEN a stack with the API on its own domain, with origin mTLS
	f := domainsStack()
	// WHEN the API is read
	// THEN its execute-api endpoint is off
	f.has(t, "AWS::ApiGatewayV2::Api", map[string]any{"DisableExecuteApiEndpoint": true})
	// and it answers on the domain, TLS 1.2, to clients the truststore trusts only
	f.has(t, "AWS::ApiGatewayV2::DomainName", map[string]any{
		"DomainName": "api.queue.example.com",
		"DomainNameConfigurations": []any{assertions.Match_ObjectLike(&map[string]any{
			"CertificateArn": testAPICert, "EndpointType": "REGIONAL", "SecurityPolicy": "TLS_1_2",
		})},
		"MutualTlsAuthentication": map[string]any{"TruststoreUri": testTruststore},
	})
	f.count(t, "AWS::ApiGatewayV2::ApiMapping", 1)
	// and both distributions reach the API on the domain, presenting the client certificate
	for _, marker := range []string{"waiting room", "Vestibule gate"} {
		found := false
		for _, o := range asSlice(distributionFor(t, f, marker)["Origins"]) {
			o := o.(map[string]any)
			if o["DomainName"] != "api.queue.example.com" {
				continue
			}
			found = true
			mtls, _ := o["CustomOriginConfig"].(map[string]any)["OriginMtlsConfig"].(map[string]any)
			if mtls["ClientCertificateArn"] != testClientCert {
				t.Errorf("%s: the API origin's mTLS %v", marker, mtls)
			}
		}
		if !found {
			t.Errorf("%s: no origin is api.queue.example.com", marker)
		}
	}
	// and the admin calls are signed for the domain
	f.output(t, "ApiUrl", map[string]any{"Value": "https://api.queue.example.com/"})
	// and without apiDomain the execute-api endpoint stays (the default stack has no domain)
	for _, a := range defaultStack().ofType("AWS::ApiGatewayV2::Api") {
		if props(a)["DisableExecuteApiEndpoint"] == true {
			t.Error("the default stack disables the execute-api endpoint, with no other way in")
		}
	}
}

func TestDomainSettingsFromContext(t *testing.T) {
	ok := map[string]any{
		stack.CtxDomain: "queue.example.com", stack.CtxCertificateArn: testCert,
		stack.CtxAPIDomain: "api.queue.example.com", stack.CtxAPICertificateArn: testAPICert,
		stack.CtxAPIClientCertificateArn: testClientCert, stack.CtxAPITruststore: testTruststore,
	}
	for _, c := range []struct {
		name string
		edit map[string]any
		bad  string // "" for fine, else a word of the error
	}{
		{"all", nil, ""},
		{"domain without certificate", map[string]any{stack.CtxCertificateArn: nil}, stack.CtxCertificateArn},
		{"certificate outside us-east-1", map[string]any{stack.CtxCertificateArn: strings.Replace(testCert, "us-east-1", "eu-west-1", 1)}, "us-east-1"},
		{"not a domain", map[string]any{stack.CtxDomain: "https://queue.example.com/"}, stack.CtxDomain},
		{"certificate without domain", map[string]any{stack.CtxDomain: nil}, stack.CtxDomain},
		{"API domain without certificate", map[string]any{stack.CtxAPICertificateArn: nil}, stack.CtxAPICertificateArn},
		{"client certificate without truststore", map[string]any{stack.CtxAPITruststore: nil}, stack.CtxAPITruststore},
		{"truststore not in S3", map[string]any{stack.CtxAPITruststore: "https://example.com/ca.pem"}, stack.CtxAPITruststore},
		{"mTLS without API domain", map[string]any{stack.CtxAPIDomain: nil, stack.CtxAPICertificateArn: nil}, stack.CtxAPIDomain},
		{"gate domain without gate", map[string]any{stack.CtxProtectDomain: "booking.example.com", stack.CtxProtectCertificateArn: testGateCert}, stack.CtxProtectOrigin},
	} {
		ctx := map[string]any{}
		for k, v := range ok {
			ctx[k] = v
		}
		for k, v := range c.edit {
			if v == nil {
				delete(ctx, k)
			} else {
				ctx[k] = v
			}
		}
		// GIVEN the context WHEN the settings are read
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		_, err := stack.FromContext(app.Node())
		// THEN a consistent set is taken, and anything else refused with the setting named
		if c.bad == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.bad != "" && (!errors.Is(err, stack.ErrBadSetting) || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%s: err %v, want ErrBadSetting naming %s", c.name, err, c.bad)
		}
	}
}

func TestEnvironmentOverLambdasLimitFailsSynth(t *testing.T) {
	// GIVEN room defaults whose page carries a long message in four languages: valid for a room,
	// but over the 4 KB Lambda allows a function's environment
	long := strings.Repeat("Thank you for waiting. ", 40)[:900]
	raw := fmt.Sprintf(`{"page":{"message":{"en":%q,"fr":%q,"de":%q,"es":%q}}}`, long, long, long, long)
	rd, err := stack.ParseRoomDefaults(raw, stack.DefaultRoomDefaults())
	if err != nil {
		t.Fatalf("room defaults: %v", err)
	}
	// WHEN the stack is constructed (the synthesis itself fails on an error annotation)
	g := constructed(t, func(s *stack.Settings) { s.RoomDefaults = rd })
	// THEN it carries an error that names the limit and the setting
	if msg := errorAnnotation(g, "over Lambda's 4 KB"); !strings.Contains(msg, stack.CtxRoomDefaults) {
		t.Errorf("error annotation %q, want one naming the limit and %s", msg, stack.CtxRoomDefaults)
	}
	// and the default stack's environments fit, with room to spare
	assert(t, func() {
		assertions.Annotations_FromStack(defaultStack().stack).HasNoError(jsii.String("*"), assertions.Match_AnyValue())
	})
	if n := stack.EnvironmentSize(defaultEnvironment(t)); n > 3000 {
		t.Errorf("the default environment is about %d bytes", n)
	}
}

// defaultEnvironment is the environment of the default stack's enqueue function.
func defaultEnvironment(t *testing.T) map[string]any {
	return props(defaultStack().ours(t)["enqueue"])["Environment"].(map[string]any)["Variables"].(map[string]any)
}

// constructed builds a stack without synthesizing it: for settings whose error annotation
// would stop the synthesis.
func constructed(t *testing.T, edit func(*stack.Settings)) *stack.Vestibule {
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, false)
	edit(&set)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	return stack.New(app, set.StackName(), &stack.Props{Settings: set})
}

// errorAnnotation returns the first error annotation of the stack holding marker, or "".
func errorAnnotation(v *stack.Vestibule, marker string) string {
	for _, m := range *v.Node().Metadata() {
		if *m.Type == "aws:cdk:error" && strings.Contains(fmt.Sprint(m.Data), marker) {
			return fmt.Sprint(m.Data)
		}
	}
	return ""
}

// customResources returns the custom resources of a stack by logical id.
func customResources(f fixture) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range f.resources {
		if typ := r["Type"].(string); strings.HasPrefix(typ, "Custom::") || typ == "AWS::CloudFormation::CustomResource" {
			out[id] = r
		}
	}
	return out
}

func TestCustomResourcesTimeOutBeforeAnHour(t *testing.T) {
	for name, f := range map[string]func() fixture{"default": defaultStack, "gate": gateStack} {
		// GIVEN the stack WHEN its custom resources are read
		crs := customResources(f())
		if len(crs) < 3 {
			t.Fatalf("%s: %d custom resources", name, len(crs))
		}
		for id, r := range crs {
			// THEN each gives CloudFormation a ServiceTimeout (else a provider that never answers
			// holds the stack for an hour), past its provider's own timeout
			st, err := strconv.Atoi(fmt.Sprint(props(r)["ServiceTimeout"]))
			if err != nil || st <= 0 || st > 600 {
				t.Errorf("%s %s: ServiceTimeout %v, want 1-600 s", name, id, props(r)["ServiceTimeout"])
				continue
			}
			tok, _ := props(r)["ServiceToken"].(map[string]any)["Fn::GetAtt"].([]any)
			if len(tok) == 2 {
				if fn, ok := f().resources[tok[0].(string)]; ok && fn["Type"] == "AWS::Lambda::Function" {
					if to, _ := props(fn)["Timeout"].(float64); float64(st) <= to {
						t.Errorf("%s %s: ServiceTimeout %d s, not past its function's %v s", name, id, st, to)
					}
				}
			}
		}
	}
}
