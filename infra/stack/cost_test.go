package stack_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/config"
)

// Prices of the always-on items, us-east-1, in US dollars: the AWS pricing pages as of mid-2025,
// and KMS's (aws.amazon.com/kms/pricing) as read on 2026-11-26; re-check them (and docs/DEPLOY.md,
// "Cost") when they change.
const (
	hoursPerMonth = 730.0

	priceInterfaceEndpointHour = 0.01         // PrivateLink, per endpoint per AZ per hour
	priceSecretMonth           = 0.40         // Secrets Manager, per secret per month
	priceKMSKeyMonth           = 1.00         // KMS, per customer managed key per month (no automatic rotation)
	priceAlarmMonth            = 0.10         // CloudWatch, per standard alarm per month
	priceDashboardMonth        = 3.00         // CloudWatch, per dashboard per month (beyond the first 3)
	priceValkeyGBHour          = 0.084        // ElastiCache Serverless for Valkey, data stored per GB-hour
	valkeyMinimumGB            = 0.1          // ElastiCache Serverless for Valkey bills at least 100 MB
	priceValkeyECPU            = 0.0023 / 1e6 // ElastiCache Serverless for Valkey, per ECPU
	priceCacheNodeHour         = 0.0256       // cache.t4g.small for Valkey, per node-hour
	priceLambdaARMGBSecond     = 0.0000133334 // Lambda on arm64, per GB-second
	priceLambdaRequest         = 0.20 / 1e6   // Lambda, per request
	priceS3List                = 0.005 / 1000 // S3 Standard, per LIST request
)

// Assumptions of the idle month, as docs/DEPLOY.md states them.
const (
	idleAdmitSeconds = 0.1 // an idle admit invocation returns at once: at most 0.1 s billed
	idleRooms        = 1   // the idle check reads one stats key per room, besides its own call
	idleCheckECPUs   = 2   // ECPUs of one idle-check call
)

// idleItem is one line of the idle bill.
type idleItem struct {
	what    string
	dollars float64
}

// idleCost computes the always-on monthly cost of a synthesized stack from its template: the
// resources billed by the hour or the month whether or not anyone waits, and what admit costs
// while it finds nothing to do.
func idleCost(t *testing.T, f fixture) []idleItem {
	t.Helper()
	var items []idleItem
	add := func(what string, dollars float64) { items = append(items, idleItem{what, dollars}) }

	for id, ep := range f.ofType("AWS::EC2::VPCEndpoint") {
		if props(ep)["VpcEndpointType"] != "Interface" {
			continue // gateway endpoints are free
		}
		azs := float64(len(asSlice(props(ep)["SubnetIds"])))
		add(fmt.Sprintf("interface endpoint %s, %v AZs", id, azs), azs*hoursPerMonth*priceInterfaceEndpointHour)
	}
	add("secrets", float64(len(f.ofType("AWS::SecretsManager::Secret")))*priceSecretMonth)
	for id, k := range f.ofType("AWS::KMS::Key") {
		if props(k)["EnableKeyRotation"] == true {
			t.Fatalf("%s rotates its key material: each of the first two rotations adds $1 a month, not priced here", id)
		}
		add("KMS key "+id, priceKMSKeyMonth)
	}
	add("alarms", float64(len(f.ofType("AWS::CloudWatch::Alarm")))*priceAlarmMonth)
	add("dashboards", float64(len(f.ofType("AWS::CloudWatch::Dashboard")))*priceDashboardMonth)
	for range f.ofType("AWS::ElastiCache::ServerlessCache") {
		add("Valkey serverless minimum storage", valkeyMinimumGB*hoursPerMonth*priceValkeyGBHour)
	}
	for _, rg := range f.ofType("AWS::ElastiCache::ReplicationGroup") {
		p := props(rg)
		if p["CacheNodeType"] != "cache.t4g.small" {
			t.Fatalf("no price for cache node type %v", p["CacheNodeType"])
		}
		nodes := p["NumNodeGroups"].(float64) * (1 + p["ReplicasPerNodeGroup"].(float64))
		add("cache nodes", nodes*hoursPerMonth*priceCacheNodeHour)
	}

	// admit: invoked by its schedule whether or not anyone waits.
	admit := f.ours(t)["admit"]
	var perMinute float64
	for _, r := range f.ofType("AWS::Events::Rule") {
		if props(r)["ScheduleExpression"] == "rate(1 minute)" {
			perMinute++
		}
	}
	if perMinute != 1 {
		t.Fatalf("%v admit schedules of rate(1 minute), want 1", perMinute)
	}
	invocations := perMinute * 60 * hoursPerMonth
	gb := props(admit)["MemorySize"].(float64) / 1024
	add("admit requests", invocations*priceLambdaRequest)
	add("admit compute", invocations*idleAdmitSeconds*gb*priceLambdaARMGBSecond)
	if len(f.ofType("AWS::ElastiCache::ServerlessCache")) > 0 {
		add("Valkey ECPUs of the idle check", invocations*(1+idleRooms)*idleCheckECPUs*priceValkeyECPU)
	}
	vars := props(admit)["Environment"].(map[string]any)["Variables"].(map[string]any)
	if v, ok := vars[config.EnvSettingsBucket]; ok && v != "" {
		add("S3 LIST of the settings bucket", invocations*priceS3List)
	}
	return items
}

