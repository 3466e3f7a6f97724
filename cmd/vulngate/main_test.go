package main

import (
	"strings"
	"testing"
)

// govulncheck's JSON stream, cut to what judge reads: a called vulnerability
// of a module, a called one of the standard library, and one imported but
// not called.
const stream = `{"osv":{"id":"GO-2026-4962","summary":"Excessive memory allocation in golang.org/x/image"}}
{"osv":{"id":"GO-2026-6809","summary":"Distrust compromised intermediates in crypto/x509"}}
{"osv":{"id":"GO-2026-9999","summary":"not called"}}
{"finding":{"osv":"GO-2026-4962","fixed_version":"v0.39.0","trace":[{"module":"golang.org/x/image","version":"v0.30.0","package":"golang.org/x/image/font/sfnt","function":"Parse"},{"module":"github.com/vestibule-dev/vestibule","function":"chart"}]}}
{"finding":{"osv":"GO-2026-6809","fixed_version":"v1.26.10","trace":[{"module":"stdlib","version":"v1.26.8","package":"crypto/x509","function":"Verify"}]}}
{"finding":{"osv":"GO-2026-9999","fixed_version":"v1.2.3","trace":[{"module":"example.com/m","version":"v1.0.0","package":"example.com/m/p"}]}}
`

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		stdlibFail bool
		want       int
	}{{false, 1}, {true, 2}} {
		var out strings.Builder
		n, err := judge(strings.NewReader(stream), &out, tc.stdlibFail)
		if err != nil || n != tc.want {
			t.Errorf("stdlib fail %v: %d failing %v, want %d\n%s", tc.stdlibFail, n, err, tc.want, out.String())
		}
		if !strings.Contains(out.String(), "FAIL GO-2026-4962 golang.org/x/image@v0.30.0 (fixed in v0.39.0)") ||
			strings.Contains(out.String(), "GO-2026-9999") {
			t.Errorf("stdlib fail %v: report\n%s", tc.stdlibFail, out.String())
		}
	}
	if _, err := judge(strings.NewReader("{not json"), &strings.Builder{}, false); err == nil {
		t.Error("a stream that is not JSON was judged")
	}
}
