package stack_test

import (
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

// cliSynth is one run of the real CDK CLI's `cdk synth` in the repository root, offline. Each
// test's run is started by TestMain (startCLISynths) when the test is to run, so the CLI's node,
// the build of the app and the app's own jsii process work beside the in-process synthesis of the
// other tests (one node process, which serves one call at a time) instead of after it.
type cliSynth struct {
	once sync.Once
	done chan struct{}
	args []string // after synth's own, from the dist folder
	env  []string
	out  string // the output folder
	b    []byte // combined output
	err  error
}

// cdkEnv is the environment the CLI runs with: no version check, no telemetry, no warning on an
// old node.
var cdkEnv = []string{"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20", "CDK_DISABLE_VERSION_CHECK=1", "CDK_DISABLE_CLI_TELEMETRY=true"}

// The CLI runs of TestCDKSynth and TestCDKSynthRefusesAnAPICertificateOfAnotherRegion.
var (
	cliDefault     = &cliSynth{}
	cliOtherRegion = &cliSynth{
		args: []string{"-c", stack.CtxAPIDomain + "=api.queue.example.com", "-c", stack.CtxAPICertificateArn + "=" + testAPICert},
		env:  []string{"AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=eu-west-1"},
	}
)

// start starts the run in the background, once; dist is the function binaries it synthesizes with.
func (c *cliSynth) start(cdk, root, dist string) {
	c.once.Do(func() {
		c.done = make(chan struct{})
		d, err := os.MkdirTemp(sharedDir, "cdk.out")
		if err != nil {
			panic(err)
		}
		c.out = d
		args := append([]string{"synth", "--quiet", "--no-notices", "-o", c.out, "-c", stack.CtxAssetDir + "=" + dist}, c.args...)
		cmd := exec.Command(cdk, args...)
		cmd.Dir = root
		cmd.Env = append(append(os.Environ(), cdkEnv...), c.env...)
		go func() {
			defer close(c.done)
			c.b, c.err = cmd.CombinedOutput()
		}()
	})
}

// wait waits for the run.
func (c *cliSynth) wait() ([]byte, error) {
	<-c.done
	return c.b, c.err
}

// repoRoot is the repository root.
func repoRoot(t testing.TB) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	must(t, err)
	return root
}

// builtDist is dist/ when `make build` has filled it, else placeholder binaries.
func builtDist(t testing.TB) string {
	dist := filepath.Join(repoRoot(t), "dist")
	for _, f := range stack.Functions {
		if _, err := os.Stat(filepath.Join(dist, f.Name, "bootstrap")); err != nil {
			dist, _ = placeholderAssets(t, false)
			break
		}
	}
	return dist
}

// startCLISynths starts the CLI runs of the tests -run selects, unless -short or without the
// CLI (the tests then say why they skip). TestMain calls it after parsing the flags.
func startCLISynths() {
	cdk, err := exec.LookPath("cdk")
	if err != nil || testing.Short() {
		return
	}
	root := repoRoot(onceT{})
	if selected("TestCDKSynth") {
		cliDefault.start(cdk, root, builtDist(onceT{}))
	}
	if selected("TestCDKSynthRefusesAnAPICertificateOfAnotherRegion") {
		dist, _ := placeholderAssets(onceT{}, false)
		cliOtherRegion.start(cdk, root, dist)
	}
	if selected("TestCDKSynthTwoRegionStandby") {
		dist, _ := placeholderAssets(onceT{}, false)
		cliStandby.start(cdk, root, dist)
	}
}

// selected reports whether -run and -skip would run the top-level test name.
func selected(name string) bool {
	matches := func(flagName string) (matched, given bool) {
		f := flag.Lookup(flagName)
		if f == nil || f.Value.String() == "" {
			return false, false
		}
		top, _, _ := strings.Cut(f.Value.String(), "/")
		ok, err := regexp.MatchString(top, name)
		return err != nil || ok, true
	}
	// a -skip of subtests (a pattern with /) still runs the top-level test
	if skip, given := matches("test.skip"); given && skip && !strings.Contains(flag.Lookup("test.skip").Value.String(), "/") {
		return false
	}
	run, given := matches("test.run")
	return !given || run
}

