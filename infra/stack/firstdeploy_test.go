package stack_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
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
