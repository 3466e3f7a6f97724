package stack_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestFunctionsAreArm64OnAL2023(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
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
			!strings.HasPrefix(id, "ForwarderFunction") && // the events' forwarder (events.go, events_test.go)
			!strings.HasPrefix(id, "NotifyFunction") { // outside the VPC: the notices (notify.go, notify_test.go)
			t.Errorf("unexpected function %s (%v)", id, props(r)["Runtime"])
		}
	}
	f.all(t, "AWS::Logs::LogGroup", map[string]any{"RetentionInDays": 30})
}

func TestFunctionsSendNoPlatformLines(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
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
	f := defaultStack(t)
	admit := logicalID(f, f.ours(t)["admit"])
	// WHEN the schedule is read
	rules := f.ofType("AWS::Events::Rule")
	// THEN one rule fires rate(1 minute) and targets the admit function (the other is the
	// notices', on the events' bus: notify_test.go)
	if len(rules) != 2 {
		t.Fatalf("%d rules, want the schedule and the notices'", len(rules))
	}
	f.has(t, "AWS::Events::Rule", map[string]any{
		"ScheduleExpression": "rate(1 minute)",
		"State":              "ENABLED",
		"Targets": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"Arn": getAtt(admit, "Arn")}),
		}),
	})
	// and no function reserves concurrency (a reservation must leave the account's unreserved
	// pool at 100 or more, so on a new account whose total is 10 the first deploy would roll
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
		if !reflect.DeepEqual(got, rd) {
			t.Errorf("%s: DEFAULT_ROOM_CONFIG %+v, want %+v", name, got, rd)
		}
		if vars[config.EnvIssuer] != "acme-rooms" || vars[config.EnvLogLevel] != "debug" || vars[config.EnvAdminAuth] != "iam" {
			t.Errorf("%s: issuer %v log level %v admin auth %v", name, vars[config.EnvIssuer], vars[config.EnvLogLevel], vars[config.EnvAdminAuth])
		}
	}
	f.all(t, "AWS::Logs::LogGroup", map[string]any{"RetentionInDays": 7})
}

func TestRegionFenceIsTheStacksRegion(t *testing.T) {
	// GIVEN a stack of a two-region deployment
	f := synth(t, "", true, func(s *stack.Settings) { s.RegionFence = true })
	// WHEN the functions' environment is read
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		// THEN every function writes for the stack's own region
		if got, _ := json.Marshal(vars[config.EnvRegionFence]); string(got) != `{"Ref":"AWS::Region"}` {
			t.Errorf("%s: REGION_FENCE %s, want the stack's region", name, got)
		}
	}
	// and a stack of one region writes for none
	if v := defaultEnvironment(t)[config.EnvRegionFence]; v != "" {
		t.Errorf("default stack: REGION_FENCE %v, want empty", v)
	}
}

func TestSAMLocalCanOverrideEveryVariable(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
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

// defaultEnvironment is the environment of the default stack's enqueue function.
func defaultEnvironment(t *testing.T) map[string]any {
	return props(defaultStack(t).ours(t)["enqueue"])["Environment"].(map[string]any)["Variables"].(map[string]any)
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
		assertions.Annotations_FromStack(defaultStack(t).stack).HasNoError(jsii.String("*"), assertions.Match_AnyValue())
	})
	if n := stack.EnvironmentSize(defaultEnvironment(t)); n > 3000 {
		t.Errorf("the default environment is about %d bytes", n)
	}
}