// TestCDKSynth runs the real CDK CLI on the app, as `make synth` does, so cdk.json, package main and
// the CLI's cloud-assembly schema are exercised together. It uses dist/ when `make build` has filled
// it and placeholder binaries otherwise. Skipped without the CLI, except in CI, where a missing CLI
// means `make deps-cdk` did not run and must fail.
func TestCDKSynth(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the CLI synth takes a minute on a busy machine")
	}
	cdk, err := exec.LookPath("cdk")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("cdk CLI not on PATH in CI: run `make deps-cdk` (make test does)")
		}
		t.Skip("cdk CLI not on PATH; `make deps-cdk` installs it into .tools/")
	}
	// GIVEN the repository root, with or without a built dist/
	// WHEN `cdk synth` runs offline (started by TestMain)
	cliDefault.start(cdk, repoRoot(t), builtDist(t))
	b, err := cliDefault.wait()
	out := cliDefault.out
	// THEN it succeeds and writes the template
	if err != nil {
		t.Fatalf("cdk synth: %v\n%s", err, b)
	}
	tmpl, err := os.ReadFile(filepath.Join(out, "Vestibule.template.json"))
	if err != nil {
		t.Fatalf("no template: %v\n%s", err, b)
	}
	if !strings.Contains(string(tmpl), `"AWS::ElastiCache::ServerlessCache"`) {
		t.Error("the synthesized template has no serverless cache")
	}
	// AND the page's asset, as CDK staged it with NotPublic excluded, is what the page loads
	// and the challenge's worker: no console, no Go source, none of the modules under js/
	pages, _ := filepath.Glob(filepath.Join(out, "asset.*", "index.html"))
	if len(pages) != 1 {
		t.Fatalf("%d staged assets with an index.html, want the page's", len(pages))
	}
	var staged []string
	err = filepath.WalkDir(filepath.Dir(pages[0]), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(filepath.Dir(pages[0]), p)
			staged = append(staged, filepath.ToSlash(rel))
		}
		return err
	})
	must(t, err)
	slices.Sort(staged)
	// (and the language tables the page fetches, one for a visitor's language; the notices'
	// bundle, its service worker and tables, which a room that offers notices loads)
	if want := []string{"challenge-worker.js", "index.html", "lang/de.json", "lang/es.json", "lang/fr.json", "lang/ja.json",
		"lang/ko.json", "lang/notice/de.json", "lang/notice/es.json", "lang/notice/fr.json", "lang/notice/ja.json",
		"lang/notice/ko.json", "lang/notice/pt-BR.json", "lang/notice/zh-Hans.json", "lang/pt-BR.json", "lang/zh-Hans.json",
		"notice-sw.js", "notice.js", "waiting.css", "waiting.js"}; !slices.Equal(staged, want) {
		t.Errorf("the page bucket gets %v, want %v", staged, want)
	}
}

// TestCDKSynthRefusesAnAPICertificateOfAnotherRegion: the CLI, with the deploying credentials in
// one region and the API's certificate in another, fails the synthesis instead of a deploy.
func TestCDKSynthRefusesAnAPICertificateOfAnotherRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the CLI synth takes a minute on a busy machine")
	}
	cdk, err := exec.LookPath("cdk")
	if err != nil {
		t.Skip("cdk CLI not on PATH; `make deps-cdk` installs it into .tools/")
	}
	// GIVEN AWS_REGION=eu-west-1 and an API certificate in us-east-1
	dist, _ := placeholderAssets(t, false)
	// WHEN `cdk synth` runs (started by TestMain) THEN it fails, naming the setting and the stack's region
	cliOtherRegion.start(cdk, repoRoot(t), dist)
	b, err := cliOtherRegion.wait()
	if err == nil {
		t.Fatalf("cdk synth exited 0:\n%s", b)
	}
	if !strings.Contains(string(b), stack.CtxAPICertificateArn) || !strings.Contains(string(b), "eu-west-1") {
		t.Errorf("cdk synth failed without naming %s and eu-west-1:\n%s", stack.CtxAPICertificateArn, b)
	}
}
