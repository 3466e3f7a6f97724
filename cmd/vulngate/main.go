// Command vulngate reads govulncheck's JSON (-format json) on stdin and
// decides make test's verdict: it lists every vulnerability the code calls
// and fails (exit 1) when one is in a required module, which go.mod can fix.
// Those of the standard library are fixed by the Go toolchain, which is the
// machine's, not the module's: they fail only with -stdlib=fail.
//
//	govulncheck -db file://… -format json ./... | go run ./cmd/vulngate
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// message is the part of a govulncheck JSON message vulngate reads.
type message struct {
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
	Finding *struct {
		OSV          string `json:"osv"`
		FixedVersion string `json:"fixed_version"`
		Trace        []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Package  string `json:"package"`
			Function string `json:"function"`
		} `json:"trace"`
	} `json:"finding"`
}

func main() {
	stdlib := flag.String("stdlib", "warn", "the standard library's vulnerabilities: warn or fail")
	flag.Parse()
	failed, err := judge(os.Stdin, os.Stdout, *stdlib == "fail")
	if err != nil {
		fmt.Fprintf(os.Stderr, "vulngate: reading govulncheck's output: %v\n", err)
		os.Exit(2)
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// judge reads govulncheck's JSON messages from r, writes a line per
// vulnerability the code calls and a summary to w, and returns how many
// fail: those of required modules, and with stdlibFail the standard
// library's too.
func judge(r io.Reader, w io.Writer, stdlibFail bool) (int, error) {
	summaries := map[string]string{}
	called := map[string]string{} // osv id → "module@version (fixed in …)"
	dec := json.NewDecoder(r)
	for {
		var m message
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		if m.OSV != nil {
			summaries[m.OSV.ID] = m.OSV.Summary
		}
		// A finding whose trace starts in a function is called by the code.
		if f := m.Finding; f != nil && len(f.Trace) > 0 && f.Trace[0].Function != "" {
			t := f.Trace[0]
			called[f.OSV] = fmt.Sprintf("%s@%s (fixed in %s)", t.Module, t.Version, f.FixedVersion)
		}
	}
	var ids []string
	for id := range called {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	failed := 0
	for _, id := range ids {
		word := "FAIL"
		if strings.HasPrefix(called[id], "stdlib@") && !stdlibFail {
			word = "warn"
		} else {
			failed++
		}
		if _, err := fmt.Fprintf(w, "%s %s %s: %s\n", word, id, called[id], summaries[id]); err != nil {
			return failed, err
		}
	}
	_, err := fmt.Fprintf(w, "govulncheck: %d vulnerabilities called, %d failing\n", len(ids), failed)
	return failed, err
}
