package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/vestibule-dev/vestibule/infra/quota"
)

// fakeAccount is a loopback server speaking the two APIs preflight calls: Lambda's
// GetAccountSettings (REST, JSON) and Service Quotas' GetServiceQuota (JSON 1.1).
type fakeAccount struct {
	total, unreserved int
	apiQuota          float64
	quotas            map[string]float64 // other quotas by ServiceCode/QuotaCode (missing: NoSuchResourceException)
	quotaAsked        []string           // ServiceCode/QuotaCode of every GetServiceQuota
	services          []string           // what the region offers (nil: every service the template uses)
	pathAsked         string             // the Path of the last GetParametersByPath
	zones             []zone             // the account's zones (nil: three that support everything)
}

func (a *fakeAccount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPost && r.Header.Get("X-Amz-Target") == "" {
		// EC2's query API, signed
		b, _ := io.ReadAll(r.Body)
		if string(b) != "Action=DescribeAvailabilityZones&Version=2016-11-15" || !strings.Contains(r.Header.Get("Authorization"), "/ec2/aws4_request") {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`<Response><Errors><Error><Code>Bad</Code><Message>unexpected</Message></Error></Errors></Response>`))
			return
		}
		zones := a.zones
		if zones == nil {
			zones = []zone{{"eu-west-1c", "euw1-az3", "availability-zone", "available"},
				{"eu-west-1a", "euw1-az1", "availability-zone", "available"}, {"eu-west-1b", "euw1-az2", "availability-zone", "available"}}
		}
		w.Header().Set("Content-Type", "text/xml")
		w.Write([]byte(`<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><availabilityZoneInfo>`))
		for _, z := range zones {
			fmt.Fprintf(w, "<item><zoneName>%s</zoneName><zoneId>%s</zoneId><zoneType>%s</zoneType><zoneState>%s</zoneState></item>", z.Name, z.ID, z.Type, z.State)
		}
		w.Write([]byte(`</availabilityZoneInfo></DescribeAvailabilityZonesResponse>`))
		return
	}
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
		code := in.ServiceCode + "/" + in.QuotaCode
		a.quotaAsked = append(a.quotaAsked, code)
		v, ok := a.quotas[code]
		if code == "apigateway/L-8A5B8E43" {
			v, ok = a.apiQuota, true
		}
		if !ok {
			w.Header().Set("X-Amzn-Errortype", "NoSuchResourceException")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"NoSuchResourceException","message":"no such quota"}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"Quota": map[string]any{"Value": v}})
	case r.Header.Get("X-Amz-Target") == "AmazonSSM.GetParametersByPath":
		// AWS's public parameters of a region's services, one a page, as the API pages them
		var in struct{ Path, NextToken string }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &in)
		a.pathAsked = in.Path
		services := a.services
		if services == nil {
			services = []string{"apigateway", "elasticache", "lambda", "s3"}
		}
		i := 0
		if in.NextToken != "" {
			i = int(in.NextToken[0] - '0')
		}
		page := map[string]any{"Parameters": []any{}}
		if i < len(services) {
			page["Parameters"] = []any{map[string]any{"Name": in.Path + "/" + services[i], "Value": services[i]}}
		}
		if i+1 < len(services) {
			page["NextToken"] = string(rune('0' + i + 1))
		}
		json.NewEncoder(w).Encode(page)
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"unknown call"}`))
	}
}

// clients are SDK clients of the fake account, deploying to eu-west-1.
func (a *fakeAccount) clients(t *testing.T) account {
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")
	return account{
		lambda:  lambda.New(lambda.Options{BaseEndpoint: aws.String(srv.URL), Region: "eu-west-1", Credentials: creds}),
		quotas:  servicequotas.New(servicequotas.Options{BaseEndpoint: aws.String(srv.URL), Region: "eu-west-1", Credentials: creds}),
		regions: ssm.New(ssm.Options{BaseEndpoint: aws.String(srv.URL), Region: infrastructureRegion, Credentials: creds}),
		zones:   ec2Zones{cfg: aws.Config{Region: "eu-west-1", Credentials: creds}, endpoint: srv.URL + "/"},
		region:  "eu-west-1",
	}
}

// testTemplate is a synthesized template's shape: a stage's throttle, a function, perhaps a
// reservation, and cdk-nag suppressions on the stack and on a resource.
func testTemplate(reserved int) []byte { return sizedTemplate(reserved, 5000, 0) }

// sizedTemplate is testTemplate with a stage throttle, and the crowd the stack was sized for
// (0: none), as the stack records it.
func sizedTemplate(reserved int, stage float64, visitors int) []byte {
	fn := map[string]any{"Type": "AWS::Lambda::Function", "Properties": map[string]any{"Timeout": 60}}
	if reserved > 0 {
		fn["Properties"].(map[string]any)["ReservedConcurrentExecutions"] = reserved
	}
	md := map[string]any{"cdk_nag": map[string]any{"rules_to_suppress": []any{
		map[string]any{"id": "AwsSolutions-VPC7", "reason": "isolated subnets only"},
	}}}
	if visitors > 0 {
		md["VestibuleQuotas"] = map[string]any{"expectedVisitors": visitors}
	}
	b, _ := json.Marshal(map[string]any{
		"Metadata": md,
		"Resources": map[string]any{
			"AdmitFunction": fn,
			"Cache":         map[string]any{"Type": "AWS::ElastiCache::ServerlessCache"},
			"ApiStage": map[string]any{"Type": "AWS::ApiGatewayV2::Stage", "Properties": map[string]any{
				"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": stage, "ThrottlingBurstLimit": stage}}},
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
		services          []string
		zones             []zone
	}{
		{"an on-sale account", 1000, 1000, 10000, 0, false,
			[]string{"ok    lambda concurrency", "ok    api gateway throttle   the account allows 10000 requests a second, the stage 5000",
				"ok    region                 eu-west-1 offers the 3 services the template uses",
				"ok    availability zones     the stack takes eu-west-1a (euw1-az1) and eu-west-1b (euw1-az2): both support Lambda in a VPC and ElastiCache Serverless",
				"cdk-nag VPC7", "accepted stack-wide: isolated subnets only", "cdk-nag CFR4", "accepted on 1 resources: default certificate",
				"ok    expected visitors      not set"}, nil, nil},
		{"a new account of 10, nothing reserved", 10, 10, 10000, 0, false,
			[]string{"warn  lambda concurrency     10 unreserved serve at most 100 requests a second (10 a unit), the stage lets through 5000"}, nil, nil},
		{"a new account of 10, admit reserving 1", 10, 10, 10000, 1, true,
			[]string{"FAIL  lambda concurrency     the template reserves 1, leaving 9 of 10 unreserved: Lambda keeps at least 100"}, nil, nil},
		{"admit reserving 10 of 105: 95 left", 105, 105, 10000, 10, true,
			[]string{"FAIL  lambda concurrency     the template reserves 10, leaving 95 of 105 unreserved: Lambda keeps at least 100"}, nil, nil},
		{"1,000, but 300 unreserved: 3,000 a second for a stage of 5,000", 1000, 300, 10000, 0, false,
			[]string{"warn  lambda concurrency     300 unreserved serve at most 3000 requests a second (10 a unit), the stage lets through 5000", "ask for 1000"}, nil, nil},
		{"a role that may not read Lambda's settings", 0, 0, 10000, 0, false,
			[]string{"warn  lambda concurrency     cannot read the account's settings (lambda:GetAccountSettings)"}, nil, nil},
		{"an account throttle below the stage's", 1000, 1000, 2500, 0, false,
			[]string{"warn  api gateway throttle   the account allows 2500 requests a second, the stage 5000"}, nil, nil},
		{"a region without ElastiCache", 1000, 1000, 10000, 0, true,
			[]string{"FAIL  region                 eu-west-1 does not offer elasticache, which the template uses"}, []string{"apigateway", "lambda", "s3"}, nil},
		{"the stack's zones include one without Lambda in a VPC", 1000, 1000, 10000, 0, true,
			[]string{"FAIL  availability zones     the stack takes us-east-1a (use1-az6) and us-east-1b (use1-az3): us-east-1b (use1-az3) has no Lambda in a VPC"},
			nil, []zone{{"us-east-1c", "use1-az1", "availability-zone", "available"}, {"us-east-1b", "use1-az3", "availability-zone", "available"},
				{"us-east-1-bos-1a", "use1-bos1-az1", "local-zone", "available"}, {"us-east-1a", "use1-az6", "availability-zone", "available"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// GIVEN an account and a template
			acct := &fakeAccount{total: c.total, unreserved: c.unreserved, apiQuota: c.quota, services: c.services, zones: c.zones}
			var out bytes.Buffer
			// WHEN preflight checks them
			err := runPreflight(context.Background(), testTemplate(c.reserved), acct.clients(t), &out)
			// THEN a check that would fail the deploy fails preflight, and the report says why
			if c.fails != errors.Is(err, errPreflight) || (!c.fails && err != nil) {
				t.Errorf("err %v, want failure %v", err, c.fails)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
			if !slices.Contains(acct.quotaAsked, "apigateway/L-8A5B8E43") {
				t.Errorf("asked for quotas %q", acct.quotaAsked)
			}
			if acct.pathAsked != "/aws/service/global-infrastructure/regions/eu-west-1/services" {
				t.Errorf("asked for the services under %q", acct.pathAsked)
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
	acc := (&fakeAccount{total: 1000, unreserved: 1000, apiQuota: 10000}).clients(t)
	if err := runPreflight(context.Background(), []byte(`{"Resources":{}}`), acc, io.Discard); err == nil || !strings.Contains(err.Error(), "no resources") {
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

// failingWriter refuses every write, as a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestOutputThatCannotBeWrittenFails(t *testing.T) {
	// GIVEN an account whose checks all pass, and output nobody can read
	acc := (&fakeAccount{total: 1000, unreserved: 1000, apiQuota: 10000}).clients(t)
	// WHEN preflight reports THEN the failed write is its error: a deploy
	// script does not go on after a report it could not print
	if err := runPreflight(context.Background(), testTemplate(0), acc, failingWriter{}); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("preflight into a broken pipe: %v", err)
	}
	// and a command's exit status says so (rooms settings prints a table)
	var errs bytes.Buffer
	if code := run(context.Background(), []string{"rooms", "settings"}, failingWriter{}, &errs); code != 1 || !strings.Contains(errs.String(), "broken pipe") {
		t.Errorf("rooms settings into a broken pipe: exit %d, stderr %q", code, errs.String())
	}
}

func TestPreflightOfALargeSale(t *testing.T) {
	ten := quota.For(10_000_000)
	for _, c := range []struct {
		name     string
		acct     fakeAccount
		stage    float64
		visitors int
		want     []string
	}{
		{"10,000,000 on an account with the defaults", fakeAccount{total: 1000, unreserved: 1000, apiQuota: 10000,
			quotas: map[string]float64{"events/L-9B653E91": 10000, "logs/L-7E1FAE88": 5000}}, ten.APIRequest, 10_000_000, []string{
			"ok    expected visitors      10000000: busiest second 61500 API requests, the stage lets through 80000",
			"warn  lambda concurrency     1000 unreserved serve at most 10000 requests a second (10 a unit), the stage lets through 80000",
			"ask for 8100 through Service Quotas",
			"warn  api gateway throttle   the account allows 10000 requests a second, the stage 80000",
			"ok    lambda scaling         from nothing, enqueue takes 40 s",
			"warn  cloudfront requests    290605 a second at the busiest, over 80 % of the default 250000 per distribution: ask AWS Support for 400000",
			"ok    eventbridge putevents  10000 calls a second, the sale's events up to 1668 a second",
			"ok    cloudwatch logs        73886 log lines a second at the busiest, delivered in batches; PutLogEvents 5000 calls a second",
		}},
		{"10,000,000 on an account raised for it, in a Region of few PutEvents", fakeAccount{total: 9000, unreserved: 9000, apiQuota: 80000,
			quotas: map[string]float64{"events/L-9B653E91": 600}}, ten.APIRequest, 10_000_000, []string{
			"ok    lambda concurrency", "ok    api gateway throttle   the account allows 80000 requests a second, the stage 80000",
			"warn  eventbridge putevents  600 calls a second, the sale's events up to 1668 a second",
			"warn  cloudwatch logs        cannot read the quota (L-7E1FAE88)",
		}},
		{"a stage edited below the crowd's need", fakeAccount{total: 1000, unreserved: 1000, apiQuota: 10000,
			quotas: map[string]float64{"events/L-9B653E91": 10000, "logs/L-7E1FAE88": 5000}}, 5000, 10_000_000, []string{
			"warn  expected visitors      10000000 need a stage of 80000 requests a second, the template's lets through 5000: the sale would be throttled",
		}},
		{"a million", fakeAccount{total: 1000, unreserved: 1000, apiQuota: 10000,
			quotas: map[string]float64{"events/L-9B653E91": 10000, "logs/L-7E1FAE88": 5000}}, quota.For(1_000_000).APIRequest, 1_000_000, []string{
			"ok    expected visitors      1000000: busiest second 9150 API requests, the stage lets through 15000",
			"ok    cloudfront requests    44214 a second at the busiest, within the default 250000",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// GIVEN a template sized for a crowd, and an account
			var out bytes.Buffer
			acct := c.acct
			// WHEN preflight checks them
			err := runPreflight(context.Background(), sizedTemplate(0, c.stage, c.visitors), acct.clients(t), &out)
			// THEN the quotas the crowd needs are checked, each a warning at most
			if err != nil {
				t.Errorf("err %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
			for _, code := range []string{"events/L-9B653E91", "logs/L-7E1FAE88"} {
				if !slices.Contains(acct.quotaAsked, code) {
					t.Errorf("%s not read: %v", code, acct.quotaAsked)
				}
			}
		})
	}
}
