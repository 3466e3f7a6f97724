package stack_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

// nagFinding is one rule a resource breaks, or one rule that could not be checked on it.
type nagFinding struct {
	rule, resource, info string
	suppressed           bool
}

// nagCollector is a cdk-nag logger that keeps the findings.
type nagCollector struct {
	mu       sync.Mutex
	findings []nagFinding
}

func (c *nagCollector) add(rule, info *string, finding *string, res awscdk.CfnResource, suppressed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := *res.Stack().GetLogicalId(res)
	if finding != nil && *finding != "" {
		id += " " + *finding
	}
	c.findings = append(c.findings, nagFinding{rule: *rule, resource: id, info: *info, suppressed: suppressed})
}

func (c *nagCollector) OnCompliance(*cdknag.NagLoggerComplianceData)       {}
func (c *nagCollector) OnNotApplicable(*cdknag.NagLoggerNotApplicableData) {}
func (c *nagCollector) OnNonCompliance(d *cdknag.NagLoggerNonComplianceData) {
	c.add(d.RuleId, d.RuleInfo, d.FindingId, d.Resource, false)
}
func (c *nagCollector) OnError(d *cdknag.NagLoggerErrorData) {
	c.add(d.RuleId, jsii.String("rule error: "+*d.ErrorMessage), nil, d.Resource, false)
}
func (c *nagCollector) OnSuppressed(d *cdknag.NagLoggerSuppressedData) {
	c.add(d.RuleId, d.RuleInfo, d.FindingId, d.Resource, true)
}
func (c *nagCollector) OnSuppressedError(d *cdknag.NagLoggerSuppressedErrorData) {
	c.add(d.RuleId, d.RuleInfo, nil, d.Resource, true)
}

// nagFindings runs cdk-nag's AwsSolutions pack on a stack built from settings changed by edit.
func nagFindings(t *testing.T, region string, edit func(*stack.Settings)) []nagFinding {
	t.Helper()
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, true)
	if edit != nil {
		edit(&set)
	}
	ctx := cdkContext(t)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &ctx})
	props := &stack.Props{Settings: set}
	if region != "" {
		props.Env = &awscdk.Environment{Region: jsii.String(region)}
	}
	stack.New(app, set.StackName(), props)
	c := &nagCollector{}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
		AdditionalLoggers: &[]cdknag.INagLogger{c},
	}), nil)
	// cdk-nag also reports each unsuppressed finding as an error annotation, which fails the
	// synthesis after the aspects ran: the collector has the answer by then.
	func() {
		defer func() { _ = recover() }()
		app.Synth(nil)
	}()
	sort.Slice(c.findings, func(i, j int) bool {
		return c.findings[i].rule+c.findings[i].resource < c.findings[j].rule+c.findings[j].resource
	})
	return c.findings
}

// TestNagAwsSolutions runs cdk-nag's AwsSolutions pack on every variant TestCfnLint lints
// (default, node cache, WAF, a second stage, the gate, every custom domain with origin mTLS)
// and on one with every option at once, and fails on any finding that nag.go does not
// suppress with its reason.
func TestNagAwsSolutions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cdk-nag takes half a minute a variant")
	}
	variants := []struct {
		name, region string
		edit         func(*stack.Settings)
	}{
		{"default", "", nil},
		{"nodes", "", func(s *stack.Settings) { s.Cache = stack.CacheNodes }},
		{"waf", "us-east-1", func(s *stack.Settings) { s.WAF = true }},
		{"staging", "", func(s *stack.Settings) { s.Stage = "staging" }},
		{"gate", "", protectGate},
		{"gate-waf", "us-east-1", func(s *stack.Settings) { protectGate(s); s.WAF = true }},
		{"domains", "us-east-1", withDomains},
		{"everything", "us-east-1", func(s *stack.Settings) {
			withDomains(s)
			s.Cache, s.WAF, s.AdmitReservedConcurrency = stack.CacheNodes, true, 1
		}},
	}
	for _, v := range variants {
		// GIVEN the variant WHEN cdk-nag checks it
		findings := nagFindings(t, v.region, v.edit)
		// THEN every finding is suppressed, and there were some to suppress (cdk-nag ran)
		suppressed := 0
		for _, f := range findings {
			if f.suppressed {
				suppressed++
				continue
			}
			t.Errorf("%s: %s on %s: %s", v.name, f.rule, f.resource, f.info)
		}
		if suppressed == 0 {
			t.Errorf("%s: cdk-nag reported nothing, suppressed or not", v.name)
		}
		t.Logf("%s: %d findings, all suppressed with their reasons", v.name, suppressed)
	}
}

// TestNagSuppressionsAreScoped: every suppression is on the resources it is about, none on the
// stack as a whole, so a new resource that breaks a rule is reported until it gets a reason.
func TestNagSuppressionsAreScoped(t *testing.T) {
	for name, fx := range map[string]func() fixture{"default": defaultStack, "gate": gateStack, "waf": wafStack} {
		// GIVEN a synthesized stack WHEN its template's metadata is read
		f := fx()
		// THEN it holds no stack-wide cdk-nag suppression
		if md, _ := f.raw["Metadata"].(map[string]any); md["cdk_nag"] != nil {
			t.Errorf("%s: stack-wide cdk-nag suppressions: %v", name, md["cdk_nag"])
		}
		// and some resources hold their own
		scoped := 0
		for id, r := range f.resources {
			md, _ := r["Metadata"].(map[string]any)
			if md["cdk_nag"] == nil {
				continue
			}
			scoped++
			// and with WAF on no distribution is excused from having one (CFR2)
			if name == "waf" && r["Type"] == "AWS::CloudFront::Distribution" && strings.Contains(fmt.Sprint(md["cdk_nag"]), "CFR2") {
				t.Errorf("%s: %s: CFR2 suppressed with waf=true", name, id)
			}
		}
		if scoped == 0 {
			t.Errorf("%s: no resource carries a cdk-nag suppression", name)
		}
	}
}
