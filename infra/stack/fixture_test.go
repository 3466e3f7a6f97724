package stack_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// The fixtures every test file of the package shares: stacks synthesized in-process from settings
// (the shared ones once, sync.OnceValue), and helpers to look into their templates.

// fixture is one synthesized stack: the CDK template for assertions, and its JSON for Go checks;
// for the shared variants also cdk-nag's findings of the same synthesis (nag_test.go).
type fixture struct {
	tmpl      assertions.Template
	stack     awscdk.Stack
	resources map[string]map[string]any
	raw       map[string]any
	nag       []nagFinding
}

// placeholderAssets makes a dist/ of empty bootstraps and, if page is true, a static/ with a page,
// so the tests neither need `make build` nor wait for the page to be written.
func placeholderAssets(t testing.TB, page bool) (dist, static string) {
	root := t.TempDir()
	dist = filepath.Join(root, "dist")
	for _, name := range append(functionNames(stack.Functions), stack.KeySyncFunction, stack.Forwarder, stack.NotifyFunction) {
		must(t, os.MkdirAll(filepath.Join(dist, name), 0o755))
		must(t, os.WriteFile(filepath.Join(dist, name, "bootstrap"), nil, 0o755))
	}
	static = filepath.Join(root, "static")
	if page {
		must(t, os.MkdirAll(static, 0o755))
		must(t, os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html>"), 0o644))
	}
	return dist, static
}

func functionNames(fs []stack.Function) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// synth builds a stack from settings changed by edit and synthesizes it.
func synth(t testing.TB, region string, page bool, edit func(*stack.Settings)) fixture {
	t.Helper()
	return synthWith(t, region, page, false, edit)
}

// synthChecked is synth with cdk-nag's AwsSolutions pack run in the same synthesis: a shared
// variant's assertions, nag findings and cfn-lint all take its one synthesis (each takes seconds
// of the CDK's node process, which serves one call at a time).
func synthChecked(t testing.TB, region string, edit func(*stack.Settings)) fixture {
	t.Helper()
	return synthWith(t, region, true, true, edit)
}

// newApp builds, in an app of its own, the stack of the settings changed by edit, with cdk-nag's
// AwsSolutions pack on it when nag is set (its report goes to the app's outdir: nagReport).
func newApp(t testing.TB, region string, page, nag bool, edit func(*stack.Settings)) (awscdk.App, *stack.Vestibule, string) {
	skipShort(t)
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, page)
	if edit != nil {
		edit(&set)
	}
	ctx := cdkContext(t)
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out), Context: &ctx})
	props := &stack.Props{Settings: set}
	if region != "" {
		// as infra/main.go does with waf=true: the region only, so nothing is looked up
		props.Env = &awscdk.Environment{Region: jsii.String(region)}
	}
	v := stack.New(app, set.StackName(), props)
	if nag {
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
			Reports: jsii.Bool(true), ReportFormats: &[]cdknag.NagReportFormat{cdknag.NagReportFormat_CSV},
		}), nil)
	}
	return app, v, out
}

func synthWith(t testing.TB, region string, page, nag bool, edit func(*stack.Settings)) fixture {
	t.Helper()
	_, v, out := newApp(t, region, page, nag, edit)
	var tmpl assertions.Template
	failed := func() (failed bool) {
		defer func() { failed = recover() != nil && nag }()
		tmpl = assertions.Template_FromStack(v.Stack, nil)
		return false
	}()
	if failed {
		// cdk-nag's unsuppressed findings are error annotations, which fail the synthesis after
		// its report is written: the variant's other tests get their template from a synthesis
		// without it, and TestNagAwsSolutions the findings.
		f := synthWith(t, region, page, false, edit)
		f.nag = nagReport(t, out)
		return f
	}
	b, err := json.Marshal(tmpl.ToJSON())
	must(t, err)
	var raw map[string]any
	must(t, json.Unmarshal(b, &raw))
	res := map[string]map[string]any{}
	for id, r := range raw["Resources"].(map[string]any) {
		res[id] = r.(map[string]any)
	}
	f := fixture{tmpl: tmpl, stack: v.Stack, resources: res, raw: raw}
	if nag {
		f.nag = nagReport(t, out)
	}
	return f
}

// cdkContext is the context of cdk.json (the feature flags), so the stacks synthesized
// in-process are those `cdk synth` makes.
func cdkContext(t testing.TB) map[string]any {
	b, err := os.ReadFile(filepath.Join("..", "..", "cdk.json"))
	must(t, err)
	var c struct {
		Context map[string]any `json:"context"`
	}
	must(t, json.Unmarshal(b, &c))
	return c.Context
}

