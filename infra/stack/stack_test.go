package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/metrics"
)

// Tests of the stack as a whole: names, IAM, secrets, outputs, log retention, custom resources,
// feature flags, cfn-lint. Each construct's own assertions are in its file's test file
// (cache_test.go for cache.go, and so on); cdk-nag's in nag_test.go, the CLI's synth in synth_test.go.

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
		{defaultStack(t), "us-east-1"}, {defaultStack(t), "eu-west-1"},
		{stagingStack(t), "us-east-1"}, {stagingStack(t), "eu-west-1"},
	}
	if *stagingStack(t).stack.StackName() != "Vestibule-staging" || *defaultStack(t).stack.StackName() != "Vestibule" {
		t.Fatalf("stack names %s, %s", *defaultStack(t).stack.StackName(), *stagingStack(t).stack.StackName())
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
		{gateStack(t), "us-east-1"}, {gateStack(t), "eu-west-1"},
		{stagingGateStack(t), "us-east-1"}, {stagingGateStack(t), "eu-west-1"},
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
	if a, b := cache(defaultStack(t)), cache(stagingStack(t)); a == nil || reflect.DeepEqual(a, b) {
		t.Errorf("serverless cache names %v and %v", a, b)
	}
	// and the WAF copy names its web ACL the same way
	wn := names(t, wafStack(t), "us-east-1")
	found := false
	for n := range wn {
		found = found || strings.HasSuffix(n, "-web-acl")
	}
	if !found {
		t.Errorf("the web ACL has no stack-wide name: %v", wn)
	}

	// and each stack's functions tell their metrics apart by stack, and the stack's Redis alarm
	// watches its own
	for _, f := range []fixture{defaultStack(t), stagingStack(t)} {
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

func TestEveryLogGroupHasARetention(t *testing.T) {
	for name, f := range map[string]func(testing.TB) fixture{"serverless": defaultStack, "nodes": nodesStack, "waf": wafStack, "staging": stagingStack} {
		t.Run(name, func(t *testing.T) {
			f := f(t)
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

// wildcardExceptions names every IAM statement allowed a "Resource": "*", by action, and why:
// the network-interface permissions of a function in the VPC, which EC2 grants on "*" only
// (the statement AWSLambdaVPCAccessExecutionRole would give, without its logs permissions on
// every log group; logs.go).
var wildcardExceptions = map[string]string{
	"ec2:CreateNetworkInterface":     "Lambda creates a VPC function's interfaces with its role",
	"ec2:DescribeNetworkInterfaces":  "Lambda creates a VPC function's interfaces with its role",
	"ec2:DescribeSubnets":            "Lambda creates a VPC function's interfaces with its role",
	"ec2:DeleteNetworkInterface":     "Lambda creates a VPC function's interfaces with its role",
	"ec2:AssignPrivateIpAddresses":   "Lambda creates a VPC function's interfaces with its role",
	"ec2:UnassignPrivateIpAddresses": "Lambda creates a VPC function's interfaces with its role",
}

// statements returns every policy statement in the template: role inline policies, IAM policies,
// bucket and topic policies.
func statements(f fixture) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	add := func(id string, doc any) {
		for _, s := range asSlice(doc.(map[string]any)["Statement"]) {
			out[id] = append(out[id], s.(map[string]any))
		}
	}
	for id, r := range f.resources {
		p := props(r)
		switch r["Type"] {
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::S3::BucketPolicy", "AWS::SNS::TopicPolicy":
			add(id, p["PolicyDocument"])
		case "AWS::IAM::Role":
			for _, pol := range asSlice(p["Policies"]) {
				add(id, pol.(map[string]any)["PolicyDocument"])
			}
		}
	}
	return out
}

func TestNoWildcardIAM(t *testing.T) {
	for name, f := range map[string]func(testing.TB) fixture{"serverless": defaultStack, "nodes": nodesStack} {
		t.Run(name, func(t *testing.T) {
			// GIVEN a stack WHEN its policy statements are read
			all := statements(f(t))
			if len(all) == 0 {
				t.Fatal("no policy statements found; the walk is broken")
			}
			for id, sts := range all {
				for _, st := range sts {
					actions := asSlice(st["Action"])
					if a, ok := st["Action"].(string); ok {
						actions = []any{a}
					}
					// THEN no statement allows every action
					for _, a := range actions {
						if a == "*" {
							t.Errorf("%s: statement allows Action *: %v", id, st)
						}
					}
					// and none allows every resource unless it is a named exception (Deny
					// statements, such as "deny anything without TLS", may name everything)
					if st["Effect"] != "Allow" {
						continue
					}
					res := asSlice(st["Resource"])
					if r, ok := st["Resource"].(string); ok {
						res = []any{r}
					}
					if slices.Contains(res, any("*")) {
						for _, a := range actions {
							if _, ok := wildcardExceptions[a.(string)]; !ok {
								t.Errorf(`%s: %v on "Resource": "*" is not a named exception`, id, a)
							}
						}
					}
					if st["Principal"] == "*" || reflect.DeepEqual(st["Principal"], map[string]any{"AWS": "*"}) {
						t.Errorf("%s: Allow to any principal: %v", id, st)
					}
				}
			}
		})
	}
}

func TestManagedPoliciesAreTheLambdaServiceRoles(t *testing.T) {
	for name, fx := range map[string]func(testing.TB) fixture{"default": defaultStack, "gate": gateStack} {
		// GIVEN a stack
		f := fx(t)
		ownRoles := map[string]bool{}
		for _, fn := range ownFunctions(f) {
			ownRoles[roleOf(fn)] = true
		}
		// WHEN the roles' managed policies are read
		for id, r := range f.ofType("AWS::IAM::Role") {
			for _, arn := range asSlice(props(r)["ManagedPolicyArns"]) {
				b, _ := json.Marshal(arn)
				// THEN no role of the stack's own functions has one (each writes its own log group only)
				if ownRoles[id] {
					t.Errorf("%s: %s: role of a Vestibule function has managed policy %s", name, id, b)
				}
				// and the CDK's deploy-time helpers have only the basic Lambda execution policy
				if !strings.Contains(string(b), `:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"`) {
					t.Errorf("%s: %s: managed policy %s is not AWSLambdaBasicExecutionRole", name, id, b)
				}
			}
		}
	}
}

func TestNoSecretValueInTheTemplate(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// THEN the secrets are generated by Secrets Manager at deploy time
	secrets := f.ofType("AWS::SecretsManager::Secret")
	if len(secrets) != 4 {
		t.Fatalf("%d secrets, want 4 (ticket, entry key, origin, notice)", len(secrets))
	}
	f.all(t, "AWS::SecretsManager::Secret", map[string]any{
		"GenerateSecretString": map[string]any{"ExcludePunctuation": true, "PasswordLength": 64},
		"SecretString":         assertions.Match_Absent(),
	})
	// and no secret value appears anywhere in the template
	b, err := json.Marshal(f.raw)
	must(t, err)
	if strings.Contains(string(b), `"SecretString"`) {
		t.Error("the template sets a SecretString")
	}
	// and the functions get no secret's ARN, only the keys object's name (that they declare
	// exactly the variables Load reads is TestSAMLocalCanOverrideEveryVariable's)
	keys := keysBucket(t, f)
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		for _, k := range []string{config.EnvTicketSecretARN, config.EnvEntryKeySecretARN, config.EnvOriginSecretARN} {
			if vars[k] != "" {
				t.Errorf("%s: %s = %v, want empty (the keys come from the keys object)", name, k, vars[k])
			}
		}
		b, _ := json.Marshal(vars[config.EnvKeysObject])
		if string(b) != `{"Fn::Join":["",[{"Ref":"`+keys+`"},"/`+stack.KeysObjectKey+`"]]}` {
			t.Errorf("%s: %s = %s, want the keys bucket/%s", name, config.EnvKeysObject, b, stack.KeysObjectKey)
		}
	}
	// and the functions may read exactly those secrets (one statement may name several: the
	// @aws-cdk/aws-iam:minimizePolicies flag merges them)
	for _, st := range statements(f) {
		for _, s := range st {
			b, _ := json.Marshal(s["Action"])
			if !strings.Contains(string(b), "secretsmanager:") {
				continue
			}
			res := asSlice(s["Resource"])
			if len(res) == 0 {
				res = []any{s["Resource"]}
			}
			for _, r := range res {
				m, _ := r.(map[string]any)
				ref, _ := m["Ref"].(string)
				if _, ok := secrets[ref]; !ok {
					t.Errorf("secretsmanager statement on %v, want one of the secrets", r)
				}
			}
		}
	}
}

func TestOutputs(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// THEN it tells the waiting room URL, the API URL, the alarm topic and how to call the admin API
	f.output(t, "WaitingRoomUrl", map[string]any{})
	f.output(t, "ApiUrl", map[string]any{})
	f.output(t, "AlarmsTopicArn", map[string]any{})
	out := f.raw["Outputs"].(map[string]any)["AdminExample"]
	b, _ := json.Marshal(out)
	for _, want := range []string{"awscurl --service execute-api", "/api/admin/rooms/demo", "-X PUT"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("AdminExample %s lacks %q", b, want)
		}
	}
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
	for name, f := range map[string]func(testing.TB) fixture{"default": defaultStack, "gate": gateStack} {
		// GIVEN the stack WHEN its custom resources are read
		crs := customResources(f(t))
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
				if fn, ok := f(t).resources[tok[0].(string)]; ok && fn["Type"] == "AWS::Lambda::Function" {
					if to, _ := props(fn)["Timeout"].(float64); float64(st) <= to {
						t.Errorf("%s %s: ServiceTimeout %d s, not past its function's %v s", name, id, st, to)
					}
				}
			}
		}
	}
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
	f := defaultStack(t)
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
// second stage, the gate, every custom domain) and fails on any error. It is a Go test rather than
// a Makefile step so it lints the very templates the assertion tests check, without a CLI
// synthesis per variant, and runs wherever `go test ./...` does. Skipped without cfn-lint, except
// in CI. It runs in parallel, after the package's other tests, beside the CLI's synthesis: it
// calls into the CDK only for a variant no earlier test synthesized, and no other parallel test
// calls into it (the jsii runtime serves one call at a time). The variants are linted by
// cfnLintProcesses processes at once (about 3 s of start-up each, then 5 s a template).
func TestCfnLint(t *testing.T) {
	if testing.Short() {
		t.Skip("cfn-lint over every variant: make test runs it, make test-short does not")
	}
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("cfn-lint not on PATH in CI")
		}
		t.Skip("cfn-lint not on PATH (pip install cfn-lint)")
	}
	t.Parallel()
	dir := t.TempDir()
	var files []string
	for name, f := range map[string]func(testing.TB) fixture{"default": defaultStack, "nodes": nodesStack, "waf": wafStack, "staging": stagingStack, "gate": gateStack, "domains": domainsStack} {
		b, err := json.MarshalIndent(f(t).raw, "", " ")
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
	var wg sync.WaitGroup
	for i := range cfnLintProcesses {
		var part []string
		for j := i; j < len(files); j += cfnLintProcesses {
			part = append(part, files[j])
		}
		wg.Go(func() { cfnLint(t, lint, append(slices.Clone(args), part...)) })
	}
	wg.Wait()
}

// cfnLintProcesses is how many cfn-lint processes TestCfnLint runs at once: the machine's cores
// (CI's two), which cfn-lint, one Python thread each, does not share.
var cfnLintProcesses = max(runtime.NumCPU(), 1)

// cfnLint runs cfn-lint with args and fails the test on any error it reports.
func cfnLint(t *testing.T, lint string, args []string) {
	out, err := exec.Command(lint, args...).CombinedOutput()
	// cfn-lint exits with a bit mask: 2 errors, 4 warnings, 8 informational; anything else
	// (1, 32 for a bad command line) is a failure too. Warnings are shown, not fatal: they are
	// advice (cfnLintIgnored lists none today).
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Error(err)
		return
	}
	if code&^(4|8) != 0 {
		t.Errorf("cfn-lint found errors (exit %d):\n%s", code, out)
	} else if len(out) > 0 {
		t.Logf("cfn-lint warnings (exit %d), not fatal:\n%s", code, out)
	}
}
