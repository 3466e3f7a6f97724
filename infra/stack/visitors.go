package stack

import (
	"fmt"
	"math"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/quota"
)

// QuotasMetadata is the template's metadata key under which a stack sized for a crowd records
// it ({"expectedVisitors": N}): `vestibule preflight` reads it and checks the account against
// quota.For(N).
const QuotasMetadata = "VestibuleQuotas"

// SizeFor sizes the settings for a crowd of visitors (docs/DEPLOY.md, "Quotas"): the stage's
// throttle, rate and burst, at what quota.For asks of API Gateway, and the CacheECPU alarm at
// the crowd's ECPUs at its peak ÷ quota.Headroom, so a sale going as expected neither meets
// the throttle nor fires the alarm.
func SizeFor(s *Settings, visitors int) {
	n := quota.For(visitors)
	s.ExpectedVisitors = visitors
	s.APIRateLimit, s.APIBurstLimit = n.APIRequest, n.APIRequest
	s.CacheECPUAlarm = ecpuAlarmFor(n)
}

// ecpuAlarmFor is the CacheECPU alarm's threshold for a crowd's needs.
func ecpuAlarmFor(n quota.Needs) int {
	return int(math.Ceil(n.CacheECPU / quota.Headroom))
}

// sizeFromContext applies expectedVisitors after the other keys are read: a limit given
// explicitly is kept, but one below what the crowd needs is refused (the sale would be
// throttled by its own stack).
func sizeFromContext(node constructs.Node, s *Settings) []error {
	if s.ExpectedVisitors <= 0 {
		return nil
	}
	given := func(key string) bool { return node.TryGetContext(jsii.String(key)) != nil }
	explicit := *s
	SizeFor(s, s.ExpectedVisitors)
	n := quota.For(s.ExpectedVisitors)
	var errs []error
	for _, l := range []struct {
		key        string
		value, min float64
		field      *float64
	}{
		{CtxAPIRateLimit, explicit.APIRateLimit, n.APIRequest, &s.APIRateLimit},
		{CtxAPIBurstLimit, explicit.APIBurstLimit, n.APIRequest, &s.APIBurstLimit},
	} {
		if !given(l.key) {
			continue
		}
		*l.field = l.value
		if l.value < l.min {
			errs = append(errs, fmt.Errorf("%w: %s=%v is below the %.0f requests a second %s=%d needs (docs/DEPLOY.md, \"Quotas\")",
				ErrBadSetting, l.key, l.value, l.min, CtxVisitors, s.ExpectedVisitors))
		}
	}
	if given(CtxCacheECPU) {
		s.CacheECPUAlarm = explicit.CacheECPUAlarm
	}
	return errs
}

// recordQuotas writes the crowd the stack is sized for into the template's metadata.
func recordQuotas(st awscdk.Stack, set Settings) {
	if set.ExpectedVisitors > 0 {
		st.AddMetadata(jsii.String(QuotasMetadata), map[string]any{"expectedVisitors": set.ExpectedVisitors})
	}
}