// total sums items, rounded to the cent.
func total(t *testing.T, items []idleItem) float64 {
	var sum float64
	for _, it := range items {
		t.Logf("%-50s %8.4f", it.what, it.dollars)
		sum += it.dollars
	}
	return math.Round(sum*100) / 100
}

// deployDoc returns docs/DEPLOY.md's section "While idle".
func deployDoc(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "DEPLOY.md"))
	must(t, err)
	s := string(b)
	i := strings.Index(s, "### While idle")
	if i < 0 {
		t.Fatal(`docs/DEPLOY.md has no "### While idle" section`)
	}
	s = s[i:]
	if j := strings.Index(s[4:], "\n### "); j >= 0 {
		s = s[:j+4]
	}
	return s
}

// docFigure parses the first match of re's one group in s as a number.
func docFigure(t *testing.T, s string, re string) float64 {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("docs/DEPLOY.md, While idle: no match for %s", re)
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	must(t, err)
	return v
}

// idleTarget is the target for the idle month of the default stack ($ a month).
const idleTarget = 15.0

// TestIdleCostMatchesTheDocs computes the always-on monthly cost of the default stack and of
// cache=nodes from their templates and checks the totals docs/DEPLOY.md states, so the
// figures there cannot drift from the stack.
func TestIdleCostMatchesTheDocs(t *testing.T) {
	doc := deployDoc(t)
	// GIVEN the default stack WHEN its idle month is priced
	f := defaultStack(t)
	got := total(t, idleCost(t, f))
	// THEN the idle table's total is that figure
	if want := docFigure(t, doc, `\*\*Total\*\*\s*\|[^|]*\|\s*\*\*≈ ([0-9,]+(?:\.[0-9]+)?)\*\*`); got != want {
		t.Errorf("idle month of the default stack: computed $%.2f, docs/DEPLOY.md says $%.2f", got, want)
	}
	// and its counts of alarms and secrets are the template's
	if want := docFigure(t, doc, `\| Alarms, (\d+) \|`); want != float64(len(f.ofType("AWS::CloudWatch::Alarm"))) {
		t.Errorf("docs count %v alarms, the template has %d", want, len(f.ofType("AWS::CloudWatch::Alarm")))
	}
	if want := docFigure(t, doc, `\| Secrets, (\d+) \|`); want != float64(len(f.ofType("AWS::SecretsManager::Secret"))) {
		t.Errorf("docs count %v secrets, the template has %d", want, len(f.ofType("AWS::SecretsManager::Secret")))
	}
	if want := docFigure(t, doc, `\| KMS keys, (\d+) \|`); want != float64(len(f.ofType("AWS::KMS::Key"))) {
		t.Errorf("docs count %v KMS keys, the template has %d", want, len(f.ofType("AWS::KMS::Key")))
	}
	// and no interface endpoint is left to bill by the hour
	for _, it := range idleCost(t, f) {
		if strings.HasPrefix(it.what, "interface endpoint") {
			t.Errorf("%s: $%.2f a month", it.what, it.dollars)
		}
	}
	// and it meets the idle month's target
	if got > idleTarget {
		t.Errorf("idle month $%.2f is above the $%.0f target of issue 15", got, idleTarget)
	}
	// and with cache=nodes, the total the paragraph below the table states, to a tenth
	nodes := total(t, idleCost(t, nodesStack(t)))
	if want := docFigure(t, doc, `a total of about \$([0-9,]+(?:\.[0-9]+)?)`); math.Round(nodes*10)/10 != want {
		t.Errorf("idle month with cache=nodes: computed $%.2f, docs/DEPLOY.md says about $%v", nodes, want)
	}
}
