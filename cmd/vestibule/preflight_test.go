package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
)

// fakeAccount is a loopback server speaking the two APIs preflight calls: Lambda's
// GetAccountSettings (REST, JSON) and Service Quotas' GetServiceQuota (JSON 1.1).
type fakeAccount struct {
	total, unreserved int
	apiQuota          float64
	quotaAsked        string // ServiceCode/QuotaCode of the last GetServiceQuota
}

func (a *fakeAccount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/2016-08-19/account-settings" && a.total == 0:
		w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"message":"not authorized to perform lambda:GetAccountSettings"}`))
	case r.Method == http.MethodGet && r.URL.Path == "/2016-08-19/account-settings":
		json.NewEncoder(w).Encode(map[string]any{"AccountLimit": map[string]any{
			"ConcurrentExecutions": a.total, "UnreservedConcurrentExecutions": a.unreserved,
		}})
	case r.Header.Get("X-Amz-Target") == "ServiceQuotasV20190624.GetServiceQuota":
		var in struct{ ServiceCode, QuotaCode string }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &in)
		a.quotaAsked = in.ServiceCode + "/" + in.QuotaCode
		json.NewEncoder(w).Encode(map[string]any{"Quota": map[string]any{"Value": a.apiQuota}})
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"unknown call"}`))
	}
}

// clients are SDK clients of the fake account.
func (a *fakeAccount) clients(t *testing.T) (*lambda.Client, *servicequotas.Client) {
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")
	return lambda.New(lambda.Options{BaseEndpoint: aws.String(srv.URL), Region: "eu-west-1", Credentials: creds}),
		servicequotas.New(servicequotas.Options{BaseEndpoint: aws.String(srv.URL), Region: "eu-west-1", Credentials: creds})
}

// testTemplate is a synthesized template's shape: a stage's throttle, a function, perhaps a
// reservation, and cdk-nag suppressions on the stack and on a resource.
func testTemplate(reserved int) []byte {
	fn := map[string]any{"Type": "AWS::Lambda::Function", "Properties": map[string]any{"Timeout": 60}}
	if reserved > 0 {
		fn["Properties"].(map[string]any)["ReservedConcurrentExecutions"] = reserved
	}
	b, _ := json.Marshal(map[string]any{
		"Metadata": map[string]any{"cdk_nag": map[string]any{"rules_to_suppress": []any{
			map[string]any{"id": "AwsSolutions-VPC7", "reason": "isolated subnets only"},
		}}},
		"Resources": map[string]any{
			"AdmitFunction": fn,
			"ApiStage": map[string]any{"Type": "AWS::ApiGatewayV2::Stage", "Properties": map[string]any{
				"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": 5000, "ThrottlingBurstLimit": 5000}}},
			"Distribution": map[string]any{"Type": "AWS::CloudFront::Distribution",
				"Metadata": map[string]any{"cdk_nag": map[string]any{"rules_to_suppress": []any{
					map[string]any{"id": "AwsSolutions-CFR4", "reason": "default certificate"}}}}},
		},
	})
	return b
}

func TestPreflight(t *testing.T) {
	for _, c := range []struct {
		name              string
		total, unreserved int
		quota             float64
		reserved          int
		fails             bool
		want              []string
	}{
		{"an on-sale account", 1000, 1000, 10000, 0, false,
			[]string{"ok    lambda concurrency", "ok    api gateway throttle   the account allows 10000 requests a second, the stage 5000",
				"cdk-nag VPC7", "accepted stack-wide: isolated subnets only", "cdk-nag CFR4", "accepted on 1 resources: default certificate"}},
		{"a new account of 10, nothing reserved", 10, 10, 10000, 0, false,
			[]string{"warn  lambda concurrency     10 concurrent executions: enough to deploy, too few for an on-sale"}},
		{"a new account of 10, admit reserving 1", 10, 10, 10000, 1, true,
			[]string{"FAIL  lambda concurrency     the template reserves 1, leaving 9 of 10 unreserved"}},
		{"a role that may not read Lambda's settings", 0, 0, 10000, 0, false,
			[]string{"warn  lambda concurrency     cannot read the account's settings (lambda:GetAccountSettings)"}},
		{"an account throttle below the stage's", 1000, 1000, 2500, 0, false,
			[]string{"warn  api gateway throttle   the account allows 2500 requests a second, the stage 5000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// GIVEN an account and a template
			acct := &fakeAccount{total: c.total, unreserved: c.unreserved, apiQuota: c.quota}
			lam, sq := acct.clients(t)
			var out bytes.Buffer
			// WHEN preflight checks them
			err := runPreflight(context.Background(), testTemplate(c.reserved), lam, sq, &out)
			// THEN a check that would fail the deploy fails preflight, and the report says why
			if c.fails != errors.Is(err, errPreflight) || (!c.fails && err != nil) {
				t.Errorf("err %v, want failure %v", err, c.fails)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
			if acct.quotaAsked != "apigateway/L-8A5B8E43" {
				t.Errorf("asked for quota %q", acct.quotaAsked)
			}
		})
	}
}

func TestPreflightNeedsATemplate(t *testing.T) {
	// GIVEN no --template WHEN preflight runs THEN it is a usage error (exit 2)
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"preflight"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "--template") {
		t.Errorf("exit %d, stderr %q", code, errs.String())
	}
	// and a template that is not one is refused with a clear error
	lam, sq := (&fakeAccount{total: 1000, unreserved: 1000, apiQuota: 10000}).clients(t)
	if err := runPreflight(context.Background(), []byte(`{"Resources":{}}`), lam, sq, io.Discard); err == nil || !strings.Contains(err.Error(), "no resources") {
		t.Errorf("empty template: %v", err)
	}
}

func TestClientCertificateFlags(t *testing.T) {
	// GIVEN --client-cert and --client-key naming files that are not there
	var out, errs bytes.Buffer
	missing := t.TempDir() + "/none.pem"
	t.Setenv("VESTIBULE_STACK", "")
	code := run(context.Background(), []string{"rooms", "list", "--endpoint", "http://127.0.0.1:1", "--admin-key", "k",
		"--client-cert", missing, "--client-key", missing}, &out, &errs)
	// THEN the command says it could not load them, before any call
	if code != 1 || !strings.Contains(errs.String(), "loading the client certificate") {
		t.Errorf("exit %d, stderr %q", code, errs.String())
	}
}
