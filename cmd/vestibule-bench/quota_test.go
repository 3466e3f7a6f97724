package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/quota"
	"github.com/vestibule-dev/vestibule/infra/stack"
)

// The bench's copies of the stack's limits are the stack's defaults.
func TestQuotaConstantsAreTheStacks(t *testing.T) {
	s := stack.DefaultSettings()
	if float64(s.APIRateLimit) != stackAPIRateLimit {
		t.Errorf("stackAPIRateLimit %v, the stack's apiRateLimit default %v", stackAPIRateLimit, s.APIRateLimit)
	}
	for _, f := range stack.Functions {
		if f.Memory/1000 != lambdaMemoryGB {
			t.Errorf("function %s has %v MB, the cost model %v GB", f.Name, f.Memory, lambdaMemoryGB)
		}
		want := 0.0
		if f.Name == stack.Admit {
			want = stackReservedConcurrency
		}
		if f.Reserved != want {
			t.Errorf("function %s reserves %v, the quota figures assume %v", f.Name, f.Reserved, want)
		}
	}
}

// deployRates are the request rates docs/DEPLOY.md's quota table is given
// for: the target for long waits, the target for short waits, and the
// page polling every 3 s.
var deployRates = []float64{0.7, 3, 20}

// thousands writes n with thousands separators.
func thousands(n float64) string {
	s := fmt.Sprintf("%.0f", n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// quotaRow is docs/DEPLOY.md's table row for one rate.
func quotaRow(perMinute float64) string {
	q := quotasAt(perMinute, quotaPeakFactor)
	return fmt.Sprintf("| %s | %s | %s | %s |", strconv.FormatFloat(perMinute, 'f', -1, 64), thousands(q.WaitingAtStageLimit),
		thousands(q.WaitingAtAccountLimit), thousands(q.WaitingAtLambdaLimit))
}

// docs/DEPLOY.md states the figures quotasAt computes from the constants.
func TestDeployDocStatesTheQuotaFigures(t *testing.T) {
	b, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, r := range deployRates {
		if row := quotaRow(r); !strings.Contains(doc, row) {
			t.Errorf("docs/DEPLOY.md lacks the row %q", row)
		}
	}
	q := quotasAt(1, quotaPeakFactor)
	for _, want := range []string{
		fmt.Sprintf("peak %s times the mean", strconv.FormatFloat(quotaPeakFactor, 'f', -1, 64)),
		thousands(stackAPIRateLimit) + " requests a second",
		thousands(accountAPIGatewayRPS) + " requests a second",
		thousands(accountLambdaConcurrency) + " concurrent executions",
		fmt.Sprintf("%d requests a second for each unit", lambdaRPSPerConcurrency),
		thousands(q.JoinsPerMinuteAtStageLimit) + " joins a minute",
		fmt.Sprintf("%.0f executions in flight", q.ConcurrencyAtStageLimit),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/DEPLOY.md does not say %q", want)
		}
	}
}

func TestQuotasAt(t *testing.T) {
	q := quotasAt(0.7, 1)
	if q.WaitingAtStageLimit != 428_571 || q.WaitingAtAccountLimit != 857_142 {
		t.Errorf("at 0.7: %+v", q)
	}
	// At a peak twice the mean, half as many.
	if q := quotasAt(0.7, 2); q.WaitingAtStageLimit != 214_285 || q.WaitingAtAccountLimit != 428_571 {
		t.Errorf("at 0.7, peak 2: %+v", q)
	}
	if q := quotasAt(0.7, 0.5); q.Peak != 1 {
		t.Errorf("a peak below the mean: %+v", q)
	}
	if q.ConcurrencyAtStageLimit != 50 || q.JoinsPerMinuteAtStageLimit != 300_000 {
		t.Errorf("at 0.7: %+v", q)
	}
	// Lambda answers at most 10 requests a second per unit of concurrency: the
	// account's 1,000 serve 10,000 a second (as many as API Gateway's account
	// quota), not the 100,000 that 10 ms calls would take.
	if q.WaitingAtLambdaLimit != 857_142 {
		t.Errorf("at 0.7: %.0f waiting within Lambda's concurrency, want 857,142 (10,000 requests a second)", q.WaitingAtLambdaLimit)
	}
}

// docCost is the measurement docs/BENCHMARKS.md's cost table is computed from
// (its "Cost model" names the run).
var docCost = costInput{WaitRequests: 8.14, BodyBytes: 327, LogLineByte: 1.9, PageObjects: 3, PageBytes: 25_463}

// docCostWithReads is docCost with the page's status reads of the run
// docs/BENCHMARKS.md's "Moments" names: a visitor's reads in a 20-minute wait
// from the long crowd's line, and a status answer's body.
var docCostWithReads = func() costInput {
	c := docCost
	c.StatusReads, c.StatusBytes = 57.8, 203
	return c
}()

// The cost model's access log bytes are the stack's line for a typical poll.
func TestAccessLogBytesAreTheStacks(t *testing.T) {
	line := stack.AccessLogOfAPoll("Vestibule")
	if strings.Contains(line, "$context") {
		t.Fatalf("a variable left unrendered: %s", line)
	}
	if n := len(line) + 1; n < accessLogBytes*9/10 || n > accessLogBytes*11/10 {
		t.Errorf("a poll's access log line is %d B, the cost model says %d: %s", n, accessLogBytes, line)
	}
}

// docs/BENCHMARKS.md's cost table is what costPerMillion computes from the
// run it names, at the prices of cost.go.
func TestBenchmarksDocStatesTheCost(t *testing.T) {
	b, err := os.ReadFile("../../docs/BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []costInput{docCost, docCostWithReads} {
		var want strings.Builder
		writeCost(&want, costPerMillion(in))
		if !strings.Contains(string(b), want.String()) {
			t.Errorf("docs/BENCHMARKS.md lacks the cost table:\n%s", want.String())
		}
	}
}

// quotaCrowds are the crowds of docs/DEPLOY.md's table of quotas to request.
var quotaCrowds = []int{1_000_000, 10_000_000}

// quotaTable is docs/DEPLOY.md's table of what each crowd needs, as quota.For
// computes it.
func quotaTable() string {
	needs := make([]quota.Needs, len(quotaCrowds))
	for i, v := range quotaCrowds {
		needs[i] = quota.For(v)
	}
	var b strings.Builder
	b.WriteString("| | AWS default |")
	for _, v := range quotaCrowds {
		b.WriteString(" " + thousands(float64(v)) + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(quotaCrowds)) + "\n")
	line := func(what, def string, cell func(quota.Needs) string) {
		b.WriteString("| " + what + " | " + def + " |")
		for _, n := range needs {
			b.WriteString(" " + cell(n) + " |")
		}
		b.WriteString("\n")
	}
	line("busiest API second, on-sale (model)", "—", func(n quota.Needs) string { return thousands(n.OnSale.Peak.API()) })
	line("busiest API second after a pre-queue's opening (the measured million's, its waiting part scaled)", "—",
		func(n quota.Needs) string { return thousands(quota.PrequeuePeak(n.Visitors)) })
	line("**API Gateway** throttle quota, `L-8A5B8E43`, and the stage's `apiRateLimit`, `apiBurstLimit`", "10,000 (stage 5,000)",
		func(n quota.Needs) string { return "**" + thousands(n.APIRequest) + "**" })
	line("**Lambda** concurrent executions, `L-B99A9384` (add what the stack reserves)", "1,000",
		func(n quota.Needs) string { return "**" + thousands(n.LambdaConcurrency) + "**" })
	line("Lambda scaling to the first minute's joins (1,000 environments a function every 10 s)", "—",
		func(n quota.Needs) string { return fmt.Sprintf("%.0f s", n.LambdaRampSeconds) })
	line("**CloudFront** requests a second per distribution (a Support case): busiest second → request", "250,000",
		func(n quota.Needs) string {
			return thousands(n.CloudFrontPeak) + " → **" + thousands(n.CloudFrontRequest) + "**"
		})
	line("ElastiCache ECPUs a second at the peak (`cacheEcpuAlarm` ÷ 0.8 of it)", "—",
		func(n quota.Needs) string { return thousands(n.CacheECPU) })
	line("EventBridge PutEvents entries a second (`L-9B653E91`, calls a second: one an entry at worst)", "10,000 in us-east-1, us-west-2, eu-west-1; less elsewhere",
		func(n quota.Needs) string { return thousands(n.EventEntries) })
	line("CloudWatch Logs lines a second at the peak (`L-7E1FAE88`, 5,000 PutLogEvents calls a second)", "—",
		func(n quota.Needs) string { return thousands(n.LogLines) })
	return b.String()
}

// docs/DEPLOY.md's table of quotas to request is what quota.For computes, and
// the rules it states are the package's.
func TestDeployDocStatesTheQuotasToRequest(t *testing.T) {
	b, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	ten := quota.For(10_000_000)
	p := ten.OnSale.Peak
	if table := quotaTable(); !strings.Contains(string(b), table) {
		t.Errorf("docs/DEPLOY.md lacks the table of quotas to request:\n%s", table)
	}
	for _, want := range []string{
		fmt.Sprintf("every %.0f s", quota.FarPollSeconds),
		fmt.Sprintf("%.0f %% of it", quota.Headroom*100),
		"7 s ± 1 s apart near the turn, 57 s ± 1 s far from it",
		fmt.Sprintf("%s requests a second", thousands(quota.PrequeueMeasuredPeak)),
		fmt.Sprintf("%.0f s in, with %s waiting: %s joins, %s polls and %s calls of the booking", float64(ten.OnSale.PeakAt), thousands(p.Waiting),
			thousands(p.Joins), thousands(p.Polls), thousands(p.OriginCalls)),
		fmt.Sprintf("site, %s requests; the mean over the sale's %.0f minutes is %s.", thousands(p.API()), float64(ten.OnSale.Seconds)/60, thousands(ten.OnSale.Mean)),
		fmt.Sprintf("%s reads a second", thousands(math.Round(p.StatusReads/1000)*1000)),
		fmt.Sprintf("reach the %s the first", thousands(math.Ceil(10_000_000*quota.OnSaleFirstMinute/60/quota.LambdaRPSPerUnit))),
		fmt.Sprintf("%s polls a second", thousands(p.Polls)),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/DEPLOY.md does not say %q", want)
		}
	}
}

