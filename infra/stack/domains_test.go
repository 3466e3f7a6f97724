package stack_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/vestibule-dev/vestibule/infra/stack"
)

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
	f := domainsStack(t)
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
	for name, f := range map[string]func(testing.TB) fixture{"default": defaultStack, "gate": gateStack} {
		// GIVEN the stack WHEN its distributions are read
		dists := f(t).ofType("AWS::CloudFront::Distribution")
		for id, d := range dists {
			// THEN each logs to a bucket of the stack
			lg, _ := props(d)["DistributionConfig"].(map[string]any)["Logging"].(map[string]any)
			b, _ := json.Marshal(lg["Bucket"])
			var bucket string
			for bid := range f(t).ofType("AWS::S3::Bucket") {
				if strings.Contains(string(b), `"`+bid+`"`) {
					bucket = bid
				}
			}
			if bucket == "" {
				t.Errorf("%s %s: logs to %s, no bucket of the stack", name, id, b)
				continue
			}
			// whose objects expire after the log retention
			rules := asSlice(props(f(t).resources[bucket])["LifecycleConfiguration"].(map[string]any)["Rules"])
			if len(rules) == 0 || rules[0].(map[string]any)["ExpirationInDays"] != float64(stack.DefaultSettings().LogRetentionDays) {
				t.Errorf("%s: the log bucket's lifecycle %v", name, rules)
			}
		}
	}
}

func TestAPIDomainClosesThePathAroundCloudFront(t *testing.T) {
	// GIVEN a stack with the API on its own domain, with origin mTLS
	f := domainsStack(t)
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
	for _, a := range defaultStack(t).ofType("AWS::ApiGatewayV2::Api") {
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

// TestAPICertificateRegionIsCheckedWhateverTheEnvironment: a certificate from another region
// than the stack's is refused, and so is any certificate when the stack's region is unknown
// (it could not be checked).
func TestAPICertificateRegionIsCheckedWhateverTheEnvironment(t *testing.T) {
	skipShort(t)
	for _, c := range []struct {
		name, region, cert, bad string
	}{
		{"unknown region", "", testAPICert, "region is unknown"},
		{"another region", "eu-west-1", testAPICert, "stack's region, eu-west-1"},
		{"the stack's region", "us-east-1", testAPICert, ""},
		{"the stack's region, not us-east-1", "eu-west-1", strings.Replace(testAPICert, "us-east-1", "eu-west-1", 1), ""},
	} {
		// GIVEN an API domain and its certificate, and the stack's region
		set := stack.DefaultSettings()
		set.AssetDir, set.StaticDir = placeholderAssets(t, false)
		set.APIDomain, set.APICertificateArn = "api.queue.example.com", c.cert
		props := &stack.Props{Settings: set}
		if c.region != "" {
			props.Env = &awscdk.Environment{Region: jsii.String(c.region)}
		}
		// WHEN the stack is built
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		v := stack.New(app, set.StackName(), props)
		// THEN it is refused with the reason, or taken
		got := errorAnnotation(v, stack.CtxAPICertificateArn)
		if c.bad == "" && got != "" {
			t.Errorf("%s: %s", c.name, got)
		}
		if c.bad != "" && !strings.Contains(got, c.bad) {
			t.Errorf("%s: error %q, want one saying %q", c.name, got, c.bad)
		}
	}
}
