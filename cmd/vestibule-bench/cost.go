package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// Prices: us-east-1 on-demand list prices in US dollars, without the free tier,
// Savings Plans or CloudFront's flat-rate plans. Checked on 2026-11-26 against
// stored copies of the AWS pricing and quota pages (CloudFront, API Gateway,
// Lambda) and published summaries of the ElastiCache page; not against the
// live pages. docs/BENCHMARKS.md ("Cost model") and docs/DEPLOY.md ("Cost")
// state the same; re-check them together.
const (
	priceAPIGatewayHTTPRequest  = 1.00 / 1e6   // HTTP API, per request (first 300 million a month)
	priceCloudFrontHTTPSRequest = 0.0100 / 1e4 // per HTTPS request, United States/Europe
	priceCloudFrontGB           = 0.085        // data out per GB, first 10 TB a month, United States/Europe
	priceCloudFrontFunction     = 0.10 / 1e6   // per CloudFront Function invocation
	priceLambdaRequest          = 0.20 / 1e6   // per request
	priceLambdaARMGBSecond      = 0.0000133334 // arm64, per GB-second
	priceValkeyECPU             = 0.0023 / 1e6 // ElastiCache Serverless for Valkey, per ECPU
	priceValkeyGBHour           = 0.084        // ElastiCache Serverless for Valkey, per GB-hour stored
	priceLogsGB                 = 0.50         // CloudWatch Logs, standard ingestion per GB
)

// What the cost model assumes beside the measured figures.
const (
	costVisitors    = 1_000_000
	costWaitMinutes = 20.0 // mean wait of the priced crowd
	costGoalDollars = 30.0
	// originCalls: consume and complete, counted for every visitor (an
	// overstatement: abandoners make neither).
	originCalls = 2
	// responseHeaderBytes: the headers of one API answer as CloudFront sends
	// it (an estimate); the body is measured.
	responseHeaderBytes = 400
	// Lambda: the functions' memory (infra/stack Functions: 256 MB) and a
	// billed duration per call that is not measured in AWS here: the handlers
	// answer in a few ms in-process; 10 ms leaves room for the VPC round trip
	// to Valkey and a slower CPU share.
	lambdaMemoryGB      = 0.256
	lambdaBilledSeconds = 0.010
	// ecpuPerCall: Valkey ECPUs of one call (one script of a few commands and
	// under 1 KB of data), an estimate; ElastiCache bills scripts by the vCPU
	// time and bytes they use.
	ecpuPerCall = 4
	// Log bytes per call besides the function's own request line (measured,
	// LOG_SAMPLE included): Lambda's START/END/REPORT lines are none (the
	// stack sets the call-path functions' system log level to WARN,
	// infra/stack quietPlatformLogs); the API's access log line is about
	// accessLogBytes (stack.AccessLogFormat with a poll's typical values;
	// quota_test.go renders it).
	lambdaPlatformLogBytes = 0
	accessLogBytes         = 181
	// Valkey storage during a sale: about 190 B a waiting visitor (the scale
	// part measures it); 0.5 GB held for 2 hours is generous.
	valkeyGBHoursPerSale = 0.5 * 2
)

// The goals of the cost per million visitor-minutes waiting of the API path
// (the requests made while waiting), and of a million visitors waiting 20
// minutes with the page's status reads: the reads' own rule (a change shown
// within max(10 s, 10 % of the remaining wait), at most 60 s late) needs at
// least about 38 reads in 20 minutes, 50–58 with the margins that keep it,
// so the goal is the rule's cost. The reads per visitor-minute are a figure:
// they fall with the wait, under $1.75 only from about 50 minutes.
// todaysReadsIn20Minutes is the 7 s page's reads in 20 minutes (the baseline
// of the reads).
const (
	costPerMinuteAPIGoal     = 1.25
	costWithReadsGoalDollars = 95.0
	todaysReadsIn20Minutes   = 20 * 60 / 7.0
)

// perRequestCost is what a million more requests while waiting add to the
// bill (API Gateway, CloudFront's request and bytes, Lambda, Valkey, logs):
// the price of a million visitor-minutes is it times the requests a
// visitor makes a minute. The page's first load, the origin's calls and the
// storage are a visitor's, not a minute's.
func perRequestCost(in costInput) float64 {
	in.StatusReads = 0
	more := in
	more.WaitRequests++
	return total(costPerMillion(more)) - total(costPerMillion(in))
}

