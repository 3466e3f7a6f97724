package stack_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// fixture is one synthesized stack: the CDK template for assertions, and its JSON for Go checks.
type fixture struct {
	tmpl      assertions.Template
	stack     awscdk.Stack
	resources map[string]map[string]any
	raw       map[string]any
}

// placeholderAssets makes a dist/ of empty bootstraps and, if page is true, a static/ with a page,
// so the tests neither need `make build` nor wait for the page to be written.
func placeholderAssets(t testing.TB, page bool) (dist, static string) {
	root := t.TempDir()
	dist = filepath.Join(root, "dist")
	for _, name := range append(functionNames(stack.Functions), stack.KeySyncFunction, stack.Forwarder) {
		must(t, os.MkdirAll(filepath.Join(dist, name), 0o755))
		must(t, os.WriteFile(filepath.Join(dist, name, "bootstrap"), nil, 0o755))
	}
	static = filepath.Join(root, "static")
	if page {
		must(t, os.MkdirAll(static, 0o755))
		must(t, os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html>"), 0o644))
	}
	return dist, static
}

func functionNames(fs []stack.Function) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// synth builds a stack from settings changed by edit and synthesizes it.
func synth(t testing.TB, region string, page bool, edit func(*stack.Settings)) fixture {
	t.Helper()
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, page)
	if edit != nil {
		edit(&set)
	}
	ctx := cdkContext(t)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &ctx})
	props := &stack.Props{Settings: set}
	if region != "" {
		// as infra/main.go does with waf=true: the region only, so nothing is looked up
		props.Env = &awscdk.Environment{Region: jsii.String(region)}
	}
	v := stack.New(app, set.StackName(), props)
	tmpl := assertions.Template_FromStack(v.Stack, nil)
	b, err := json.Marshal(tmpl.ToJSON())
	must(t, err)
	var raw map[string]any
	must(t, json.Unmarshal(b, &raw))
	res := map[string]map[string]any{}
	for id, r := range raw["Resources"].(map[string]any) {
		res[id] = r.(map[string]any)
	}
	return fixture{tmpl: tmpl, stack: v.Stack, resources: res, raw: raw}
}

// cdkContext is the context of cdk.json (the feature flags), so the stacks synthesized
// in-process are those `cdk synth` makes.
func cdkContext(t testing.TB) map[string]any {
	b, err := os.ReadFile(filepath.Join("..", "..", "cdk.json"))
	must(t, err)
	var c struct {
		Context map[string]any `json:"context"`
	}
	must(t, json.Unmarshal(b, &c))
	return c.Context
}

// The default stack is synthesized once and shared: synthesis runs through jsii and takes seconds.
var defaultStack = sync.OnceValue(func() fixture { return synth(onceT{}, "", true, nil) })

// sharedDir holds the shared fixtures' files; TestMain removes it.
var sharedDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "vestibule-infra-")
	if err != nil {
		panic(err)
	}
	sharedDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// onceT lets a shared fixture use the helpers outside any one test.
type onceT struct{ testing.TB }

func (onceT) Helper() {}
func (onceT) TempDir() string {
	d, err := os.MkdirTemp(sharedDir, "")
	if err != nil {
		panic(err)
	}
	return d
}
func (onceT) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

var nodesStack = sync.OnceValue(func() fixture {
	return synth(onceT{}, "", true, func(s *stack.Settings) { s.Cache = stack.CacheNodes })
})

// assert runs a CDK assertion, which panics through jsii on failure, and reports the failure
// as a test error so the other tests still run.
func assert(t *testing.T, check func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%v", r)
		}
	}()
	check()
}

func (f fixture) has(t *testing.T, typ string, p map[string]any) {
	t.Helper()
	assert(t, func() { f.tmpl.HasResourceProperties(&typ, p) })
}

func (f fixture) all(t *testing.T, typ string, p map[string]any) {
	t.Helper()
	assert(t, func() { f.tmpl.AllResourcesProperties(&typ, p) })
}

func (f fixture) count(t *testing.T, typ string, n float64) {
	t.Helper()
	assert(t, func() { f.tmpl.ResourceCountIs(&typ, &n) })
}

func (f fixture) output(t *testing.T, id string, p map[string]any) {
	t.Helper()
	assert(t, func() { f.tmpl.HasOutput(&id, p) })
}

// ofType returns the resources of one CloudFormation type, by logical id.
func (f fixture) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range f.resources {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// ours returns the Vestibule functions by name: those that carry the REDIS_URL environment (the
// others are CDK's own helpers, such as the BucketDeployment handler).
func (f fixture) ours(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range f.ofType("AWS::Lambda::Function") {
		env, _ := props(r)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if _, ok := vars[config.EnvRedisURL]; !ok {
			continue
		}
		name := strings.TrimPrefix(props(r)["Description"].(string), "Vestibule ")
		out[name] = r
	}
	if len(out) != len(stack.Functions) {
		t.Fatalf("found %d Vestibule functions, want %d", len(out), len(stack.Functions))
	}
	return out
}

func logicalID(f fixture, r map[string]any) string {
	for id, x := range f.resources {
		if reflect.ValueOf(x).Pointer() == reflect.ValueOf(r).Pointer() {
			return id
		}
	}
	return ""
}

func getAtt(id, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{id, attr}}
}

