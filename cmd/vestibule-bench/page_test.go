package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The waiting page as committed: index.html and each stylesheet and script
// it names are counted, the challenge worker is not, and the compressed size
// is that of those files.
func TestPageWeight(t *testing.T) {
	t.Chdir(filepath.Join("..", "..")) // the bench runs from the repository root
	objects, gz, err := pageWeight()
	if err != nil {
		t.Fatal(err)
	}
	files, err := pageFiles(pageDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first load: %d objects, %d bytes gzipped: %v", objects, gz, files)
	if objects != len(files)+1 || objects < 3 || files[0] != "index.html" { // and one language table
		t.Fatalf("%d objects %v, want index.html, what it loads and one language table", objects, files)
	}
	html, err := os.ReadFile(filepath.Join(pageDir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	// Every root path the page's <link rel=stylesheet> and <script src> name is counted.
	refs := regexp.MustCompile(`<(?:link rel="stylesheet" href|script[^>]*src)="/([^"]+)"`).FindAllStringSubmatch(string(html), -1)
	if len(refs) == 0 {
		t.Fatal("index.html loads no stylesheet or script")
	}
	for _, r := range refs {
		if !slices.Contains(files, r[1]) {
			t.Errorf("index.html loads /%s, not counted in %v", r[1], files)
		}
	}
	raw := 0
	for _, f := range files {
		if filepath.Base(f) == "challenge-worker.js" {
			t.Errorf("the challenge worker %s is counted; it loads only with a challenge", f)
		}
		st, err := os.Stat(filepath.Join(pageDir, f))
		if err != nil {
			t.Fatal(err)
		}
		raw += int(st.Size())
	}
	if gz <= 0 || gz >= raw {
		t.Errorf("%d bytes gzipped of %d raw", gz, raw)
	}
}

// A page of ES modules: the import graph is followed once per module, the
// worker, other origins and data: URLs are not objects of the page.
func TestPageObjectsImportGraph(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("index.html", `<!doctype html><link rel="stylesheet" href="/a.css"><link rel="icon" href="data:,">
<script src="https://cdn.example/x.js"></script><script type="module" src="/js/main.js?v=2"></script>`)
	write("a.css", "body{}")
	write("js/main.js", `import * as api from './api.js';
import { t, u } from "./lib/i18n.js";
import './side.js';
const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });`)
	write("js/api.js", `export const x = 'import';`)
	write("js/lib/i18n.js", `import{x as y}from"../api.js";export{y};export*from"./more.js"`)
	write("js/lib/more.js", ``)
	write("js/side.js", `import "https://cdn.example/y.js";`)
	write("js/worker.js", `import './api.js';`)

	got, err := pageFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"index.html", "a.css", "js/main.js", "js/api.js", "js/lib/i18n.js", "js/side.js", "js/lib/more.js"}
	if !slices.Equal(got, want) {
		t.Errorf("objects %v\nwant    %v", got, want)
	}

	// A missing object is an error, not a lighter page.
	if err := os.Remove(filepath.Join(dir, "js", "side.js")); err != nil {
		t.Fatal(err)
	}
	if _, err := pageFiles(dir); err == nil {
		t.Error("no error for an import of a missing file")
	}
}

// The page in one language: the bundle and the heaviest table are within
// the bar, every table is counted in the figure with all of them, and the
// first load counts one table.
func TestPageInOneLanguage(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	tables, err := pageTables(pageDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 7 {
		t.Fatalf("%d language tables", len(tables))
	}
	for _, tb := range tables[1:] {
		if tb.gz > tables[0].gz {
			t.Errorf("%s is heavier than %s, counted as the heaviest", tb.path, tables[0].path)
		}
	}
	one, every, err := pageScripts(pageDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page's script: %d B in one language, %d B with every table", one, every)
	if one > pageScriptsGoal {
		t.Errorf("the page's script in one language is %d B, the bar %d", one, pageScriptsGoal)
	}
	if every-one < 6*3000 {
		t.Errorf("the other tables weigh %d B", every-one)
	}
	files, err := pageFiles(pageDir)
	if err != nil {
		t.Fatal(err)
	}
	objects, _, err := pageWeight()
	if err != nil || objects != len(files)+1 {
		t.Errorf("first load %d objects (%v), want the page's %d and a table", objects, err, len(files))
	}
	r, err := pageRow()
	if err != nil || r.Met == nil || !*r.Met || r.Baseline <= r.Value {
		t.Errorf("row %+v, %v", r, err)
	}
}
