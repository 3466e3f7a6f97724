package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// pageDir is the waiting page's folder, relative to the repository root (the
// bench runs from there).
const pageDir = "static"

// pageWeight is what a visitor's first load of the waiting page costs: the
// same-origin objects the browser fetches (each one a CloudFront request and a
// CloudFront Function invocation) and their total size gzip-compressed at the
// default level (CloudFront compresses text). It reads static/index.html and
// follows its stylesheets (<link rel=stylesheet href>), its scripts (<script
// src>) and, for module scripts, their static imports (import … from '…',
// import '…', export … from '…'), and counts index.html itself.
//
// A visitor of one language also fetches that language's table,
// lang/<tag>.json (English's is in the bundle): the heaviest table is
// counted, so the figure is what a visitor of any one language loads at most.
//
// The join challenge's worker is not counted: it is started by new Worker(…),
// not imported, and only when a room turns a challenge on. Dynamic import()
// is not followed either (the page has none). Images (a room's logo) are the
// operator's and not the page's.
func pageWeight() (objects int, gzipBytes int, err error) {
	files, err := pageFiles(pageDir)
	if err != nil {
		return 0, 0, err
	}
	tables, err := pageTables(pageDir)
	if err != nil {
		return 0, 0, err
	}
	if len(tables) > 0 {
		files = append(files, tables[0].path)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(pageDir, filepath.FromSlash(f)))
		if err != nil {
			return 0, 0, err
		}
		n, err := pageGzipSize(b)
		if err != nil {
			return 0, 0, err
		}
		gzipBytes += n
	}
	return len(files), gzipBytes, nil
}

// pageFiles lists the objects of a first load of dir/index.html, as paths
// under dir ("index.html" first), each once.
func pageFiles(dir string) ([]string, error) {
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		return nil, err
	}
	files := []string{"index.html"}
	seen := map[string]bool{"index.html": true}
	var modules []string // module scripts whose imports are still to be read
	add := func(p string, module bool) error {
		if seen[p] {
			return nil
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("the page loads /%s: %w", p, err)
		}
		seen[p] = true
		files = append(files, p)
		if module {
			modules = append(modules, p)
		}
		return nil
	}
	for _, tag := range pageTagRE.FindAllStringSubmatch(string(html), -1) {
		name, attrs := strings.ToLower(tag[1]), pageAttributes(tag[2])
		var ref string
		module := false
		switch {
		case name == "link" && pageHasToken(attrs["rel"], "stylesheet"):
			ref = attrs["href"]
		case name == "link" && pageHasToken(attrs["rel"], "modulepreload"):
			ref, module = attrs["href"], true
		case name == "script":
			ref, module = attrs["src"], attrs["type"] == "module"
		}
		p, ok := pageSameOrigin(ref, "/")
		if !ok {
			continue
		}
		if err := add(p, module); err != nil {
			return nil, err
		}
	}
	for len(modules) > 0 {
		m := modules[0]
		modules = modules[1:]
		src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m)))
		if err != nil {
			return nil, err
		}
		for _, imp := range pageImportRE.FindAllStringSubmatch(string(src), -1) {
			p, ok := pageSameOrigin(imp[1], "/"+m)
			if !ok {
				continue
			}
			if err := add(p, true); err != nil {
				return nil, fmt.Errorf("%s: %w", m, err)
			}
		}
	}
	return files, nil
}

var (
	// pageTagRE matches an opening <link> or <script> tag: its name and attributes.
	pageTagRE = regexp.MustCompile(`(?is)<(link|script)\b([^>]*)>`)
	// pageAttrRE matches one attribute: name="value", name='value', name=value or name.
	pageAttrRE = regexp.MustCompile(`([^\s"'=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?`)
	// pageImportRE matches a static import's specifier: import x from '…', import '…',
	// export … from '…' (minified or not). Comments are not told apart, so an
	// import in a comment would count; the page's modules have none.
	pageImportRE = regexp.MustCompile(`(?:\bimport|\bexport)\s*(?:[\w*{}\s,$]+?\s*\bfrom\s*)?["']([^"']+)["']`)
)