func TestFunctionsAreArm64OnAL2023(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	// WHEN its functions are read
	fns := f.ours(t)
	// THEN every Vestibule function is the Go bootstrap on provided.al2023, arm64, in the VPC,
	// with a log group of the configured retention
	for _, want := range stack.Functions {
		r, ok := fns[want.Name]
		if !ok {
			t.Fatalf("function %s missing", want.Name)
		}
		p := props(r)
		if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" {
			t.Errorf("%s: runtime %v handler %v, want provided.al2023 bootstrap", want.Name, p["Runtime"], p["Handler"])
		}
		if got := p["Architectures"]; !reflect.DeepEqual(got, []any{"arm64"}) {
			t.Errorf("%s: architectures %v, want [arm64]", want.Name, got)
		}
		if _, ok := p["VpcConfig"]; !ok {
			t.Errorf("%s: not in the VPC", want.Name)
		}
		if p["Timeout"] != want.Timeout || p["MemorySize"] != want.Memory {
			t.Errorf("%s: timeout %v memory %v, want %v %v", want.Name, p["Timeout"], p["MemorySize"], want.Timeout, want.Memory)
		}
	}
	// and every other function in the template is a CDK helper we can name
	for id, r := range f.ofType("AWS::Lambda::Function") {
		if slices.ContainsFunc(stack.Functions, func(fn stack.Function) bool { return props(r)["Description"] == "Vestibule "+fn.Name }) {
			continue
		}
		if !strings.HasPrefix(id, "CustomCDKBucketDeployment") && !strings.HasPrefix(id, "CustomVpcRestrictDefaultSG") &&
			!strings.HasPrefix(id, "KeySyncFunction") && // outside the VPC: TestKeySyncRunsOutsideTheVPCAtDeploy
			!strings.HasPrefix(id, "ForwarderFunction") { // the events' forwarder (events.go, events_test.go)
			t.Errorf("unexpected function %s (%v)", id, props(r)["Runtime"])
		}
	}
	f.all(t, "AWS::Logs::LogGroup", map[string]any{"RetentionInDays": 30})
}

func TestFunctionsSendNoPlatformLines(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	fns := f.ours(t)
	for id, r := range f.ofType("AWS::Lambda::Function") {
		if strings.HasPrefix(id, "ForwarderFunction") {
			fns[stack.Forwarder] = r
		}
	}
	if _, ok := fns[stack.Forwarder]; !ok {
		t.Fatal("no forwarder")
	}
	// THEN every function a call or an event invokes logs JSON, without Lambda's START, END and
	// REPORT lines (system logs at WARN), and Lambda drops none of its own lines (TRACE)
	for name, r := range fns {
		lc, _ := props(r)["LoggingConfig"].(map[string]any)
		if lc["LogFormat"] != "JSON" || lc["SystemLogLevel"] != "WARN" || lc["ApplicationLogLevel"] != "TRACE" {
			t.Errorf("%s: logging config %v, want JSON, system WARN, application TRACE", name, lc)
		}
		if _, ok := lc["LogGroup"]; !ok {
			t.Errorf("%s: logging config %v without its log group", name, lc)
		}
	}
	// and the API's functions log a sample of the successful polls (LOG_SAMPLE)
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[config.EnvLogSample] != "0.01" {
			t.Errorf("%s: %s=%v, want 0.01", name, config.EnvLogSample, vars[config.EnvLogSample])
		}
	}
	// GIVEN logSample=1 THEN every function logs every request
	all := synth(t, "", true, func(s *stack.Settings) { s.LogSample = 1 })
	for name, r := range all.ours(t) {
		if v := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)[config.EnvLogSample]; v != "1" {
			t.Errorf("logSample=1: %s: %s=%v", name, config.EnvLogSample, v)
		}
	}
}

func TestAdmitRunsEveryMinuteOneAtATime(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	admit := logicalID(f, f.ours(t)["admit"])
	// WHEN the schedule is read
	rules := f.ofType("AWS::Events::Rule")
	// THEN one rule fires rate(1 minute) and targets the admit function
	if len(rules) != 1 {
		t.Fatalf("%d rules, want 1", len(rules))
	}
	f.has(t, "AWS::Events::Rule", map[string]any{
		"ScheduleExpression": "rate(1 minute)",
		"State":              "ENABLED",
		"Targets": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"Arn": getAtt(admit, "Arn")}),
		}),
	})
	// and no function reserves concurrency (a reservation must leave the account's unreserved
	// pool at 10 or more, so on a new account whose total is 10 the first deploy would roll
	// back), and admit's timeout ends its run before the next minute's
	for name, r := range f.ours(t) {
		if rc, has := props(r)["ReservedConcurrentExecutions"]; has {
			t.Errorf("%s reserves concurrency %v by default", name, rc)
		}
		if name == "admit" {
			if to := props(r)["Timeout"].(float64); to < 30 || to > 60 {
				t.Errorf("admit timeout %v, want most of a minute and no more", to)
			}
		}
	}
	// and a late or failed minute is dropped, not retried into the next one
	f.has(t, "AWS::Lambda::EventInvokeConfig", map[string]any{
		"FunctionName": map[string]any{"Ref": admit}, "MaximumEventAgeInSeconds": 60, "MaximumRetryAttempts": 0,
	})
	// and EventBridge may invoke it
	f.has(t, "AWS::Lambda::Permission", map[string]any{
		"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com", "FunctionName": getAtt(admit, "Arn"),
	})
}

