package stack_test

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

// nagFinding is one rule a resource breaks (or that could not be checked on it), suppressed or not.
type nagFinding struct {
	rule, resource, info string
	suppressed           bool
}

// nagReport reads the findings of cdk-nag's compliance report (CSV) in an app's outdir. The
// report is written by cdk-nag in the CDK's node process: a Go logger would be called back for
// every rule on every resource, compliant or not, each call a round trip to Go, which took most of
// a variant's time.
func nagReport(t testing.TB, outdir string) []nagFinding {
	files, _ := filepath.Glob(filepath.Join(outdir, "AwsSolutions-*NagReport.csv"))
	if len(files) != 1 {
		must(t, fmt.Errorf("%d cdk-nag reports in %s, want 1", len(files), outdir))
	}
	f, err := os.Open(files[0])
	must(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	must(t, err)
	var out []nagFinding
	for _, r := range rows[1:] { // Rule ID, Resource ID, Compliance, Exception Reason, Rule Level, Rule Info
		switch r[2] {
		case "Compliant":
		case "Suppressed":
			out = append(out, nagFinding{rule: r[0], resource: r[1], info: r[3], suppressed: true})
		case "UNKNOWN":
			out = append(out, nagFinding{rule: r[0], resource: r[1], info: "rule error: " + r[5]})
		default:
			out = append(out, nagFinding{rule: r[0], resource: r[1], info: r[2] + ": " + r[5]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rule+out[i].resource < out[j].rule+out[j].resource })
	return out
}

// nagFindings runs cdk-nag's AwsSolutions pack on a stack built from settings changed by edit,
// for a variant no shared fixture is.
func nagFindings(t *testing.T, region string, edit func(*stack.Settings)) []nagFinding {
	t.Helper()
	app, _, out := newApp(t, region, true, true, edit)
	// cdk-nag also reports each unsuppressed finding as an error annotation, which fails the
	// synthesis after the aspects ran: the report has the answer by then.
	func() {
		defer func() { _ = recover() }()
		app.Synth(nil)
	}()
	return nagReport(t, out)
}

// TestNagAwsSolutions runs cdk-nag's AwsSolutions pack on every variant TestCfnLint lints
// (default, node cache, WAF, a second stage, the gate, every custom domain with origin mTLS: the
// findings of their shared synthesis), on the primary and the standby of two regions, and on two
// more (the gate with WAF, and every option at once), and fails on any finding that nag.go does
// not suppress with its reason.
func TestNagAwsSolutions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cdk-nag takes seconds a variant")
	}
	variants := []struct {
		name     string
		findings func() []nagFinding
	}{
		{"default", func() []nagFinding { return defaultStack(t).nag }},
		{"nodes", func() []nagFinding { return nodesStack(t).nag }},
		{"waf", func() []nagFinding { return wafStack(t).nag }},
		{"staging", func() []nagFinding { return stagingStack(t).nag }},
		{"gate", func() []nagFinding { return gateStack(t).nag }},
		{"gate-waf", func() []nagFinding {
			return nagFindings(t, "us-east-1", func(s *stack.Settings) { protectGate(s); s.WAF = true })
		}},
		{"domains", func() []nagFinding { return domainsStack(t).nag }},
		{"two regions: primary", func() []nagFinding { return primaryStack(t).nag }},
		{"two regions: standby", func() []nagFinding { return standbyStack(t).nag }},
		{"everything", func() []nagFinding {
			return nagFindings(t, "us-east-1", func(s *stack.Settings) {
				withDomains(s)
				s.Cache, s.WAF, s.AdmitReservedConcurrency = stack.CacheNodes, true, 1
			})
		}},
	}
	for _, v := range variants {
		// GIVEN the variant WHEN cdk-nag checks it
		findings := v.findings()
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
	for name, fx := range map[string]func(testing.TB) fixture{"default": defaultStack, "gate": gateStack, "waf": wafStack} {
		// GIVEN a synthesized stack WHEN its template's metadata is read
		f := fx(t)
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
