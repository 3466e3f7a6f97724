package stack_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/metrics"
)

func TestAlarmsAndDashboard(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
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
	// and each function has an errors and a throttles alarm, and the notify function an errors
	// alarm (a run that could not take the notices: nobody who asked is told)
	if byMetric["Errors"] != len(stack.Functions)+1 || byMetric["Throttles"] != len(stack.Functions) {
		t.Errorf("errors alarms %d, throttles alarms %d, want %d and %d", byMetric["Errors"], byMetric["Throttles"],
			len(stack.Functions)+1, len(stack.Functions))
	}
	f.has(t, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "Errors", "AlarmDescription": assertions.Match_StringLikeRegexp(jsii.String("^Vestibule notify"))})
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

func TestMonitoringAlarms(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
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
	for _, a := range nodesStack(t).ofType("AWS::CloudWatch::Alarm") {
		if props(a)["Namespace"] == "AWS/ElastiCache" {
			t.Errorf("nodes stack has a serverless cache alarm: %v", props(a)["MetricName"])
		}
	}
}

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
	f := defaultStack(t)
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