// cacheSecurity checks that the cache's security groups admit only the functions' security group.
func cacheSecurity(t *testing.T, f fixture, cacheType string, wantPorts [2]float64) {
	t.Helper()
	caches := f.ofType(cacheType)
	if len(caches) != 1 {
		t.Fatalf("%d %s, want 1", len(caches), cacheType)
	}
	var cacheSGs []any
	for _, c := range caches {
		cacheSGs = props(c)["SecurityGroupIds"].([]any)
	}
	var fnSG any
	for _, r := range f.ours(t) {
		sgs := props(r)["VpcConfig"].(map[string]any)["SecurityGroupIds"].([]any)
		if len(sgs) != 1 || (fnSG != nil && !reflect.DeepEqual(sgs[0], fnSG)) {
			t.Fatalf("functions do not share one security group: %v", sgs)
		}
		fnSG = sgs[0]
	}
	if len(cacheSGs) == 0 {
		t.Fatal("cache has no security group")
	}
	for _, sg := range cacheSGs {
		id := sg.(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		if reflect.DeepEqual(sg, fnSG) {
			t.Fatal("cache shares the functions' security group")
		}
		// inline rules: none may open the cache to an address range
		if in, ok := props(f.resources[id])["SecurityGroupIngress"]; ok {
			t.Errorf("cache security group has inline ingress %v", in)
		}
		n := 0
		for _, r := range f.ofType("AWS::EC2::SecurityGroupIngress") {
			p := props(r)
			if !reflect.DeepEqual(p["GroupId"], sg) {
				continue
			}
			n++
			if !reflect.DeepEqual(p["SourceSecurityGroupId"], fnSG) || p["CidrIp"] != nil || p["CidrIpv6"] != nil {
				t.Errorf("cache ingress from something other than the functions: %v", p)
			}
			if p["IpProtocol"] != "tcp" || p["FromPort"] != wantPorts[0] || p["ToPort"] != wantPorts[1] {
				t.Errorf("cache ingress ports %v-%v/%v, want tcp %v-%v", p["FromPort"], p["ToPort"], p["IpProtocol"], wantPorts[0], wantPorts[1])
			}
		}
		if n != 1 {
			t.Errorf("%d ingress rules on the cache, want 1", n)
		}
	}
	// and nothing anywhere opens ingress to the world
	for id, r := range f.ofType("AWS::EC2::SecurityGroup") {
		for _, in := range asSlice(props(r)["SecurityGroupIngress"]) {
			if m := in.(map[string]any); m["CidrIp"] == "0.0.0.0/0" || m["CidrIpv6"] == "::/0" {
				t.Errorf("%s open to the internet: %v", id, m)
			}
		}
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func TestServerlessCacheIsTLSAndReachableOnlyFromFunctions(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	// WHEN the cache is read
	// THEN it is ElastiCache Serverless for Valkey (TLS cannot be turned off there) and the functions
	// connect with rediss:// in cluster mode
	f.has(t, "AWS::ElastiCache::ServerlessCache", map[string]any{"Engine": "valkey"})
	f.count(t, "AWS::ElastiCache::ReplicationGroup", 0)
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if !redisURLIsTLS(vars[config.EnvRedisURL]) || vars[config.EnvRedisCluster] != "true" {
			t.Errorf("%s: REDIS_URL %v REDIS_CLUSTER %v, want rediss:// and true", name, vars[config.EnvRedisURL], vars[config.EnvRedisCluster])
		}
	}
	// and only the functions' security group reaches it, on the primary and reader ports
	cacheSecurity(t, f, "AWS::ElastiCache::ServerlessCache", [2]float64{6379, 6380})
}

// redisURLIsTLS reports whether a REDIS_URL value (a Fn::Join of the endpoint) starts with rediss://.
func redisURLIsTLS(v any) bool {
	join, ok := v.(map[string]any)["Fn::Join"].([]any)
	if !ok {
		return false
	}
	parts := join[1].([]any)
	s, ok := parts[0].(string)
	return ok && strings.HasPrefix(s, "rediss://")
}

func TestNodeCacheIsMultiAZClusterWithTLSRequired(t *testing.T) {
	// GIVEN the stack with cache=nodes
	f := nodesStack()
	// WHEN the cache is read
	// THEN it is a cluster-mode replication group, Multi-AZ with automatic failover, TLS required
	f.count(t, "AWS::ElastiCache::ServerlessCache", 0)
	f.has(t, "AWS::ElastiCache::ReplicationGroup", map[string]any{
		"Engine":                   "valkey",
		"ClusterMode":              "enabled",
		"AutomaticFailoverEnabled": true,
		"MultiAZEnabled":           true,
		"TransitEncryptionEnabled": true,
		"TransitEncryptionMode":    "required",
		"AtRestEncryptionEnabled":  true,
		"ReplicasPerNodeGroup":     1,
	})
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if !redisURLIsTLS(vars[config.EnvRedisURL]) || vars[config.EnvRedisCluster] != "true" {
			t.Errorf("%s: REDIS_URL %v, want rediss:// in cluster mode", name, vars[config.EnvRedisURL])
		}
	}
	// and only the functions reach it, on 6379
	cacheSecurity(t, f, "AWS::ElastiCache::ReplicationGroup", [2]float64{6379, 6379})
}

func TestVPCHasNoNATAndNoInterfaceEndpoint(t *testing.T) {
	for name, f := range map[string]func() fixture{"serverless": defaultStack, "nodes": nodesStack} {
		t.Run(name, func(t *testing.T) {
			f := f()
			// GIVEN a stack THEN there is no way out to the internet
			f.count(t, "AWS::EC2::NatGateway", 0)
			f.count(t, "AWS::EC2::InternetGateway", 0)
			f.all(t, "AWS::EC2::Subnet", map[string]any{"MapPublicIpOnLaunch": false})
			// and no interface endpoint, which bills by the hour in every zone whether used or not
			// (issue 15): the only endpoint is S3's gateway, which is free
			for id, ep := range f.ofType("AWS::EC2::VPCEndpoint") {
				if typ := props(ep)["VpcEndpointType"]; typ != "Gateway" {
					t.Errorf("%s: a VPC endpoint of type %v, want only Gateway", id, typ)
				}
			}
		})
	}
}

func TestBucketIsPrivateAndReadableOnlyByTheDistribution(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	// THEN the bucket blocks every kind of public access
	f.has(t, "AWS::S3::Bucket", map[string]any{
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
	})
	// and its policy allows one thing: CloudFront reading objects on behalf of this distribution
	var dist string
	for id := range f.ofType("AWS::CloudFront::Distribution") {
		dist = id
	}
	page := ""
	for id := range f.ofType("AWS::S3::Bucket") {
		if strings.HasPrefix(id, "PageBucket") {
			page = id
		}
	}
	policies := map[string]map[string]any{}
	for id, p := range f.ofType("AWS::S3::BucketPolicy") {
		if reflect.DeepEqual(props(p)["Bucket"], map[string]any{"Ref": page}) {
			policies[id] = p
		}
	}
	if len(policies) != 1 {
		t.Fatalf("%d policies on the page bucket %s, want 1", len(policies), page)
	}
	for _, p := range policies {
		var allows []map[string]any
		for _, s := range asSlice(props(p)["PolicyDocument"].(map[string]any)["Statement"]) {
			st := s.(map[string]any)
			if st["Effect"] == "Allow" {
				allows = append(allows, st)
			}
		}
		if len(allows) != 1 {
			t.Fatalf("bucket policy has %d Allow statements, want 1: %v", len(allows), allows)
		}
		a := allows[0]
		if !reflect.DeepEqual(a["Principal"], map[string]any{"Service": "cloudfront.amazonaws.com"}) || a["Action"] != "s3:GetObject" {
			t.Errorf("bucket policy allows %v to %v, want cloudfront.amazonaws.com s3:GetObject", a["Principal"], a["Action"])
		}
		cond, _ := json.Marshal(a["Condition"])
		if !strings.Contains(string(cond), `"AWS:SourceArn"`) || !strings.Contains(string(cond), `{"Ref":"`+dist+`"}`) {
			t.Errorf("bucket policy condition %s does not pin the distribution %s", cond, dist)
		}
	}
	f.count(t, "AWS::CloudFront::OriginAccessControl", 1)
}

func TestRoutesAndIAMOnAdmin(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	// WHEN the routes are read
	var got, want []string
	for _, r := range f.ofType("AWS::ApiGatewayV2::Route") {
		p := props(r)
		key := p["RouteKey"].(string)
		got = append(got, key)
		// THEN admin routes require IAM and no other route does
		wantAuth := "NONE"
		if strings.Contains(key, " /api/admin/") {
			wantAuth = "AWS_IAM"
		}
		if p["AuthorizationType"] != wantAuth {
			t.Errorf("%s: authorization %v, want %s", key, p["AuthorizationType"], wantAuth)
		}
	}
	// and the routes are exactly those of the API's route table (routes.All)
	for _, r := range routes.All {
		want = append(want, r.Key())
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("routes\n got %v\nwant %v", got, want)
	}
	// and each goes to the function the table names
	for _, r := range f.ofType("AWS::ApiGatewayV2::Route") {
		key := props(r)["RouteKey"].(string)
		if fn, want := routeFunction(t, f, r), functionOf(key); fn != want {
			t.Errorf("%s goes to %q, want %q", key, fn, want)
		}
	}
	// and the integrations are Lambda proxies with payload 2.0, and the stage is throttled
	f.all(t, "AWS::ApiGatewayV2::Integration", map[string]any{
		"IntegrationType": "AWS_PROXY", "PayloadFormatVersion": "2.0",
	})
	f.has(t, "AWS::ApiGatewayV2::Stage", map[string]any{
		"StageName":            "$default",
		"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": 5000, "ThrottlingBurstLimit": 5000},
	})
}

