package main

import (
	"fmt"
	"math"

	"github.com/vestibule-dev/vestibule/infra/quota"
)

// AWS's default account quotas the stack runs within (per account, per Region),
// and the stack's own limits. docs/DEPLOY.md ("Quotas: how many can wait")
// states the figures quotasAt computes; quota_test.go keeps them equal, and
// the stack's limits equal to infra/stack's defaults.
const (
	// accountAPIGatewayRPS: API Gateway's throttle quota across all APIs of the
	// account (Service Quotas L-8A5B8E43), with a burst of 5,000; 2,500 in some
	// newer Regions.
	accountAPIGatewayRPS = 10_000
	// accountLambdaConcurrency: Lambda's concurrent executions across all
	// functions of the account; each function also scales by at most 1,000
	// execution environments every 10 seconds.
	accountLambdaConcurrency = 1_000
	// lambdaRPSPerConcurrency: Lambda answers at most 10 requests a second
	// for each unit of a function's concurrency, however short its calls
	// (so 1,000 concurrent executions serve 10,000 requests a second, not
	// the 100,000 that 10 ms calls would take).
	lambdaRPSPerConcurrency = 10
	// stackAPIRateLimit: the stack's API stage throttle (apiRateLimit; the
	// burst, apiBurstLimit, is as large).
	stackAPIRateLimit = 5_000
	// stackReservedConcurrency: admit's reserved concurrency (none unless
	// -c admitReservedConcurrency=N asks for it), taken from the
	// account's pool; the API functions share the rest.
	stackReservedConcurrency = 0
	// quotaPeakFactor is the peak 10-second request rate of a waiting crowd ÷
	// its mean that docs/DEPLOY.md's table allows for: a limit must hold the
	// crowd's busiest ten seconds, not its average. The bench measures it
	// (the crowds' "peak 10-s poll rate" rows, docs/BENCHMARKS.md); this is
	// the long crowd's and the million's (1.59, 1.58), rounded up.
	quotaPeakFactor = 1.6
)

// quotas are the waiting visitors the default stack serves within each limit
// at a given request rate per waiting visitor.
type quotas struct {
	PerMinute float64 // requests per visitor-minute of waiting (the mean)
	// Peak is the crowd's peak 10-second request rate ÷ its mean: the
	// limits below are held at the peak, PerMinute × Peak.
	Peak float64
	// WaitingAtStageLimit: the stage throttle's requests a second, spent on
	// waiting visitors' polls.
	WaitingAtStageLimit float64
	// WaitingAtAccountLimit: the same at API Gateway's account quota (after
	// raising apiRateLimit to it).
	WaitingAtAccountLimit float64
	// ConcurrencyAtStageLimit: Lambda executions in flight at the stage
	// throttle, each call lambdaBilledSeconds long.
	ConcurrencyAtStageLimit float64
	// WaitingAtLambdaLimit: the waiting visitors the account's unreserved
	// concurrency serves: at that duration, and at most
	// lambdaRPSPerConcurrency requests a second per unit.
	WaitingAtLambdaLimit float64
	// JoinsPerMinuteAtStageLimit: the largest join burst the stage throttle
	// lets through in a minute, nobody else calling.
	JoinsPerMinuteAtStageLimit float64
}

// quotasAt is the quotas for a crowd making perMinute requests per
// visitor-minute on average and peak times that over its busiest ten seconds
// (peak < 1 counts as 1).
func quotasAt(perMinute, peak float64) quotas {
	peak = max(peak, 1)
	waiting := func(rps float64) float64 { return math.Floor(rps * 60 / (perMinute * peak)) }
	unreserved := float64(accountLambdaConcurrency - stackReservedConcurrency)
	lambdaRPS := min(unreserved/lambdaBilledSeconds, unreserved*lambdaRPSPerConcurrency)
	return quotas{
		PerMinute:                  perMinute,
		Peak:                       peak,
		WaitingAtStageLimit:        waiting(stackAPIRateLimit),
		WaitingAtAccountLimit:      waiting(accountAPIGatewayRPS),
		ConcurrencyAtStageLimit:    stackAPIRateLimit * lambdaBilledSeconds,
		WaitingAtLambdaLimit:       waiting(lambdaRPS),
		JoinsPerMinuteAtStageLimit: stackAPIRateLimit * 60,
	}
}

func (q quotas) String() string {
	return fmt.Sprintf("at a peak %.2f × the mean: %.0f waiting within the stage throttle (%d req/s), %.0f within API Gateway's account quota (%d req/s); "+
		"%.0f Lambda executions in flight at the stage throttle (%.0f ms a call), the unreserved %d serve %.0f waiting (at most %d requests a second per unit); "+
		"joins: at most %.0f a minute through the stage throttle",
		q.Peak, q.WaitingAtStageLimit, stackAPIRateLimit, q.WaitingAtAccountLimit, accountAPIGatewayRPS,
		q.ConcurrencyAtStageLimit, lambdaBilledSeconds*1000, accountLambdaConcurrency-stackReservedConcurrency,
		q.WaitingAtLambdaLimit, lambdaRPSPerConcurrency, q.JoinsPerMinuteAtStageLimit)
}

// The quota rows: a crowd's busiest API second ÷ the quota
// docs/DEPLOY.md ("Quotas") tells a team to request for it, quota.For: the
// same function writes DEPLOY's table (quota_test.go holds them equal), so the
// row judges the peak against what the team was told to ask for, not against
// the default stage. The baseline is the crowd's mean over the same quota.

// tenMillionLabel names the 10,000,000 on-sale's row.
const tenMillionLabel = "on-sale of 10,000,000 at 50000/min (model): peak API requests a second ÷ the quota docs/DEPLOY.md asks for"

// quotaShareRow is a crowd of visitors' peak and mean API requests a second
// against the quota DEPLOY asks for it.
func quotaShareRow(label string, visitors int, peak, mean float64) Row {
	q := quota.For(visitors).APIRequest
	return row(label, peak/q, "", mean/q, atMost(quota.Headroom))
}

// tenMillionRow is the row of the 10,000,000 on-sale, from its shape
// (quota.OnSale): 2,000,000 joins in the first minute, the rest over nine,
// 50,000 admitted a minute, a far poll every quota.FarPollSeconds while
// waiting, and per admission the descent's polls, a consume and a complete.
func tenMillionRow() Row {
	n := quota.For(10_000_000)
	logf("quotas of 10,000,000: busiest API second %.0f (%.0f s after the first join, %.0f waiting), mean %.0f; ask API Gateway for %.0f, "+
		"Lambda for %.0f concurrent executions, CloudFront for %.0f a second (peak %.0f); %.0f ECPU/s; %.0f events and %.0f log lines a second",
		n.OnSale.Peak.API(), float64(n.OnSale.PeakAt), n.OnSale.Peak.Waiting, n.OnSale.Mean, n.APIRequest, n.LambdaConcurrency,
		n.CloudFrontRequest, n.CloudFrontPeak, n.CacheECPU, n.EventEntries, n.LogLines)
	return quotaShareRow(tenMillionLabel, 10_000_000, n.OnSale.Peak.API(), n.OnSale.Mean)
}
