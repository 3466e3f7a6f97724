package stack_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
)

// ownFunctions are the stack's own Lambda functions (the seven of stack.Functions, the
// forwarder, keysync and, with a gate, gatekeys) by logical id: every function whose
// description starts "Vestibule".
func ownFunctions(f fixture) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range f.ofType("AWS::Lambda::Function") {
		if d, _ := props(r)["Description"].(string); strings.HasPrefix(d, "Vestibule") {
			out[id] = r
		}
	}
	return out
}

func TestEachFunctionWritesOnlyItsOwnLogGroup(t *testing.T) {
	for name, fx := range map[string]func(testing.TB) fixture{"default": defaultStack, "gate": gateStack} {
		// GIVEN a stack
		f := fx(t)
		fns := ownFunctions(f)
		if want := len(stack.Functions) + 2; len(fns) < want {
			t.Fatalf("%s: %d Vestibule functions, want at least %d", name, len(fns), want)
		}
		for id, fn := range fns {
			// WHEN a function's role is read
			group, _ := props(fn)["LoggingConfig"].(map[string]any)["LogGroup"].(map[string]any)
			own := getAtt(group["Ref"].(string), "Arn")
			var writes int
			for _, st := range roleStatements(f, roleOf(fn)) {
				b, _ := json.Marshal(st["Action"])
				if !strings.Contains(string(b), `"logs:`) {
					continue
				}
				// THEN every logs permission it has names its own log group, and no other
				if !reflect.DeepEqual(st["Resource"], own) {
					t.Errorf("%s: %s: %s on %v, want its own log group %v only", name, id, b, st["Resource"], own)
				}
				if strings.Contains(string(b), `"logs:PutLogEvents"`) {
					writes++
				}
			}
			if writes != 1 {
				t.Errorf("%s: %s: %d statements let it write its log group, want 1", name, id, writes)
			}
			// and a function in the VPC is created only once its role may make its network
			// interfaces (Lambda checks that when it creates the function)
			if props(fn)["VpcConfig"] != nil && !dependsOnNetworkPolicy(f, fn) {
				t.Errorf("%s: %s: in the VPC, but does not depend on the policy with ec2:CreateNetworkInterface (DependsOn %v)", name, id, fn["DependsOn"])
			}
			// and its role has no managed policy (AWSLambdaBasicExecutionRole writes every group)
			if mp := props(f.resources[roleOf(fn)])["ManagedPolicyArns"]; mp != nil {
				t.Errorf("%s: %s: managed policies %v", name, id, mp)
			}
		}
	}
}

func TestForwarderTakesEventsOnlyFromTheEmittersLogGroups(t *testing.T) {
	// GIVEN the default stack WHEN the forwarder's environment is read
	f := defaultStack(t)
	var fwd map[string]any
	for _, fn := range ownFunctions(f) {
		if strings.Contains(props(fn)["Description"].(string), stack.Forwarder) {
			fwd = fn
		}
	}
	vars := props(fwd)["Environment"].(map[string]any)["Variables"].(map[string]any)
	// THEN it names the log groups of the functions that emit events, and only those, each with
	// its function (the forwarder takes of each group only the kinds its function emits)
	var want, pairs []any
	ours := f.ours(t)
	for _, name := range stack.EventFunctions {
		g := props(ours[name])["LoggingConfig"].(map[string]any)["LogGroup"]
		want = append(want, g)
		pairs = append(pairs, map[string]any{"Fn::Join": []any{"", []any{name + "=", g}}})
	}
	got := vars[eventbus.EnvLogGroups]
	if !reflect.DeepEqual(got, map[string]any{"Fn::Join": []any{",", pairs}}) {
		t.Errorf("%s = %v, want function=log group of %v", eventbus.EnvLogGroups, got, want)
	}
	// and each of those groups has the subscription that sends it there
	for _, g := range want {
		if !slices.ContainsFunc(mapsValues(f.ofType("AWS::Logs::SubscriptionFilter")), func(r map[string]any) bool {
			return reflect.DeepEqual(props(r)["LogGroupName"], g)
		}) {
			t.Errorf("no subscription filter on %v", g)
		}
	}
}

func mapsValues(m map[string]map[string]any) []map[string]any {
	var out []map[string]any
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// dependsOnNetworkPolicy reports whether fn depends on a policy of its role that allows
// ec2:CreateNetworkInterface.
func dependsOnNetworkPolicy(f fixture, fn map[string]any) bool {
	for _, dep := range asSlice(fn["DependsOn"]) {
		pol, ok := f.resources[dep.(string)]
		if !ok || pol["Type"] != "AWS::IAM::Policy" || !contains(props(pol)["Roles"], `"`+roleOf(fn)+`"`) {
			continue
		}
		if contains(props(pol)["PolicyDocument"], `"ec2:CreateNetworkInterface"`) {
			return true
		}
	}
	return false
}
