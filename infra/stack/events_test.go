package stack_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
)

// forwarder returns the forwarder function's logical id and resource.
func forwarder(t *testing.T, f fixture) (string, map[string]any) {
	t.Helper()
	var id string
	var fn map[string]any
	for rid, r := range f.ofType("AWS::Lambda::Function") {
		env, _ := props(r)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if _, ok := vars[eventbus.EnvBus]; ok {
			if id != "" {
				t.Fatalf("two functions with %s: %s, %s", eventbus.EnvBus, id, rid)
			}
			id, fn = rid, r
		}
	}
	if id == "" {
		t.Fatal("no forwarder function")
	}
	return id, fn
}

// logGroupOf returns the logical id of the log group a function logs to.
func logGroupOf(r map[string]any) string {
	lc, _ := props(r)["LoggingConfig"].(map[string]any)
	lg, _ := lc["LogGroup"].(map[string]any)
	ref, _ := lg["Ref"].(string)
	return ref
}

func TestEventsReachTheBusThroughTheLogs(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// THEN it has one custom event bus, named after the stack
	buses := f.ofType("AWS::Events::EventBus")
	if len(buses) != 1 {
		t.Fatalf("%d event buses, want 1", len(buses))
	}
	var bus string
	for id, b := range buses {
		bus = id
		if props(b)["Name"] != "Vestibule-events" {
			t.Errorf("bus name %v, want Vestibule-events", props(b)["Name"])
		}
	}
	fwd, fn := forwarder(t, f)
	p := props(fn)
	// and the forwarder runs outside the VPC, on arm64, with the bus's ARN and the log groups it
	// takes events from (TestForwarderTakesEventsOnlyFromTheEmittersLogGroups) and nothing else
	if p["VpcConfig"] != nil {
		t.Errorf("the forwarder is in the VPC: %v", p["VpcConfig"])
	}
	vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
	if len(vars) != 2 || !equalJSON(vars[eventbus.EnvBus], getAtt(bus, "Arn")) || vars[eventbus.EnvLogGroups] == nil {
		t.Errorf("forwarder environment %v, want only %s = the bus's ARN and %s", vars, eventbus.EnvBus, eventbus.EnvLogGroups)
	}
	if archs := asSlice(p["Architectures"]); len(archs) != 1 || archs[0] != "arm64" || p["Runtime"] != "provided.al2023" {
		t.Errorf("forwarder runtime %v %v", p["Runtime"], p["Architectures"])
	}
	// and a failed batch is retried twice by Lambda's asynchronous invocation
	f.has(t, "AWS::Lambda::EventInvokeConfig", map[string]any{"FunctionName": map[string]any{"Ref": fwd}, "MaximumRetryAttempts": 2})
	// and a batch still failing then is kept in an encrypted dead-letter queue for 14 days, with an
	// alarm on it
	dlq := deadLetters(t, f)
	if dc, _ := p["DeadLetterConfig"].(map[string]any); dc == nil || !equalJSON(dc["TargetArn"], getAtt(dlq, "Arn")) {
		t.Errorf("forwarder dead-letter config %v, want the queue %s", p["DeadLetterConfig"], dlq)
	}
	if q := props(f.ofType("AWS::SQS::Queue")[dlq]); q["MessageRetentionPeriod"] != float64(14*24*3600) || q["SqsManagedSseEnabled"] != true {
		t.Errorf("dead-letter queue %v, want 14 days and SQS-managed encryption", q)
	}
	f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
		"MetricName": "ApproximateNumberOfMessagesVisible", "Namespace": "AWS/SQS", "Threshold": 1,
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": getAtt(dlq, "QueueName")}},
	})

	// and each function that writes events has one subscription filter on its log group, with
	// the events' pattern, to the forwarder; no other log group has one (the forwarder's own
	// least of all: what it writes is never forwarded again)
	ours := f.ours(t)
	wantGroups := map[string]string{}
	for _, name := range stack.EventFunctions {
		wantGroups[logGroupOf(ours[name])] = name
	}
	filters := f.ofType("AWS::Logs::SubscriptionFilter")
	if len(filters) != len(stack.EventFunctions) {
		t.Errorf("%d subscription filters, want %d (%v)", len(filters), len(stack.EventFunctions), stack.EventFunctions)
	}
	var got []string
	for id, sf := range filters {
		sp := props(sf)
		group, _ := sp["LogGroupName"].(map[string]any)["Ref"].(string)
		name, ok := wantGroups[group]
		if !ok {
			t.Errorf("filter %s on log group %v, which is no event function's", id, sp["LogGroupName"])
			continue
		}
		got = append(got, name)
		if sp["FilterPattern"] != eventbus.FilterPattern() {
			t.Errorf("filter %s pattern %v, want %s", id, sp["FilterPattern"], eventbus.FilterPattern())
		}
		if !equalJSON(sp["DestinationArn"], getAtt(fwd, "Arn")) {
			t.Errorf("filter %s goes to %v, not the forwarder", id, sp["DestinationArn"])
		}
		if group == logGroupOf(fn) {
			t.Errorf("the forwarder's own log group is subscribed: a loop")
		}
	}
	sort.Strings(got)
	want := slices.Clone(stack.EventFunctions)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("filters on the log groups of %v, want %v", got, want)
	}
	// and CloudWatch Logs may invoke the forwarder
	f.has(t, "AWS::Lambda::Permission", map[string]any{
		"Action": "lambda:InvokeFunction", "Principal": "logs.amazonaws.com", "FunctionName": getAtt(fwd, "Arn"),
	})
}

