package stack_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/metrics"
)

var (
	stagingStack = sync.OnceValue(func() fixture {
		return synth(onceT{}, "", true, func(s *stack.Settings) { s.Stage = "staging" })
	})
	wafStack = sync.OnceValue(func() fixture {
		return synth(onceT{}, "us-east-1", true, func(s *stack.Settings) { s.WAF = true })
	})
)

// resolve evaluates the few intrinsic functions names are made of, for one stack name and region.
func resolve(t *testing.T, v any, stackName, region string) string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ref, ok := v["Ref"]; ok {
			switch ref {
			case "AWS::Region":
				return region
			case "AWS::StackName":
				return stackName
			}
		}
		if join, ok := v["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range join[1].([]any) {
				parts = append(parts, resolve(t, p, stackName, region))
			}
			return strings.Join(parts, join[0].(string))
		}
	}
	t.Fatalf("cannot resolve %v", v)
	return ""
}

// accountWide are the resource types whose names are unique per account (CloudFront's across
// all regions, the others per region), with the path of the name in their properties.
var accountWide = map[string][]string{
	"AWS::CloudFront::CachePolicy":           {"CachePolicyConfig", "Name"},
	"AWS::CloudFront::OriginRequestPolicy":   {"OriginRequestPolicyConfig", "Name"},
	"AWS::CloudFront::ResponseHeadersPolicy": {"ResponseHeadersPolicyConfig", "Name"},
	"AWS::CloudFront::OriginAccessControl":   {"OriginAccessControlConfig", "Name"},
	"AWS::CloudFront::Function":              {"Name"},
	"AWS::WAFv2::WebACL":                     {"Name"},
	"AWS::CloudWatch::Dashboard":             {"DashboardName"},
	"AWS::CloudFront::KeyValueStore":         {"Name"},
}

// names returns every account-wide name of a stack deployed in region, failing on a resource
// of such a type that leaves its name to CloudFormation.
func names(t *testing.T, f fixture, region string) map[string]string {
	t.Helper()
	stackName := *f.stack.StackName()
	out := map[string]string{}
	for id, r := range f.resources {
		path, ok := accountWide[r["Type"].(string)]
		if !ok {
			continue
		}
		var v any = props(r)
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		if v == nil {
			t.Errorf("%s %s: no explicit name", stackName, id)
			continue
		}
		n := resolve(t, v, stackName, region)
		if len(n) > 64 {
			t.Errorf("%s: name %q is over 64 characters", id, n)
		}
		out[n] = stackName + "/" + region + "/" + id
	}
	return out
}