// The 10,000,000 row judges the model's peak against DEPLOY's request, and
// the million's pre-queue row, at the peak BENCH_MILLION measured, its own.
func TestQuotaRows(t *testing.T) {
	r := tenMillionRow()
	n := quota.For(10_000_000)
	if !strings.Contains(r.Name, "10,000,000") || r.Value != n.OnSale.Peak.API()/n.APIRequest || r.Met == nil || !*r.Met {
		t.Errorf("the 10,000,000 row: %+v", r)
	}
	if r.Baseline >= r.Value || r.Baseline <= 0 {
		t.Errorf("the baseline, the mean ÷ the quota: %+v", r)
	}
	// and docs/BENCHMARKS.md states the row as the model gives it
	b, err := os.ReadFile("../../docs/BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	if want := fmt.Sprintf("0.692 (%s requests in its busiest second ÷ the %s", thousands(n.OnSale.Peak.API()), thousands(n.APIRequest)); fmt.Sprintf("%.3f", r.Value) != "0.692" || !strings.Contains(doc, want) {
		t.Errorf("docs/BENCHMARKS.md does not say %q (the row: %.3f)", want, r.Value)
	}
	if want := fmt.Sprintf("its mean ÷ the same, %.3f", r.Baseline); !strings.Contains(doc, want) {
		t.Errorf("docs/BENCHMARKS.md does not say %q", want)
	}
	m := quotaShareRow("pre-queue", 1_000_000, quota.PrequeueMeasuredPeak, 5_550)
	if m.Value != quota.PrequeueMeasuredPeak/quota.For(1_000_000).APIRequest || m.Met == nil || !*m.Met {
		t.Errorf("the million's pre-queue row: %+v", m)
	}
	// against the default stage it is not met: a million asks for a quota of its own
	if quota.PrequeueMeasuredPeak/stackAPIRateLimit <= quota.Headroom {
		t.Error("the million's pre-queue fits the default stage")
	}
}
