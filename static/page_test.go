package static

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// The waiting page's bundles, made by `make page` from js/ and committed (so
// that `make dev` needs no node).
var bundles = []string{"waiting.js", "challenge-worker.js", "notice.js"}

// TestPageBundle: the committed bundles are what `make page` makes of the
// sources now. Skipped without esbuild, except in CI, where `make test`
// installs it (deps-esbuild).
func TestPageBundle(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	_, onPath := exec.LookPath("esbuild")
	if _, err := os.Stat(filepath.Join(root, ".tools", "esbuild", "node_modules", ".bin", "esbuild")); err != nil && onPath != nil {
		testkit.Missing(t, "esbuild", "`make deps-esbuild` installs it into .tools/ (make test does)")
	}
	mk, err := exec.LookPath("make")
	if err != nil {
		testkit.Missing(t, "make", "install make")
	}
	// WHEN the bundles are built afresh into a temporary folder, as `make page` builds them
	out := t.TempDir()
	cmd := exec.Command(mk, "-s", "--no-print-directory", "page-build", "PAGE_OUT="+out)
	cmd.Dir = root
	for _, kv := range os.Environ() { // not the flags of a `make test` this runs under
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make page-build: %v\n%s", err, b)
	}
	// THEN they are the committed ones, and nothing else was built
	built, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != len(bundles) {
		t.Errorf("make page built %d files, the test knows %v", len(built), bundles)
	}
	for _, name := range bundles {
		fresh, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v: run make page", err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("static/%s differs from a fresh build of static/js (%d bytes, fresh %d): run make page",
				name, len(committed), len(fresh))
		}
	}
}

// TestPageLoadsBundle: the page loads the bundle and no module of js/ (those
// are not deployed), and the worker the bundle starts is beside it, whole
// (it imports nothing).
func TestPageLoadsBundle(t *testing.T) {
	html, err := os.ReadFile("index.html")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte(`<script type="module" src="/waiting.js"></script>`)) {
		t.Error("index.html does not load /waiting.js")
	}
	if bytes.Contains(html, []byte(`/js/`)) {
		t.Error("index.html loads from /js/, which is not deployed: load /waiting.js")
	}
	js, err := os.ReadFile("waiting.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`new Worker\(new URL\("\./([^"]+)",import\.meta\.url\)`).FindAllSubmatch(js, -1)
	if len(m) != 1 {
		t.Fatalf("the bundle starts %d workers by new URL(…, import.meta.url), want the challenge's", len(m))
	}
	worker, err := os.ReadFile(string(m[0][1]))
	if err != nil {
		t.Fatalf("the bundle's worker: %v", err)
	}
	if regexp.MustCompile(`\bimport\s*["'{*\w]|\bimport\(`).Match(worker) {
		t.Errorf("the worker %s imports a module; it must be bundled whole", m[0][1])
	}
}

// The page's languages: every one but English is a table of its own in
// lang/, which the page fetches for the language it shows; the bundle
// carries English and each language's name (the switch), and no other
// language's texts.
func TestPageCarriesOneLanguage(t *testing.T) {
	bundle, err := os.ReadFile("waiting.js")
	if err != nil {
		t.Fatal(err)
	}
	english, err := os.ReadFile(filepath.Join("js", "i18n.js")) // a text as in English is English's
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"de", "es", "fr", "ja", "ko", "pt-BR", "zh-Hans"}
	var got []string
	entries, err := os.ReadDir("lang")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() == "notice" {
			continue // the notices' own tables, which notice.js fetches (TestNoticeTexts)
		}
		tag, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			t.Errorf("lang/%s: not a language table", e.Name())
			continue
		}
		got = append(got, tag)
		b, err := os.ReadFile(filepath.Join("lang", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var table map[string]string
		if err := json.Unmarshal(b, &table); err != nil || len(table) == 0 {
			t.Fatalf("lang/%s: %v (%d texts)", e.Name(), err, len(table))
		}
		if !bytes.Contains(bundle, []byte(`"`+tag+`"`)) && !bytes.Contains(bundle, []byte(tag+":")) {
			t.Errorf("the bundle does not name %s (the switch)", tag)
		}
		in := 0
		for key, text := range table {
			if len(text) >= 12 && bytes.Contains(bundle, []byte(text)) && !bytes.Contains(english, []byte(text)) {
				in++
				if in <= 3 {
					t.Errorf("the bundle carries %s's %s: %q", tag, key, text)
				}
			}
		}
		if in > 3 {
			t.Errorf("…and %d more of %s's texts", in-3, tag)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("language tables %v, want %v", got, want)
	}
}
