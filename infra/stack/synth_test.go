package stack_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

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
	root, err := filepath.Abs(filepath.Join("..", ".."))
	must(t, err)
	dist := filepath.Join(root, "dist")
	for _, f := range stack.Functions {
		if _, err := os.Stat(filepath.Join(dist, f.Name, "bootstrap")); err != nil {
			dist, _ = placeholderAssets(t, false)
			break
		}
	}
	// WHEN `cdk synth` runs offline
	out := t.TempDir()
	cmd := exec.Command(cdk, "synth", "--quiet", "--no-notices", "-o", out, "-c", stack.CtxAssetDir+"="+dist)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20", "CDK_DISABLE_VERSION_CHECK=1",
		"CDK_DISABLE_CLI_TELEMETRY=true")
	b, err := cmd.CombinedOutput()
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
	// (and the language tables the page fetches, one for a visitor's language)
	if want := []string{"challenge-worker.js", "index.html", "lang/de.json", "lang/es.json", "lang/fr.json", "lang/ja.json",
		"lang/ko.json", "lang/pt-BR.json", "lang/zh-Hans.json", "waiting.css", "waiting.js"}; !slices.Equal(staged, want) {
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
	root, err := filepath.Abs(filepath.Join("..", ".."))
	must(t, err)
	dist, _ := placeholderAssets(t, false)
	cmd := exec.Command(cdk, "synth", "--quiet", "--no-notices", "-o", t.TempDir(), "-c", stack.CtxAssetDir+"="+dist,
		"-c", stack.CtxAPIDomain+"=api.queue.example.com", "-c", stack.CtxAPICertificateArn+"="+testAPICert)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=eu-west-1",
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20", "CDK_DISABLE_VERSION_CHECK=1", "CDK_DISABLE_CLI_TELEMETRY=true")
	// WHEN `cdk synth` runs THEN it fails, naming the setting and the stack's region
	b, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("cdk synth exited 0:\n%s", b)
	}
	if !strings.Contains(string(b), stack.CtxAPICertificateArn) || !strings.Contains(string(b), "eu-west-1") {
		t.Errorf("cdk synth failed without naming %s and eu-west-1:\n%s", stack.CtxAPICertificateArn, b)
	}
}