// functionOf is the function routes.All names for a route key.
func functionOf(key string) string {
	for _, r := range routes.All {
		if r.Key() == key {
			return r.Function
		}
	}
	return ""
}

// routeFunction follows a route to its integration and the integration to its function, and returns
// the function's name (its description is "Vestibule <name>").
func routeFunction(t *testing.T, f fixture, route map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(props(route)["Target"])
	for id, r := range f.resources {
		if r["Type"] != "AWS::ApiGatewayV2::Integration" || !strings.Contains(string(b), `"Ref":"`+id+`"`) {
			continue
		}
		uri, _ := json.Marshal(props(r)["IntegrationUri"])
		for fid, fr := range f.resources {
			if fr["Type"] == "AWS::Lambda::Function" && strings.Contains(string(uri), `"`+fid+`"`) {
				return strings.TrimPrefix(props(fr)["Description"].(string), "Vestibule ")
			}
		}
	}
	t.Errorf("route %v: no integration to a function", props(route)["RouteKey"])
	return ""
}

// wildcardExceptions names every IAM statement allowed a "Resource": "*", by action, and why.
// It is empty: the functions' VPC network-interface permissions (ec2:CreateNetworkInterface and
// friends, which AWS only grants on "*") and their log permissions come from the AWS managed policies
// AWSLambdaVPCAccessExecutionRole and AWSLambdaBasicExecutionRole, not from a statement in this
// template; TestManagedPoliciesAreTheLambdaServiceRoles checks that.
var wildcardExceptions = map[string]string{}

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
	for name, f := range map[string]func() fixture{"serverless": defaultStack, "nodes": nodesStack} {
		t.Run(name, func(t *testing.T) {
			// GIVEN a stack WHEN its policy statements are read
			all := statements(f())
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
	// GIVEN the default stack
	f := defaultStack()
	// WHEN the roles' managed policies are read
	allowed := []string{"service-role/AWSLambdaBasicExecutionRole", "service-role/AWSLambdaVPCAccessExecutionRole"}
	vpcRoles := 0
	for id, r := range f.ofType("AWS::IAM::Role") {
		for _, arn := range asSlice(props(r)["ManagedPolicyArns"]) {
			b, _ := json.Marshal(arn)
			// THEN they are only the two AWS Lambda execution policies
			if !slices.ContainsFunc(allowed, func(a string) bool { return strings.Contains(string(b), ":iam::aws:policy/"+a+`"`) }) {
				t.Errorf("%s: managed policy %s is not a Lambda execution policy", id, b)
			}
			if strings.Contains(string(b), "AWSLambdaVPCAccessExecutionRole") {
				vpcRoles++
			}
		}
	}
	// and every function in the VPC gets its network-interface rights that way
	if vpcRoles != len(stack.Functions) {
		t.Errorf("%d roles with AWSLambdaVPCAccessExecutionRole, want %d", vpcRoles, len(stack.Functions))
	}
}

func TestNoSecretValueInTheTemplate(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	// THEN both secrets are generated by Secrets Manager at deploy time
	secrets := f.ofType("AWS::SecretsManager::Secret")
	if len(secrets) != 3 {
		t.Fatalf("%d secrets, want 3 (ticket, entry key, origin)", len(secrets))
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

func TestEnvironmentCarriesTheDeploySettings(t *testing.T) {
	// GIVEN a stack with room defaults and an issuer of its own
	rd := stack.DefaultRoomDefaults()
	rd.MaxActive, rd.Mode, rd.OriginURL = 42, "auto", "https://tickets.example.org/book"
	f := synth(t, "", true, func(s *stack.Settings) {
		s.RoomDefaults, s.Issuer, s.LogLevel, s.LogRetentionDays = rd, "acme-rooms", "debug", 7
	})
	// WHEN the functions' environment is read
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		// THEN it carries them, the room defaults as JSON the functions parse
		var got room.Config
		must(t, json.Unmarshal([]byte(vars[config.EnvDefaultRoomConfig].(string)), &got))
		if got != rd {
			t.Errorf("%s: DEFAULT_ROOM_CONFIG %+v, want %+v", name, got, rd)
		}
		if vars[config.EnvIssuer] != "acme-rooms" || vars[config.EnvLogLevel] != "debug" || vars[config.EnvAdminAuth] != "iam" {
			t.Errorf("%s: issuer %v log level %v admin auth %v", name, vars[config.EnvIssuer], vars[config.EnvLogLevel], vars[config.EnvAdminAuth])
		}
	}
	f.all(t, "AWS::Logs::LogGroup", map[string]any{"RetentionInDays": 7})
}

func TestCloudFrontCachesOnlyStatusAndJWKS(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	var cfg map[string]any
	for _, d := range f.ofType("AWS::CloudFront::Distribution") {
		cfg = props(d)["DistributionConfig"].(map[string]any)
	}
	var shortCache, apiCache, apiRequests string
	for id := range f.ofType("AWS::CloudFront::CachePolicy") {
		if strings.HasPrefix(id, "ShortCache") {
			shortCache = id
		} else {
			apiCache = id
		}
	}
	for id := range f.ofType("AWS::CloudFront::OriginRequestPolicy") {
		apiRequests = id
	}
	// WHEN the behaviours are read, in CloudFront's order of precedence
	var patterns []string
	for _, b := range asSlice(cfg["CacheBehaviors"]) {
		b := b.(map[string]any)
		p := b["PathPattern"].(string)
		patterns = append(patterns, p)
		// THEN every behaviour is HTTPS only and carries the security headers
		if b["ViewerProtocolPolicy"] != "redirect-to-https" || b["ResponseHeadersPolicyId"] == nil {
			t.Errorf("%s: viewer policy %v, headers %v", p, b["ViewerProtocolPolicy"], b["ResponseHeadersPolicyId"])
		}
		if slices.Contains(stack.CachedAPIPaths, p) {
			// and status and JWKS use the short cache, for GET and HEAD only
			if !reflect.DeepEqual(b["CachePolicyId"], map[string]any{"Ref": shortCache}) {
				t.Errorf("%s: cache policy %v, want the short cache", p, b["CachePolicyId"])
			}
			if !reflect.DeepEqual(b["AllowedMethods"], []any{"GET", "HEAD"}) {
				t.Errorf("%s: methods %v", p, b["AllowedMethods"])
			}
		} else if !reflect.DeepEqual(b["CachePolicyId"], map[string]any{"Ref": apiCache}) ||
			!reflect.DeepEqual(b["OriginRequestPolicyId"], map[string]any{"Ref": apiRequests}) {
			// and the rest of the API uses the per-visitor policies (below)
			t.Errorf("%s: cache %v origin request %v, want %s and %s", p, b["CachePolicyId"], b["OriginRequestPolicyId"], apiCache, apiRequests)
		}
	}
	// and the specific cached paths come before the catch-all /api/*
	if want := append(slices.Clone(stack.CachedAPIPaths), "/api/*"); !slices.Equal(patterns, want) {
		t.Errorf("behaviours %v, want %v in this order", patterns, want)
	}
	def := cfg["DefaultCacheBehavior"].(map[string]any)
	if def["ViewerProtocolPolicy"] != "redirect-to-https" || def["ResponseHeadersPolicyId"] == nil {
		t.Errorf("default behaviour: %v", def)
	}
	// and the per-visitor policy caches nothing by default (the API answers no-store) and
	// forwards the ticket in Authorization, which only a cache policy can forward
	f.has(t, "AWS::CloudFront::CachePolicy", map[string]any{
		"CachePolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"MinTTL": 0, "DefaultTTL": 0, "MaxTTL": 1,
			"ParametersInCacheKeyAndForwardedToOrigin": assertions.Match_ObjectLike(&map[string]any{
				"HeadersConfig":      map[string]any{"HeaderBehavior": "whitelist", "Headers": []any{"Authorization"}},
				"CookiesConfig":      map[string]any{"CookieBehavior": "none"},
				"QueryStringsConfig": map[string]any{"QueryStringBehavior": "all"},
			}),
		}),
	})
	// and the origin request policy adds the viewer's address (the enqueue limit's key) and
	// never forwards Host, which API Gateway needs to be its own
	f.has(t, "AWS::CloudFront::OriginRequestPolicy", map[string]any{
		"OriginRequestPolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"HeadersConfig": map[string]any{"HeaderBehavior": "whitelist", "Headers": []any{"CloudFront-Viewer-Address", "Content-Type", "X-Vestibule-Challenge", "X-Vestibule-Solution", "Idempotency-Key"}},
		}),
	})
	// and the short cache lives a second or two, keyed on the path only (no headers, cookies or query)
	f.has(t, "AWS::CloudFront::CachePolicy", map[string]any{
		"CachePolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"MinTTL": 0, "DefaultTTL": 1, "MaxTTL": 2,
			"ParametersInCacheKeyAndForwardedToOrigin": assertions.Match_ObjectLike(&map[string]any{
				"HeadersConfig":      map[string]any{"HeaderBehavior": "none"},
				"CookiesConfig":      map[string]any{"CookieBehavior": "none"},
				"QueryStringsConfig": map[string]any{"QueryStringBehavior": "none"},
			}),
		}),
	})
}