// skipShort skips a test that builds a stack under -short: every construct is made in the CDK's
// node process (jsii), and the package's stacks take about a minute together, so make
// test-short leaves them to make test (or go test ./infra/stack).
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: building stacks runs in the CDK's node process; make test runs it")
	}
}

// shared is a stack synthesized once, for every test that asks for it (skipped under -short).
func shared(synthesize func() fixture) func(testing.TB) fixture {
	once := sync.OnceValue(synthesize)
	return func(t testing.TB) fixture {
		t.Helper()
		skipShort(t)
		return once()
	}
}

// The default stack is synthesized once and shared: synthesis runs through jsii and takes seconds.
var defaultStack = shared(func() fixture { return synthChecked(onceT{}, "", nil) })

// sharedDir holds the shared fixtures' files; TestMain removes it.
var sharedDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "vestibule-infra-")
	if err != nil {
		panic(err)
	}
	sharedDir = d
	flag.Parse()
	startCLISynths()
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// onceT lets a shared fixture use the helpers outside any one test.
type onceT struct{ testing.TB }

func (onceT) Helper() {}

func (onceT) TempDir() string {
	d, err := os.MkdirTemp(sharedDir, "")
	if err != nil {
		panic(err)
	}
	return d
}

func (onceT) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

var nodesStack = shared(func() fixture {
	return synthChecked(onceT{}, "", func(s *stack.Settings) { s.Cache = stack.CacheNodes })
})

var (
	stagingStack = shared(func() fixture {
		return synthChecked(onceT{}, "", func(s *stack.Settings) { s.Stage = "staging" })
	})
	wafStack = shared(func() fixture {
		return synthChecked(onceT{}, "us-east-1", func(s *stack.Settings) { s.WAF = true })
	})
)

// domainsStack is the stack with every custom domain, in us-east-1, synthesized once.
var domainsStack = shared(func() fixture { return synthChecked(onceT{}, "us-east-1", withDomains) })

// constructed builds a stack without synthesizing it: for settings whose error annotation
// would stop the synthesis.
func constructed(t *testing.T, edit func(*stack.Settings)) *stack.Vestibule {
	skipShort(t)
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, false)
	edit(&set)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	return stack.New(app, set.StackName(), &stack.Props{Settings: set})
}

// errorAnnotation returns the first error annotation of the stack holding marker, or "".
func errorAnnotation(v *stack.Vestibule, marker string) string {
	for _, m := range *v.Node().Metadata() {
		if *m.Type == "aws:cdk:error" && strings.Contains(fmt.Sprint(m.Data), marker) {
			return fmt.Sprint(m.Data)
		}
	}
	return ""
}

// assert runs a CDK assertion, which panics through jsii on failure, and reports the failure
// as a test error so the other tests still run.
func assert(t *testing.T, check func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%v", r)
		}
	}()
	check()
}

func (f fixture) has(t *testing.T, typ string, p map[string]any) {
	t.Helper()
	assert(t, func() { f.tmpl.HasResourceProperties(&typ, p) })
}

func (f fixture) all(t *testing.T, typ string, p map[string]any) {
	t.Helper()
	assert(t, func() { f.tmpl.AllResourcesProperties(&typ, p) })
}

func (f fixture) count(t *testing.T, typ string, n float64) {
	t.Helper()
	assert(t, func() { f.tmpl.ResourceCountIs(&typ, &n) })
}

func (f fixture) output(t *testing.T, id string, p map[string]any) {
	t.Helper()
	assert(t, func() { f.tmpl.HasOutput(&id, p) })
}

// ofType returns the resources of one CloudFormation type, by logical id.
func (f fixture) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range f.resources {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// ours returns the Vestibule functions by name: those that carry the REDIS_URL environment (the
// others are CDK's own helpers, such as the BucketDeployment handler).
func (f fixture) ours(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range f.ofType("AWS::Lambda::Function") {
		env, _ := props(r)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if _, ok := vars[config.EnvRedisURL]; !ok {
			continue
		}
		name := strings.TrimPrefix(props(r)["Description"].(string), "Vestibule ")
		out[name] = r
	}
	if len(out) != len(stack.Functions) {
		t.Fatalf("found %d Vestibule functions, want %d", len(out), len(stack.Functions))
	}
	return out
}

func logicalID(f fixture, r map[string]any) string {
	for id, x := range f.resources {
		if reflect.ValueOf(x).Pointer() == reflect.ValueOf(r).Pointer() {
			return id
		}
	}
	return ""
}

func getAtt(id, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{id, attr}}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }
