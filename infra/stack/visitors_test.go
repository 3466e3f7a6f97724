package stack_test

import (
	"errors"
	"math"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/quota"
	"github.com/vestibule-dev/vestibule/infra/stack"
)

func TestExpectedVisitorsFromContext(t *testing.T) {
	need := quota.For(10_000_000)
	alarm := int(math.Ceil(need.CacheECPU / quota.Headroom))
	for _, c := range []struct {
		name           string
		ctx            map[string]any
		rate, burst    float64
		ecpu, crowd    int
		wantBadSetting bool
	}{
		{"none: the defaults", map[string]any{}, 5000, 5000, 100_000, 0, false},
		{"10,000,000 sizes the throttle and the alarm", map[string]any{stack.CtxVisitors: "10000000"}, need.APIRequest, need.APIRequest, alarm, 10_000_000, false},
		{"from cdk.json", map[string]any{stack.CtxVisitors: float64(10_000_000)}, need.APIRequest, need.APIRequest, alarm, 10_000_000, false},
		{"a higher rate given is kept", map[string]any{stack.CtxVisitors: "10000000", stack.CtxAPIRateLimit: "200000"}, 200_000, need.APIRequest, alarm, 10_000_000, false},
		{"an alarm given is kept", map[string]any{stack.CtxVisitors: "10000000", stack.CtxCacheECPU: "5000"}, need.APIRequest, need.APIRequest, 5000, 10_000_000, false},
		{"a rate below the need", map[string]any{stack.CtxVisitors: "10000000", stack.CtxAPIRateLimit: "5000"}, 0, 0, 0, 0, true},
		{"a burst below the need", map[string]any{stack.CtxVisitors: "10000000", stack.CtxAPIBurstLimit: "5000"}, 0, 0, 0, 0, true},
		{"not a number", map[string]any{stack.CtxVisitors: "ten million"}, 0, 0, 0, 0, true},
		{"zero", map[string]any{stack.CtxVisitors: "0"}, 0, 0, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// GIVEN the context WHEN the settings are read
			app := awscdk.NewApp(&awscdk.AppProps{Context: &c.ctx, Outdir: jsii.String(t.TempDir())})
			s, err := stack.FromContext(app.Node())
			// THEN the stage and the alarm are sized for the crowd, or the setting is refused
			if c.wantBadSetting {
				if !errors.Is(err, stack.ErrBadSetting) {
					t.Fatalf("err %v, want ErrBadSetting", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.APIRateLimit != c.rate || s.APIBurstLimit != c.burst || s.CacheECPUAlarm != c.ecpu || s.ExpectedVisitors != c.crowd {
				t.Errorf("rate %v burst %v alarm %d crowd %d, want %v %v %d %d", s.APIRateLimit, s.APIBurstLimit, s.CacheECPUAlarm, s.ExpectedVisitors,
					c.rate, c.burst, c.ecpu, c.crowd)
			}
		})
	}
}

func TestStackSizedForACrowd(t *testing.T) {
	// GIVEN a stack sized for 10,000,000
	need := quota.For(10_000_000)
	f := synth(t, "", false, func(s *stack.Settings) { stack.SizeFor(s, 10_000_000) })
	// THEN its stage lets through what API Gateway's quota is asked for
	f.has(t, "AWS::ApiGatewayV2::Stage", map[string]any{"DefaultRouteSettings": map[string]any{
		"ThrottlingRateLimit": need.APIRequest, "ThrottlingBurstLimit": need.APIRequest}})
	// and the ECPU alarm fires above the crowd's peak ECPUs, not at the default's
	f.has(t, "AWS::CloudWatch::Alarm", map[string]any{
		"MetricName": "ElastiCacheProcessingUnits", "Threshold": math.Ceil(need.CacheECPU/quota.Headroom) * 60})
	// and the template tells preflight what it was sized for
	md, _ := f.raw["Metadata"].(map[string]any)
	q, _ := md[stack.QuotasMetadata].(map[string]any)
	if q["expectedVisitors"] != float64(10_000_000) {
		t.Errorf("template metadata %v, want %s.expectedVisitors 10000000", md, stack.QuotasMetadata)
	}
	// and the default stack records no crowd
	if md, _ := defaultStack(t).raw["Metadata"].(map[string]any); md[stack.QuotasMetadata] != nil {
		t.Errorf("the default stack records %v", md[stack.QuotasMetadata])
	}
}