func TestRoomPathsServeThePage(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	var fn string
	var code string
	for id, r := range f.ofType("AWS::CloudFront::Function") {
		fn, code = id, props(r)["FunctionCode"].(string)
	}
	// THEN the default behaviour runs the room-path function on viewer requests
	f.has(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{
			"DefaultCacheBehavior": assertions.Match_ObjectLike(&map[string]any{
				"FunctionAssociations": []any{map[string]any{"EventType": "viewer-request", "FunctionARN": getAtt(fn, "FunctionARN")}},
			}),
		}),
	})
	// WHEN the function runs on some paths (node stands in for the CloudFront JS runtime)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH")
	}
	script := code + `
for (const uri of ["/r/demo", "/rooms/spring-tour/", "/", "/waiting.css", "/waiting.js", "/r/a/b", "/r/{x}", "/api/rooms/demo/status"]) {
  console.log(uri + " " + handler({request: {uri: uri}}).uri);
}`
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	// THEN room paths become index.html and nothing else changes
	want := "/r/demo /index.html\n/rooms/spring-tour/ /index.html\n/ /\n/waiting.css /waiting.css\n" +
		"/waiting.js /waiting.js\n/r/a/b /r/a/b\n/r/{x} /r/{x}\n/api/rooms/demo/status /api/rooms/demo/status\n"
	if string(out) != want {
		t.Errorf("rewrites\n%s\nwant\n%s", out, want)
	}
}