// pageAttributes parses a tag's attributes (names lower-cased).
func pageAttributes(s string) map[string]string {
	m := map[string]string{}
	for _, a := range pageAttrRE.FindAllStringSubmatch(s, -1) {
		m[strings.ToLower(a[1])] = a[2] + a[3] + a[4]
	}
	return m
}

func pageHasToken(list, token string) bool {
	for _, f := range strings.Fields(strings.ToLower(list)) {
		if f == token {
			return true
		}
	}
	return false
}

// pageSameOrigin resolves ref, found in the object at base (a root path), to a
// path under the page's folder; false for an empty ref, another origin or a
// data: URL, which fetch nothing from the page's origin.
func pageSameOrigin(ref, base string) (string, bool) {
	if ref == "" || strings.HasPrefix(ref, "//") || strings.Contains(strings.SplitN(ref, "/", 2)[0], ":") {
		return "", false
	}
	if i := strings.IndexAny(ref, "?#"); i >= 0 {
		ref = ref[:i]
	}
	if !strings.HasPrefix(ref, "/") {
		ref = path.Join(path.Dir(base), ref)
	}
	p := strings.TrimPrefix(path.Clean(ref), "/")
	if p == "" || p == "." {
		return "index.html", true
	}
	return p, true
}

// pageGzipSize is len(b) gzip-compressed at the default level.
func pageGzipSize(b []byte) (int, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return buf.Len(), nil
}

// pageTable is a language's table of the page: its path under the page's
// folder and its size before and after compression.
type pageTable struct {
	path    string
	raw, gz int
}

// pageTables lists dir/lang/*.json, the heaviest (compressed) first.
func pageTables(dir string) ([]pageTable, error) {
	names, err := filepath.Glob(filepath.Join(dir, "lang", "*.json"))
	if err != nil {
		return nil, err
	}
	var tables []pageTable
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		gz, err := pageGzipSize(b)
		if err != nil {
			return nil, err
		}
		tables = append(tables, pageTable{path: "lang/" + filepath.Base(n), raw: len(b), gz: gz})
	}
	slices.SortFunc(tables, func(a, b pageTable) int { return cmp.Or(b.gz-a.gz, strings.Compare(a.path, b.path)) })
	return tables, nil
}

// pageScripts is the script a visitor of one language loads, before
// compression: the page's bundle and the heaviest language table (what the
// page's weight row judges); and the same with every language's table, the
// baseline of a bundle that carried them all.
func pageScripts(dir string) (oneLanguage, every int, err error) {
	st, err := os.Stat(filepath.Join(dir, "waiting.js"))
	if err != nil {
		return 0, 0, err
	}
	tables, err := pageTables(dir)
	if err != nil {
		return 0, 0, err
	}
	oneLanguage, every = int(st.Size()), int(st.Size())
	for i, tb := range tables {
		every += tb.raw
		if i == 0 {
			oneLanguage += tb.raw
		}
	}
	return oneLanguage, every, nil
}

// pageScriptsGoal is the bar: the page's script in one language, in bytes.
// The bundle carries the offer of notices of the turn and the count-down on
// the pace's climb (about 1.9 KB together); the notices' form and its tables
// are a bundle of their own, loaded only in a room that offers them.
const pageScriptsGoal = 42_000

// pageRow states pageScripts against the bar.
func pageRow() (Row, error) {
	one, every, err := pageScripts(pageDir)
	if err != nil {
		return Row{}, err
	}
	return row("waiting page's script for a visitor of one language (waiting.js + the heaviest lang/*.json), before compression",
		float64(one)/1000, "KB", float64(every)/1000, atMost(pageScriptsGoal/1000)), nil
}