// perRead is the price of a million status reads of bodyBytes: CloudFront's
// requests and its bytes out (the answer's headers with it).
func perRead(bodyBytes float64) float64 {
	return 1e6 * (priceCloudFrontHTTPSRequest + (bodyBytes+responseHeaderBytes)/1e9*priceCloudFrontGB)
}

// costItem is one line of the bill.
type costItem struct {
	what, arithmetic string
	dollars          float64
}

// costInput is what the bill is computed from.
type costInput struct {
	// WaitRequests: the requests a visitor makes while waiting costWaitMinutes
	// (enqueue, polls, leave), from the long crowd's line of requests against
	// the wait (sim.Summary.RequestsAt; measured).
	WaitRequests float64
	BodyBytes    float64 // mean response body of a waiting call (measured)
	LogLineByte  float64 // the function's log line per call, sampling included (measured)
	// The page's first load, once per visitor: objects and their bytes as
	// CloudFront sends them (measured by pageWeight); the CloudFront Function
	// runs on each (the default behaviour's viewer request).
	PageObjects int
	PageBytes   float64
	// StatusReads: the page's reads of the room's status while waiting
	// costWaitMinutes (the watch), from the long crowd's line of reads
	// against the wait (measured; 0: a page without the watch). CloudFront
	// answers them from its cache, so each is a CloudFront request and its
	// bytes out; the fetches behind them (one a second per edge cache) are
	// left out. StatusBytes: a status answer's body (measured).
	StatusReads float64
	StatusBytes float64
}

// costPerMillion prices costVisitors visitors waiting costWaitMinutes on
// average, item by item.
func costPerMillion(in costInput) []costItem {
	body, logLine := in.BodyBytes, in.LogLineByte
	objects, page := float64(in.PageObjects), in.PageBytes
	v := float64(costVisitors)
	perVisitor := in.WaitRequests + originCalls
	calls := v * perVisitor
	m := func(x float64) string { return fmt.Sprintf("%.2f M", x/1e6) }
	outGB := v * (page + perVisitor*(body+responseHeaderBytes)) / 1e9
	gbs := calls * lambdaBilledSeconds * lambdaMemoryGB
	logGB := calls * (logLine + lambdaPlatformLogBytes + accessLogBytes) / 1e9
	items := []costItem{
		{"API Gateway (HTTP API)", fmt.Sprintf("%s calls (%.2f while waiting %.0f min + %d a visitor) × $%.2f/M", m(calls), in.WaitRequests, costWaitMinutes, originCalls, priceAPIGatewayHTTPRequest*1e6), calls * priceAPIGatewayHTTPRequest},
		{"CloudFront requests", fmt.Sprintf("(%s + %s page) × $%.4f/10k", m(calls), m(v*objects), priceCloudFrontHTTPSRequest*1e4), (calls + v*objects) * priceCloudFrontHTTPSRequest},
		{"CloudFront data out", fmt.Sprintf("%.1f GB (%.1f KB page + %.0f B a call) × $%.3f", outGB, page/1e3, body+responseHeaderBytes, priceCloudFrontGB), outGB * priceCloudFrontGB},
		{"CloudFront Function (page)", fmt.Sprintf("%s × $%.2f/M", m(v*objects), priceCloudFrontFunction*1e6), v * objects * priceCloudFrontFunction},
		{"Lambda requests", fmt.Sprintf("%s × $%.2f/M", m(calls), priceLambdaRequest*1e6), calls * priceLambdaRequest},
		{"Lambda compute (arm64)", fmt.Sprintf("%s × %.0f ms × %.3f GB = %.0f GB-s × $%.10f", m(calls), lambdaBilledSeconds*1000, lambdaMemoryGB, gbs, priceLambdaARMGBSecond), gbs * priceLambdaARMGBSecond},
		{"Valkey ECPUs", fmt.Sprintf("%s × %d ECPU × $%.4f/M", m(calls), ecpuPerCall, priceValkeyECPU*1e6), calls * ecpuPerCall * priceValkeyECPU},
		{"Valkey storage", fmt.Sprintf("%.1f GB-h × $%.3f", valkeyGBHoursPerSale, priceValkeyGBHour), valkeyGBHoursPerSale * priceValkeyGBHour},
		{"CloudWatch Logs", fmt.Sprintf("%s × (%.1f + %d + %d) B = %.2f GB × $%.2f", m(calls), logLine, lambdaPlatformLogBytes, accessLogBytes, logGB, priceLogsGB), logGB * priceLogsGB},
	}
	if in.StatusReads > 0 {
		reads := v * in.StatusReads
		readGB := reads * (in.StatusBytes + responseHeaderBytes) / 1e9
		items = append(items,
			costItem{"CloudFront requests (status reads)", fmt.Sprintf("%s (%.1f reads while waiting %.0f min) × $%.4f/10k", m(reads), in.StatusReads, costWaitMinutes, priceCloudFrontHTTPSRequest*1e4), reads * priceCloudFrontHTTPSRequest},
			costItem{"CloudFront data out (status reads)", fmt.Sprintf("%.1f GB (%.0f B a read) × $%.3f", readGB, in.StatusBytes+responseHeaderBytes, priceCloudFrontGB), readGB * priceCloudFrontGB})
	}
	return items
}