func TestTwoStagesOrRegionsDoNotCollide(t *testing.T) {
	// GIVEN the default stack and a staging copy, each in two regions, and a WAF stack
	copies := []struct {
		f      fixture
		region string
	}{
		{defaultStack(), "us-east-1"}, {defaultStack(), "eu-west-1"},
		{stagingStack(), "us-east-1"}, {stagingStack(), "eu-west-1"},
	}
	if *stagingStack().stack.StackName() != "Vestibule-staging" || *defaultStack().stack.StackName() != "Vestibule" {
		t.Fatalf("stack names %s, %s", *defaultStack().stack.StackName(), *stagingStack().stack.StackName())
	}
	// WHEN their account-wide names are resolved
	seen := map[string]string{}
	for _, c := range copies {
		for n, where := range names(t, c.f, c.region) {
			// THEN no two copies share one
			if other, dup := seen[n]; dup {
				t.Errorf("%q is used by %s and %s", n, other, where)
			}
			seen[n] = where
		}
	}
	if len(seen) < 4*7 {
		t.Errorf("only %d account-wide names in four copies: %v", len(seen), seen)
	}
	// and the same holds with the gate, whose KeyValueStore and functions are CloudFront's
	// (their names unique in the account across regions)
	gates := map[string]string{}
	for _, c := range []struct {
		f      fixture
		region string
	}{
		{gateStack(), "us-east-1"}, {gateStack(), "eu-west-1"},
		{stagingGateStack(), "us-east-1"}, {stagingGateStack(), "eu-west-1"},
	} {
		for n, where := range names(t, c.f, c.region) {
			if other, dup := gates[n]; dup {
				t.Errorf("with the gate: %q is used by %s and %s", n, other, where)
			}
			gates[n] = where
		}
	}
	if len(gates) < 4*10 {
		t.Errorf("only %d account-wide names in four copies with the gate: %v", len(gates), gates)
	}
	// and the serverless cache, whose name is unique per region, differs between stages
	cache := func(f fixture) any {
		for _, c := range f.ofType("AWS::ElastiCache::ServerlessCache") {
			return props(c)["ServerlessCacheName"]
		}
		return nil
	}
	if a, b := cache(defaultStack()), cache(stagingStack()); a == nil || reflect.DeepEqual(a, b) {
		t.Errorf("serverless cache names %v and %v", a, b)
	}
	// and the WAF copy names its web ACL the same way
	wn := names(t, wafStack(), "us-east-1")
	found := false
	for n := range wn {
		found = found || strings.HasSuffix(n, "-web-acl")
	}
	if !found {
		t.Errorf("the web ACL has no stack-wide name: %v", wn)
	}

	// and each stack's functions tell their metrics apart by stack, and the stack's Redis alarm
	// watches its own
	for _, f := range []fixture{defaultStack(), stagingStack()} {
		name := *f.stack.StackName()
		for fn, r := range f.ours(t) {
			if got := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)[config.EnvStack]; got != name {
				t.Errorf("%s %s: %s=%v", name, fn, config.EnvStack, got)
			}
		}
		f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
			"Namespace": metrics.Namespace, "MetricName": metrics.RedisErrors,
			"Dimensions": []any{map[string]any{"Name": metrics.StackDimension, "Value": name}},
		})
	}
}

func TestPublicAPIOnlyThroughCloudFront(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	var originSecret string
	for id := range f.ofType("AWS::SecretsManager::Secret") {
		if strings.HasPrefix(id, "OriginSecret") {
			originSecret = id
		}
	}
	if originSecret == "" {
		t.Fatal("no origin secret")
	}
	var cfg map[string]any
	for _, d := range f.ofType("AWS::CloudFront::Distribution") {
		cfg = props(d)["DistributionConfig"].(map[string]any)
	}
	// WHEN the API's origin in CloudFront is read
	apiOrigins := map[string]bool{}
	for _, o := range asSlice(cfg["Origins"]) {
		o := o.(map[string]any)
		if o["CustomOriginConfig"] == nil {
			continue // the bucket
		}
		apiOrigins[o["Id"].(string)] = true
		// THEN it sends the origin header, whose value is a dynamic reference to the origin
		// secret: the value is resolved by CloudFormation, never written in the template
		hs := asSlice(o["OriginCustomHeaders"])
		if len(hs) != 1 {
			t.Fatalf("origin custom headers %v", hs)
		}
		h := hs[0].(map[string]any)
		if h["HeaderName"] != config.OriginHeader {
			t.Errorf("header %v, want %s", h["HeaderName"], config.OriginHeader)
		}
		b, _ := json.Marshal(h["HeaderValue"])
		if !strings.Contains(string(b), `"{{resolve:secretsmanager:"`) || !strings.Contains(string(b), `{"Ref":"`+originSecret+`"}`) ||
			!strings.Contains(string(b), `":SecretString:::}}"`) {
			t.Errorf("header value %s is not a versionless dynamic reference to %s", b, originSecret)
		}
	}
	// and every /api/* behaviour goes to that origin
	for _, b := range asSlice(cfg["CacheBehaviors"]) {
		b := b.(map[string]any)
		if strings.HasPrefix(b["PathPattern"].(string), "/api/") && !apiOrigins[b["TargetOriginId"].(string)] {
			t.Errorf("%s goes to %v, not the API origin with the header", b["PathPattern"], b["TargetOriginId"])
		}
	}
	// and the key sync copies that secret into the keys object the functions read
	// (TestKeySyncRunsOutsideTheVPCAtDeploy), and the distribution changes only after it has
	ks := keySyncResource(t, f)
	if p := props(ks); !reflect.DeepEqual(p["OriginSecretArn"], map[string]any{"Ref": originSecret}) {
		t.Errorf("the key sync copies %v, want the origin secret", p["OriginSecretArn"])
	}
	for id, d := range f.ofType("AWS::CloudFront::Distribution") {
		if !slices.Contains(asSlice(d["DependsOn"]), any(logicalID(f, ks))) {
			t.Errorf("%s does not depend on the key sync: it could send an origin value the functions do not know yet", id)
		}
	}
	// and the admin routes stay IAM-signed (TestRoutesAndIAMOnAdmin), to the API's own URL

	// GIVEN a pinned version of the secret (the second step of a rotation)
	g := synth(t, "", false, func(s *stack.Settings) { s.OriginSecretVersion = "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab" })
	b, _ := json.Marshal(g.raw["Resources"])
	// THEN the reference names that version, so deploying it updates the distribution
	if !strings.Contains(string(b), `":SecretString:::0f1e2d3c-aaaa-bbbb-cccc-1234567890ab}}"`) {
		t.Error("the pinned version is not in the origin header's reference")
	}
	// and in the key sync's properties, so that deploy copies the new value before CloudFront sends it
	if v := props(keySyncResource(t, g))["OriginSecretVersion"]; v != "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab" {
		t.Errorf("the key sync's OriginSecretVersion = %v", v)
	}
}