// deadLetters returns the logical id of the forwarder's dead-letter queue (the only other is notify's).
func deadLetters(t *testing.T, f fixture) string {
	t.Helper()
	var out []string
	for id := range f.ofType("AWS::SQS::Queue") {
		if strings.HasPrefix(id, "ForwarderDeadLetterQueue") {
			out = append(out, id)
		} else if !strings.HasPrefix(id, "NotifyDeadLetterQueue") { // the notify function's (notify.go)
			t.Errorf("an SQS queue of nobody's: %s", id)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d dead-letter queues of the forwarder, want 1", len(out))
	}
	return out[0]
}

// The forwarder may put events on this bus and send a failed batch to its dead-letter queue, and
// do nothing else; no other function may put events.
func TestForwarderMayOnlyPutEventsOnTheBus(t *testing.T) {
	f := defaultStack(t)
	fwd, fn := forwarder(t, f)
	dlq := deadLetters(t, f)
	var bus string
	for id := range f.ofType("AWS::Events::EventBus") {
		bus = id
	}
	role, _ := props(fn)["Role"].(map[string]any)["Fn::GetAtt"].([]any)
	if len(role) != 2 {
		t.Fatalf("forwarder role %v", props(fn)["Role"])
	}
	found := false
	for id, pol := range f.ofType("AWS::IAM::Policy") {
		forFwd := false
		for _, r := range asSlice(props(pol)["Roles"]) {
			forFwd = forFwd || equalJSON(r, map[string]any{"Ref": role[0]})
		}
		for _, s := range asSlice(props(pol)["PolicyDocument"].(map[string]any)["Statement"]) {
			st := s.(map[string]any)
			acts := asSlice(st["Action"])
			if a, ok := st["Action"].(string); ok {
				acts = []any{a}
			}
			puts := slices.Contains(acts, any("events:PutEvents"))
			if forFwd && contains(acts, "logs:PutLogEvents") {
				continue // its own log group (TestEachFunctionWritesOnlyItsOwnLogGroup)
			}
			if forFwd && len(acts) == 1 && acts[0] == "sqs:SendMessage" {
				if !equalJSON(st["Resource"], getAtt(dlq, "Arn")) {
					t.Errorf("forwarder policy %s allows sqs:SendMessage on %v; want its dead-letter queue only", id, st["Resource"])
				}
				continue
			}
			switch {
			case forFwd && (!puts || len(acts) != 1 || !equalJSON(st["Resource"], getAtt(bus, "Arn"))):
				t.Errorf("forwarder policy %s allows %v on %v; want events:PutEvents on the bus (and sqs:SendMessage on its dead letters) only", id, acts, st["Resource"])
			case forFwd:
				found = true
			case puts:
				t.Errorf("policy %s of another role allows events:PutEvents", id)
			}
		}
	}
	if !found {
		t.Errorf("no events:PutEvents statement for the forwarder (%s)", fwd)
	}
	// and its role has no managed policy: it writes its own log group only, and it is not in the VPC
	for id, r := range f.ofType("AWS::IAM::Role") {
		if id == role[0] && props(r)["ManagedPolicyArns"] != nil {
			t.Errorf("forwarder role's managed policies %v", props(r)["ManagedPolicyArns"])
		}
	}
}

// Two stages of the stack get two buses.
func TestEachStageHasItsBus(t *testing.T) {
	name := func(f fixture) any {
		for _, b := range f.ofType("AWS::Events::EventBus") {
			return props(b)["Name"]
		}
		return nil
	}
	if a, b := name(defaultStack(t)), name(stagingStack(t)); a != "Vestibule-events" || b != "Vestibule-staging-events" {
		t.Errorf("bus names %v and %v", a, b)
	}
}

func equalJSON(a, b any) bool { return reflect.DeepEqual(a, b) }

// contains reports whether v (a string or a CloudFormation Fn::Join) mentions s.
func contains(v any, s string) bool {
	b, _ := json.Marshal(v)
	return strings.Contains(string(b), s)
}