func TestSecurityHeaders(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	// THEN the response headers policy sets HSTS, nosniff, DENY framing, no-referrer and a
	// self-only content security policy, overriding whatever an origin says
	f.has(t, "AWS::CloudFront::ResponseHeadersPolicy", map[string]any{
		"ResponseHeadersPolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"SecurityHeadersConfig": map[string]any{
				"StrictTransportSecurity": map[string]any{"AccessControlMaxAgeSec": 31536000, "IncludeSubdomains": true, "Override": true},
				"ContentTypeOptions":      map[string]any{"Override": true},
				"FrameOptions":            map[string]any{"FrameOption": "DENY", "Override": true},
				"ReferrerPolicy":          map[string]any{"ReferrerPolicy": "no-referrer", "Override": true},
				"ContentSecurityPolicy": map[string]any{
					"ContentSecurityPolicy": assertions.Match_StringLikeRegexp(jsii.String("^default-src 'self';")),
					"Override":              true,
				},
			},
		}),
	})
	// and the CSP allows no source other than 'self', but for forms to https sites (a gated room's
	// entry token goes to the protected site's /.vestibule/enter) and images over https (a room's logo)
	httpsOK := []string{"form-action", "img-src"}
	for _, directive := range strings.Split(stack.ContentSecurityPolicy, ";") {
		for _, src := range strings.Fields(directive)[1:] {
			if !slices.Contains([]string{"'self'", "'none'"}, src) && (!slices.Contains(httpsOK, strings.Fields(directive)[0]) || src != "https:") {
				t.Errorf("CSP directive %q allows %s", strings.TrimSpace(directive), src)
			}
		}
	}
}