func TestSAMLocalCanOverrideEveryVariable(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	want := slices.Clone(config.Names())
	sort.Strings(want)
	// WHEN each function's declared variables are read
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		var got []string
		for k := range vars {
			got = append(got, k)
		}
		sort.Strings(got)
		// THEN they are exactly those config.Load reads (sam local overrides only declared
		// ones), and none the Lambda runtime reserves
		if !slices.Equal(got, want) {
			t.Errorf("%s declares\n %v\nwant\n %v", name, got, want)
		}
		for _, n := range config.RuntimeNames() {
			if _, ok := vars[n]; ok {
				t.Errorf("%s declares the reserved %s", name, n)
			}
		}
	}
}

func TestEveryLogGroupHasARetention(t *testing.T) {
	for name, f := range map[string]func() fixture{"serverless": defaultStack, "nodes": nodesStack, "waf": wafStack, "staging": stagingStack} {
		t.Run(name, func(t *testing.T) {
			f := f()
			// GIVEN every log group of the stack THEN each has a retention
			groups := f.ofType("AWS::Logs::LogGroup")
			for id, g := range groups {
				if props(g)["RetentionInDays"] == nil {
					t.Errorf("log group %s keeps logs forever", id)
				}
			}
			// and every Lambda function, ours or the CDK's, logs to one of them
			for id, r := range f.ofType("AWS::Lambda::Function") {
				lc, _ := props(r)["LoggingConfig"].(map[string]any)
				lg, _ := lc["LogGroup"].(map[string]any)
				ref, _ := lg["Ref"].(string)
				if _, ok := groups[ref]; !ok {
					t.Errorf("function %s logs to %v, not a log group of the stack with a retention", id, lc)
				}
			}
		})
	}
}

func TestAPIAccessLogs(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	var stage map[string]any
	for _, s := range f.ofType("AWS::ApiGatewayV2::Stage") {
		stage = props(s)
	}
	// THEN the stage writes JSON access logs to a log group of the stack, with a retention
	als, _ := stage["AccessLogSettings"].(map[string]any)
	dest, _ := als["DestinationArn"].(map[string]any)["Fn::GetAtt"].([]any)
	if len(dest) != 2 || f.resources[dest[0].(string)]["Type"] != "AWS::Logs::LogGroup" ||
		props(f.resources[dest[0].(string)])["RetentionInDays"] != 30.0 {
		t.Fatalf("access log settings %v", als)
	}
	var line map[string]string
	if err := json.Unmarshal([]byte(als["Format"].(string)), &line); err != nil {
		t.Fatalf("format is not a JSON object: %v", err)
	}
	// with the request, the answer and the signer of admin calls, under short keys, and nothing else
	want := map[string]string{"id": "$context.requestId", "t": "$context.requestTimeEpoch",
		"ip": "$context.identity.sourceIp", "m": "$context.httpMethod", "p": "$context.path",
		"s": "$context.status", "ms": "$context.responseLatency", "is": "$context.integrationStatus",
		"ie": "$context.integrationErrorMessage", "u": "$context.identity.userArn", "st": "Vestibule"}
	if !reflect.DeepEqual(line, want) {
		t.Errorf("access log format %v, want %v", line, want)
	}
	for _, v := range line {
		if strings.Contains(strings.ToLower(v), "header") || strings.Contains(v, "body") {
			t.Errorf("access log carries %s", v)
		}
	}
}