func total(items []costItem) float64 {
	t := 0.0
	for _, it := range items {
		t += it.dollars
	}
	return t
}

// writeCost prints the bill as the Markdown table of docs/BENCHMARKS.md.
func writeCost(w io.Writer, items []costItem) {
	var b strings.Builder
	fmt.Fprintf(&b, "| item | arithmetic (per %s visitors waiting %.0f min on average) | $ |\n|---|---|---|\n",
		"1,000,000", costWaitMinutes)
	for _, it := range items {
		fmt.Fprintf(&b, "| %s | %s | %.2f |\n", it.what, it.arithmetic, it.dollars)
	}
	fmt.Fprintf(&b, "| **total** | | **%.2f** |\n", total(items))
	_, _ = io.WriteString(w, b.String()) // the bench's log: a failed write loses the table, not the run
}

// benchCost prices a million visitors from this invocation's measurements
// (the crowd part's requests per visitor-minute; the capacity part's bytes),
// against the same crowd behind a page polling every 3 s; and states the
// waiting visitors the default stack serves within its quotas.
// costAPIPathLabel names the cost row of the API path alone: the page's
// status reads (the watch) are priced in the moments part's row beside it.
const costAPIPathLabel = "cost per 1,000,000 visitors waiting 20 min, API path (without the status reads)"

// measuredCostInput is the cost model's input from this invocation's
// measurements: the long crowd's line, the capacity part's bytes (or, when it
// did not run, a poll's body and an unsampled line), the page's weight.
func measuredCostInput() (costInput, error) {
	if measured.LongPerMinute <= 0 || measured.LongWaitRequests <= 0 {
		return costInput{}, fmt.Errorf("the cost needs the crowd part in the same invocation (-only crowd,cost)")
	}
	in := costInput{WaitRequests: measured.LongWaitRequests, BodyBytes: measured.PollBodyBytes, LogLineByte: measured.PollLogBytes}
	if in.BodyBytes == 0 {
		in.BodyBytes, in.LogLineByte = 330, 190
		logf("cost: capacity part not run; a poll's body taken as %.0f B and its log line as %.0f B", in.BodyBytes, in.LogLineByte)
	}
	objects, gz, err := pageWeight()
	if err != nil {
		return in, fmt.Errorf("the page's weight: %w", err)
	}
	in.PageObjects, in.PageBytes = objects, float64(gz)
	return in, nil
}

func benchCost(_ context.Context) ([]Row, error) {
	perMinute := measured.LongPerMinute
	in, err := measuredCostInput()
	if err != nil {
		return nil, err
	}
	items := costPerMillion(in)
	// The baseline: the same crowd behind a page polling every 3 s.
	fixed := in
	fixed.WaitRequests = measured.FixedPerMinute * costWaitMinutes
	fmt.Fprintf(os.Stderr, "cost of %d visitors making %.2f requests in a %.0f-minute wait (measured):\n", costVisitors, in.WaitRequests, costWaitMinutes)
	writeCost(os.Stderr, items)
	q := quotasAt(perMinute, measured.LongPeak)
	fmt.Fprintf(os.Stderr, "default stack at %.2f requests per visitor-minute: %s\n", perMinute, q)
	base := 0.0
	if fixed.WaitRequests > 0 {
		base = total(costPerMillion(fixed))
	}
	measured.CostAPIPath, measured.CostFixed = total(items), base
	page, err := pageRow()
	if err != nil {
		return nil, err
	}
	return []Row{
		page,
		row(costAPIPathLabel, total(items), "$", base, atMost(costGoalDollars)),
		row(fmt.Sprintf("waiting visitors within the default stack's API throttle (at the long crowd's peak, %.2f × its mean)", q.Peak), q.WaitingAtStageLimit, "visitors", 0, nil),
		tenMillionRow(),
	}, nil
}
