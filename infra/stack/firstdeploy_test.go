package stack_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

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
