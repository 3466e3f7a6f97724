package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"

	"github.com/vestibule-dev/vestibule/infra/quota"
)

// The quotas of a large sale (docs/DEPLOY.md, "Quotas: a large sale"): a template synthesized with
// -c expectedVisitors=N records N under its metadata's VestibuleQuotas (stack.QuotasMetadata), and
// preflight checks the account against quota.For(N), the figures the stack was sized from.

// Service Quotas codes of the quotas a large sale needs beyond API Gateway's and Lambda's.
const (
	eventsService     = "events"
	putEventsQuotaID  = "L-9B653E91" // EventBridge PutEvents, transactions a second
	logsService       = "logs"
	putLogEventsQuota = "L-7E1FAE88" // CloudWatch Logs PutLogEvents, transactions a second
)

// quotasMetadata is the part of the template's metadata the stack writes for a sized crowd.
type quotasMetadata struct {
	ExpectedVisitors int `json:"expectedVisitors"`
}

// readQuota reads one quota's value from Service Quotas.
func readQuota(ctx context.Context, q QuotaReader, service, code string) (float64, error) {
	out, err := q.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String(service), QuotaCode: aws.String(code)})
	if err != nil {
		return 0, err
	}
	if out.Quota == nil || out.Quota.Value == nil {
		return 0, fmt.Errorf("%s/%s has no value", service, code)
	}
	return *out.Quota.Value, nil
}

// checkCrowd checks the account against what the crowd the template was sized for needs, beyond
// the concurrency and API Gateway checks (which read the stage the crowd sized): the stage itself,
// Lambda's scaling, CloudFront, EventBridge and CloudWatch Logs.
func checkCrowd(ctx context.Context, q QuotaReader, visitors int, stageRate float64, r *checkReport) {
	if visitors <= 0 {
		r.line("ok", "expected visitors", "not set: the stage keeps its throttle; -c expectedVisitors=N sizes the stack for N and adds the checks of its quotas")
		return
	}
	n := quota.For(visitors)
	if stageRate < n.APIRequest {
		r.line("warn", "expected visitors", fmt.Sprintf("%d need a stage of %.0f requests a second, the template's lets through %.0f: the sale would be throttled",
			visitors, n.APIRequest, stageRate))
	} else {
		r.line("ok", "expected visitors", fmt.Sprintf("%d: busiest second %.0f API requests, the stage lets through %.0f (docs/DEPLOY.md, \"Quotas: a large sale\")",
			visitors, n.PeakAPI, stageRate))
	}
	r.line("ok", "lambda scaling", fmt.Sprintf("from nothing, enqueue takes %.0f s to reach what the first minute's joins need (%d environments a function every %d s): warm it before the sale",
		n.LambdaRampSeconds, quota.LambdaScaleStep, quota.LambdaScaleSeconds))
	if n.CloudFrontRequest > quota.DefaultCloudFrontRPS {
		r.line("warn", "cloudfront requests", fmt.Sprintf("%.0f a second at the busiest, over 80 %% of the default %d per distribution: ask AWS Support for %.0f (not in Service Quotas)",
			n.CloudFrontPeak, quota.DefaultCloudFrontRPS, n.CloudFrontRequest))
	} else {
		r.line("ok", "cloudfront requests", fmt.Sprintf("%.0f a second at the busiest, within the default %d per distribution (a raised quota is not readable: if you asked for less, ask again)",
			n.CloudFrontPeak, quota.DefaultCloudFrontRPS))
	}
	switch v, err := readQuota(ctx, q, eventsService, putEventsQuotaID); {
	case err != nil:
		r.line("warn", "eventbridge putevents", "cannot read the quota ("+putEventsQuotaID+"): "+err.Error())
	case v < n.EventEntries:
		r.line("warn", "eventbridge putevents", fmt.Sprintf("%.0f calls a second, the sale's events up to %.0f a second (one a call at worst): raise it, or admission events are late", v, n.EventEntries))
	default:
		r.line("ok", "eventbridge putevents", fmt.Sprintf("%.0f calls a second, the sale's events up to %.0f a second", v, n.EventEntries))
	}
	switch v, err := readQuota(ctx, q, logsService, putLogEventsQuota); {
	case err != nil:
		r.line("warn", "cloudwatch logs", "cannot read the quota ("+putLogEventsQuota+"): "+err.Error())
	default:
		r.line("ok", "cloudwatch logs", fmt.Sprintf("%.0f log lines a second at the busiest, delivered in batches; PutLogEvents %.0f calls a second", n.LogLines, v))
	}
}