// A successful poll's access log line, with typical values: a 16-character request id, an edge
// server's address, a 16-character room id, a 2-digit latency. Every poll writes one (about ten
// million for a million visitors), so the line stays short; it was 366 B with the long keys and
// the route key, response length and caller fields before.
func TestAccessLogLineOfAPoll(t *testing.T) {
	line := stack.AccessLogOfAPoll("Vestibule")
	if strings.Contains(line, "$context") {
		t.Fatalf("a variable without a typical value: %s", line)
	}
	var fields map[string]string
	if err := json.Unmarshal([]byte(line), &fields); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	t.Logf("%d B: %s", len(line), line)
	// The ApiThrottled metric filter reads these keys ({ ($.s = "429") && ($.is = "-") }, $.st).
	for _, k := range []string{"s", "is", "st"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("the access log has no key %q, which the ApiThrottled metric filter reads: %s", k, line)
		}
	}
	if len(line) > 200 {
		t.Errorf("a poll's access log line is %d B, want at most 200", len(line))
	}
}

func TestMonitoringAlarms(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	api := ""
	for id := range f.ofType("AWS::ApiGatewayV2::Api") {
		api = id
	}
	// THEN API Gateway 5xx alarm
	f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
		"Namespace": "AWS/ApiGateway", "MetricName": "5xx", "Statistic": "Sum",
		"Dimensions": []any{map[string]any{"Name": "ApiId", "Value": map[string]any{"Ref": api}}},
	})
	// and API Gateway's own throttling (a 429 that reached no function), counted from the
	// access log by a metric filter, alarms
	f.has(t, "AWS::Logs::MetricFilter", map[string]any{
		"FilterPattern": `{ ($.s = "429") && ($.is = "-") }`,
		"MetricTransformations": []any{assertions.Match_ObjectLike(&map[string]any{
			"MetricNamespace": metrics.Namespace, "MetricName": stack.APIThrottled, "MetricValue": "1",
			"Dimensions": []any{map[string]any{"Key": metrics.StackDimension, "Value": "$.st"}},
		})},
	})
	f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
		"Namespace": metrics.Namespace, "MetricName": stack.APIThrottled,
		"Dimensions": []any{map[string]any{"Name": metrics.StackDimension, "Value": "Vestibule"}},
	})
	// and the serverless cache's throttled commands and ECPUs alarm
	for metric, threshold := range map[string]float64{"ThrottledCmds": 1, "ElastiCacheProcessingUnits": 100_000 * 60} {
		f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
			"Namespace": "AWS/ElastiCache", "MetricName": metric, "Statistic": "Sum", "Threshold": threshold,
			"Dimensions": []any{map[string]any{"Name": "clusterId", "Value": "vestibule-cache"}},
		})
	}
	// GIVEN cache=nodes THEN there are no serverless metrics to watch
	for _, a := range nodesStack().ofType("AWS::CloudWatch::Alarm") {
		if props(a)["Namespace"] == "AWS/ElastiCache" {
			t.Errorf("nodes stack has a serverless cache alarm: %v", props(a)["MetricName"])
		}
	}
}

func TestSecretARNsAreOutputs(t *testing.T) {
	// GIVEN the default stack THEN each secret's ARN is an output (the rotation steps use them)
	f := defaultStack()
	for out, prefix := range map[string]string{"TicketSecretArn": "TicketSecret", "EntryKeySecretArn": "EntryKeySecret", "OriginSecretArn": "OriginSecret"} {
		o, _ := f.raw["Outputs"].(map[string]any)[out].(map[string]any)
		ref, _ := o["Value"].(map[string]any)["Ref"].(string)
		if !strings.HasPrefix(ref, prefix) || f.resources[ref]["Type"] != "AWS::SecretsManager::Secret" {
			t.Errorf("output %s = %v", out, o)
		}
	}
}