func TestAlarmsAndDashboard(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	alarms := f.ofType("AWS::CloudWatch::Alarm")
	// WHEN the alarms are read
	byMetric := map[string]int{}
	for _, a := range alarms {
		p := props(a)
		byMetric[p["MetricName"].(string)]++
		// THEN every alarm notifies the topic
		if len(asSlice(p["AlarmActions"])) == 0 {
			t.Errorf("alarm %v has no action", p["AlarmDescription"])
		}
	}
	// and each function has an errors and a throttles alarm
	if byMetric["Errors"] != len(stack.Functions) || byMetric["Throttles"] != len(stack.Functions) {
		t.Errorf("errors alarms %d, throttles alarms %d, want %d each", byMetric["Errors"], byMetric["Throttles"], len(stack.Functions))
	}
	// and admit not running for 3 minutes alarms, missing data counting as not running
	admit := logicalID(f, f.ours(t)["admit"])
	f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
		"Namespace": "AWS/Lambda", "MetricName": "Invocations",
		"Dimensions":         []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": admit}}},
		"ComparisonOperator": "LessThanThreshold", "Threshold": 1, "EvaluationPeriods": 3, "Period": 60,
		"TreatMissingData": "breaching",
	})
	// and Redis errors reported by the functions of this stack alarm (the functions put the
	// stack name in the metric's Stack dimension)
	f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
		"Namespace": metrics.Namespace, "MetricName": metrics.RedisErrors, "Statistic": "Sum",
		"Dimensions": []any{map[string]any{"Name": metrics.StackDimension, "Value": "Vestibule"}},
	})
	f.count(t, "AWS::CloudWatch::Dashboard", 1)
}

func TestOutputs(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
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

func TestWAFIsOptInAndRateBased(t *testing.T) {
	// GIVEN the default stack THEN it has no web ACL
	defaultStack().count(t, "AWS::WAFv2::WebACL", 0)

	// GIVEN waf=true in us-east-1
	f := synth(t, "us-east-1", true, func(s *stack.Settings) { s.WAF, s.WAFRateLimit = true, 1234 })
	// THEN a CloudFront-scoped ACL blocks an IP over the rate, and the distribution uses it
	f.has(t, "AWS::WAFv2::WebACL", map[string]any{
		"Scope": "CLOUDFRONT",
		"Rules": []any{assertions.Match_ObjectLike(&map[string]any{
			"Action":    map[string]any{"Block": map[string]any{}},
			"Statement": map[string]any{"RateBasedStatement": map[string]any{"Limit": 1234, "AggregateKeyType": "IP"}},
		})},
	})
	var acl string
	for id := range f.ofType("AWS::WAFv2::WebACL") {
		acl = id
	}
	f.has(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{"WebACLId": getAtt(acl, "Arn")}),
	})
	assert(t, func() {
		assertions.Annotations_FromStack(f.stack).HasNoError(jsii.String("*"), assertions.Match_AnyValue())
	})

	// GIVEN waf=true in another region THEN synthesis reports an error naming us-east-1
	// (the synthesis itself fails on an error annotation, so the stack is only constructed)
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, true)
	set.WAF = true
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	g := stack.New(app, "Vestibule", &stack.Props{Settings: set, StackProps: awscdk.StackProps{
		Env: &awscdk.Environment{Region: jsii.String("eu-west-1"), Account: jsii.String("123456789012")},
	}})
	found := false
	for _, m := range *g.Node().Metadata() {
		if *m.Type == "aws:cdk:error" && strings.Contains(fmt.Sprint(m.Data), "us-east-1") {
			found = true
		}
	}
	if !found {
		t.Error("waf=true in eu-west-1: no error annotation naming us-east-1")
	}
}

func TestNoStaticDirDeploysNoPage(t *testing.T) {
	// GIVEN no static/ yet (the page is written separately)
	f := synth(t, "", false, nil)
	// THEN the stack still synthesizes, uploads nothing and says so
	f.count(t, "Custom::CDKBucketDeployment", 0)
	assert(t, func() {
		assertions.Annotations_FromStack(f.stack).HasWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("deploys no waiting page")))
	})
	// while the default stack, with a page, uploads it with a short browser cache
	defaultStack().has(t, "Custom::CDKBucketDeployment", map[string]any{
		"Prune": true, "RetainOnDelete": false, "SystemMetadata": map[string]any{"cache-control": "public, max-age=60"},
	})
}

func TestSettingsFromContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     map[string]any
		check   func(stack.Settings) bool
		wantErr bool
	}{
		{"defaults", nil, func(s stack.Settings) bool { return reflect.DeepEqual(s, stack.DefaultSettings()) }, false},
		{"nodes and waf from the command line", map[string]any{"cache": "nodes", "waf": "true", "wafRateLimit": "500"},
			func(s stack.Settings) bool { return s.Cache == stack.CacheNodes && s.WAF && s.WAFRateLimit == 500 }, false},
		{"room defaults overlay, as JSON text", map[string]any{"roomDefaults": `{"maxActive":10,"originUrl":"https://x.example/"}`},
			func(s stack.Settings) bool {
				return s.RoomDefaults.MaxActive == 10 && s.RoomDefaults.OriginURL == "https://x.example/" &&
					s.RoomDefaults.AdmitPerMinute == stack.DefaultRoomDefaults().AdmitPerMinute
			}, false},
		{"room defaults as a cdk.json object", map[string]any{"roomDefaults": map[string]any{"mode": "auto"}},
			func(s stack.Settings) bool { return s.RoomDefaults.Mode == "auto" }, false},
		{"log retention", map[string]any{"logRetentionDays": 90}, func(s stack.Settings) bool { return s.LogRetentionDays == 90 }, false},
		{"log sample", map[string]any{"logSample": "0.1"}, func(s stack.Settings) bool { return s.LogSample == 0.1 }, false},
		{"log sample none, from cdk.json", map[string]any{"logSample": 0}, func(s stack.Settings) bool { return s.LogSample == 0 }, false},
		{"log sample above 1", map[string]any{"logSample": "5"}, nil, true},
		{"log sample a percentage", map[string]any{"logSample": "1%"}, nil, true},
		{"unknown cache", map[string]any{"cache": "memcached"}, nil, true},
		{"waf not a bool", map[string]any{"waf": "maybe"}, nil, true},
		{"retention CloudWatch refuses", map[string]any{"logRetentionDays": "31"}, nil, true},
		{"room defaults typo", map[string]any{"roomDefaults": `{"maxActiv":10}`}, nil, true},
		{"room defaults bad mode", map[string]any{"roomDefaults": `{"mode":"fast"}`}, nil, true},
		// the engine's ranges, not a weaker copy: every PUT leaving the field out would get 400
		{"room defaults out of the engine's range", map[string]any{"roomDefaults": `{"sessionTTLSeconds":5}`}, nil, true},
		{"negative rate", map[string]any{"apiRateLimit": "-1"}, nil, true},
		{"stage names the stack", map[string]any{"stage": "staging"},
			func(s stack.Settings) bool { return s.Stage == "staging" && s.StackName() == "Vestibule-staging" }, false},
		{"no stage is the stack Vestibule", map[string]any{}, func(s stack.Settings) bool { return s.StackName() == "Vestibule" }, false},
		{"stage with a capital", map[string]any{"stage": "Prod"}, nil, true},
		{"stage too long for the account-wide names", map[string]any{"stage": "a23456789012345678901"}, nil, true},
		{"price class", map[string]any{"priceClass": "200"}, func(s stack.Settings) bool { return s.PriceClass == "200" }, false},
		{"unknown price class", map[string]any{"priceClass": "50"}, nil, true},
		{"origin secret version", map[string]any{"originSecretVersion": "0f1e2d3c-aaaa"}, func(s stack.Settings) bool { return s.OriginSecretVersion == "0f1e2d3c-aaaa" }, false},
		{"origin secret version that would break the reference", map[string]any{"originSecretVersion": "x:y"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// GIVEN an app with this context
			app := awscdk.NewApp(&awscdk.AppProps{Context: &tt.ctx, Outdir: jsii.String(t.TempDir())})
			// WHEN the settings are read
			s, err := stack.FromContext(app.Node())
			// THEN they are what the context says, or a bad-setting error
			if tt.wantErr {
				if !errors.Is(err, stack.ErrBadSetting) {
					t.Fatalf("err = %v, want ErrBadSetting", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(s) {
				t.Errorf("settings %+v", s)
			}
		})
	}
}

// secretActions lists the Secrets Manager actions the policies attached to
// the role of the function with the given description allow.
func secretActions(f fixture, description string) []string {
	role := ""
	for _, r := range f.resources {
		p := props(r)
		if r["Type"] == "AWS::Lambda::Function" && p["Description"] == description {
			if ga, ok := p["Role"].(map[string]any)["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
				role, _ = ga[0].(string)
			}
		}
	}
	var out []string
	for id, sts := range statements(f) {
		p := props(f.resources[id])
		attached := false
		for _, ref := range asSlice(p["Roles"]) {
			if m, ok := ref.(map[string]any); ok && m["Ref"] == role {
				attached = true
			}
		}
		if !attached {
			continue
		}
		for _, st := range sts {
			actions := asSlice(st["Action"])
			if a, ok := st["Action"].(string); ok {
				actions = []any{a}
			}
			for _, a := range actions {
				if s, _ := a.(string); strings.HasPrefix(s, "secretsmanager:") {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func TestNoFunctionInTheVPCCallsSecretsManager(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack()
	// WHEN the Secrets Manager permissions of each function's role are read
	// THEN no function in the VPC has any (there is no endpoint to reach it by), and the key sync,
	// outside the VPC, may read the secrets
	for _, fn := range stack.Functions {
		if got := secretActions(f, "Vestibule "+fn.Name); len(got) != 0 {
			t.Errorf("%s may %v; the functions read the keys object", fn.Name, got)
		}
	}
	if got := secretActions(f, *keySyncDescription); !slices.Contains(got, "secretsmanager:GetSecretValue") {
		t.Errorf("the key sync cannot read the secrets: %v", got)
	}
}

// The page bucket gets the waiting page and not the operator's console, which
// `vestibule console` serves locally (it signs the admin calls).
func TestConsoleIsNotUploaded(t *testing.T) {
	notPublic := func(rel string) bool {
		for _, p := range stack.NotPublic {
			if ok, _ := filepath.Match(strings.TrimSuffix(p, "/**"), rel); ok || strings.HasPrefix(rel, strings.TrimSuffix(p, "**")) && strings.HasSuffix(p, "/**") {
				return true
			}
		}
		return false
	}
	for _, f := range []string{"console.html", "console.css", "js/console.js", "vendor/uplot/uPlot.iife.min.js", "static.go"} {
		if _, err := os.Stat(filepath.Join("..", "..", "static", f)); err != nil {
			t.Errorf("static/%s: %v (update the test or NotPublic)", f, err)
		}
		if !notPublic(f) {
			t.Errorf("static/%s would be uploaded to the public bucket", f)
		}
	}
	for _, f := range []string{"index.html", "waiting.css", "waiting.js", "challenge-worker.js"} {
		if _, err := os.Stat(filepath.Join("..", "..", "static", f)); err != nil {
			t.Errorf("static/%s: %v (update the test or NotPublic)", f, err)
		}
		if notPublic(f) {
			t.Errorf("static/%s, part of the waiting page, would not be uploaded", f)
		}
	}
	// The modules the bundles are made of are not uploaded: the page loads none of them.
	for _, f := range []string{"js/main.js", "js/challenge.js", "js/challenge-worker.js"} {
		if !notPublic(f) {
			t.Errorf("static/%s, bundled into waiting.js, would be uploaded", f)
		}
	}
}