func TestPriceClass(t *testing.T) {
	// GIVEN the default stack THEN it uses price class 100
	defaultStack().has(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{"PriceClass": "PriceClass_100"}),
	})
	// GIVEN priceClass=All THEN every edge location
	synth(t, "", false, func(s *stack.Settings) { s.PriceClass = "All" }).has(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{"PriceClass": "PriceClass_All"}),
	})
}

// recommendedFlags is the CDK CLI's list of the feature flags a new app gets (`cdk init`
// writes them into cdk.json): the one aws-cdk-lib 2.276 ships.
func recommendedFlags(t *testing.T) map[string]any {
	p := filepath.Join("..", "..", ".tools", "node_modules", "aws-cdk", "lib", "init-templates", ".recommended-feature-flags.json")
	b, err := os.ReadFile(p)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: run `make deps-cdk`", err)
		}
		t.Skipf("%v: `make deps-cdk` installs the CLI", err)
	}
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	return m
}

func TestFeatureFlagsAreTheRecommendedOnes(t *testing.T) {
	// GIVEN cdk.json and the CLI's recommended flags THEN cdk.json sets every one as recommended
	ctx := cdkContext(t)
	for k, v := range recommendedFlags(t) {
		if !reflect.DeepEqual(ctx[k], v) {
			t.Errorf("cdk.json %s = %v, recommended %v", k, ctx[k], v)
		}
	}
	// and what they change holds: the VPC's default security group loses its allow-all rules
	f := defaultStack()
	f.count(t, "Custom::VpcRestrictDefaultSG", 1)
	var vpc string
	for id := range f.ofType("AWS::EC2::VPC") {
		vpc = id
	}
	f.has(t, "Custom::VpcRestrictDefaultSG", map[string]any{"DefaultSecurityGroupId": getAtt(vpc, "DefaultSecurityGroup")})
}

// cfnLintIgnored names every cfn-lint rule the variants may break, with the reason.
var cfnLintIgnored = map[string]string{
	// The CDK writes an explicit DependsOn on each function's role next to the GetAtt of
	// the role's ARN; redundant and harmless, and not ours to change.
	"W3005": "redundant DependsOn written by the CDK",
}

// TestCfnLint runs cfn-lint on the template of every variant (default, node cache, WAF, a
// second stage) and fails on any error. It is a Go test rather than a Makefile step so it
// lints the very templates the assertion tests check, without a CLI synthesis per variant,
// and runs wherever `go test ./...` does. Skipped without cfn-lint, except in CI.
func TestCfnLint(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("cfn-lint not on PATH in CI")
		}
		t.Skip("cfn-lint not on PATH (pip install cfn-lint)")
	}
	dir := t.TempDir()
	var files []string
	for name, f := range map[string]func() fixture{"default": defaultStack, "nodes": nodesStack, "waf": wafStack, "staging": stagingStack, "gate": gateStack, "domains": domainsStack} {
		b, err := json.MarshalIndent(f().raw, "", " ")
		must(t, err)
		p := filepath.Join(dir, name+".template.json")
		must(t, os.WriteFile(p, b, 0o644))
		files = append(files, p)
	}
	sort.Strings(files)
	args := []string{"--format", "parseable", "--regions", "us-east-1", "eu-west-1"}
	for rule := range cfnLintIgnored {
		args = append(args, "--ignore-checks", rule)
	}
	args = append(args, "--")
	out, err := exec.Command(lint, append(args, files...)...).CombinedOutput()
	// cfn-lint exits with a bit mask: 2 errors, 4 warnings, 8 informational; anything else
	// (1, 32 for a bad command line) is a failure too. Warnings are shown, not fatal: they are
	// advice (cfnLintIgnored lists none today).
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code&^(4|8) != 0 {
		t.Errorf("cfn-lint found errors (exit %d):\n%s", code, out)
	} else if len(out) > 0 {
		t.Logf("cfn-lint warnings (exit %d), not fatal:\n%s", code, out)
	}
}
