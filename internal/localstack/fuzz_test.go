package localstack_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/localstack"
)

// FuzzGateway feeds raw HTTP/1.1 requests to the local stack's gateway and a
// handler that records the event it gets and answers with a fuzzed body. The
// local stack must hand the router what API Gateway would, or a test that passes
// locally proves nothing about AWS. Seeds are in testdata/fuzz/FuzzGateway/.
//
// Properties: no panic; the event's body decodes to exactly the bytes read
// (base64-flagged exactly when they are not UTF-8), and never more than the
// gateway's read limit; header names are lower-cased, repeated values joined
// with commas, cookies apart; the raw path unescapes to the path; every query
// parameter arrives; and the handler's response comes back as it was sent, with
// an undecodable base64 body answered 502.
func FuzzGateway(f *testing.F) {
	// The gateway reads at most this much (its maxRead + 1): past every route's limit (the
	// largest, api.MaxEventBody), so the router answers 413.
	const readLimit = 2*api.MaxEventBody + 1
	f.Fuzz(func(t *testing.T, raw []byte, respBody string, respBase64 bool) {
		parse := func() *http.Request {
			r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil {
				return nil
			}
			r.RemoteAddr = "192.0.2.1:4321"
			return r
		}
		want := parse()
		if want == nil {
			t.Skip("not an HTTP request")
		}
		wantBody, readErr := io.ReadAll(io.LimitReader(want.Body, readLimit))

		var got *events.APIGatewayV2HTTPRequest
		gw := localstack.Gateway(func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = &ev
			return events.APIGatewayV2HTTPResponse{StatusCode: 299, Body: respBody, IsBase64Encoded: respBase64,
				Headers: map[string]string{"X-Fuzz": "1"}}, nil
		})
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, parse())

		if readErr != nil {
			if got != nil || rec.Code != http.StatusBadRequest {
				t.Fatalf("unreadable body (%v): handler called %v, status %d", readErr, got != nil, rec.Code)
			}
			return
		}
		if got == nil {
			t.Fatalf("the handler was not called; status %d", rec.Code)
		}

		// Body: exactly the bytes read, base64 exactly when not UTF-8.
		body := []byte(got.Body)
		if got.IsBase64Encoded {
			d, err := base64.StdEncoding.DecodeString(got.Body)
			if err != nil {
				t.Fatalf("base64-flagged body does not decode: %v", err)
			}
			body = d
		}
		if !bytes.Equal(body, wantBody) {
			t.Fatalf("body %q reached the handler as %q", wantBody, body)
		}
		if len(body) > readLimit {
			t.Fatalf("a body of %d bytes passed a read limit of %d", len(body), readLimit)
		}
		if got.IsBase64Encoded != (len(wantBody) > 0 && !utf8.Valid(wantBody)) {
			t.Fatalf("base64 flag %v for a body with utf8.Valid = %v", got.IsBase64Encoded, utf8.Valid(wantBody))
		}

		// Headers: lower-case names, repeated values joined, cookies apart.
		for k := range got.Headers {
			if k != strings.ToLower(k) || k == "cookie" {
				t.Fatalf("header name %q reached the handler", k)
			}
		}
		for k, vs := range want.Header {
			if strings.EqualFold(k, "Cookie") {
				continue
			}
			if v, ok := got.Headers[strings.ToLower(k)]; !ok || v != strings.Join(vs, ",") {
				t.Fatalf("header %q: %q reached the handler as %q (present %v)", k, vs, v, ok)
			}
		}
		if got.Headers["host"] != want.Host {
			t.Fatalf("host %q reached the handler as %q", want.Host, got.Headers["host"])
		}
		for _, c := range want.Cookies() {
			if !contains(got.Cookies, c.Name+"="+c.Value) {
				t.Fatalf("cookie %s=%s missing from %q", c.Name, c.Value, got.Cookies)
			}
		}

		// Path and query: the router matches on the raw path; it must mean the path.
		if p, err := url.PathUnescape(got.RawPath); err != nil || p != got.RequestContext.HTTP.Path {
			t.Fatalf("raw path %q unescapes to %q (%v), but the path is %q", got.RawPath, p, err, got.RequestContext.HTTP.Path)
		}
		if got.RequestContext.HTTP.Method != want.Method || got.RequestContext.HTTP.SourceIP != "192.0.2.1" {
			t.Fatalf("method %q source %q, want %q 192.0.2.1", got.RequestContext.HTTP.Method, got.RequestContext.HTTP.SourceIP, want.Method)
		}
		for k, vs := range want.URL.Query() {
			if v, ok := got.QueryStringParameters[k]; !ok || v != strings.Join(vs, ",") {
				t.Fatalf("query %q: %q reached the handler as %q", k, vs, v)
			}
		}

		// The response goes back as the handler wrote it.
		wantOut := []byte(respBody)
		if respBase64 {
			d, err := base64.StdEncoding.DecodeString(respBody)
			if err != nil {
				if rec.Code != http.StatusBadGateway {
					t.Fatalf("undecodable base64 response answered %d, want 502", rec.Code)
				}
				return
			}
			wantOut = d
		}
		if rec.Code != 299 || rec.Header().Get("X-Fuzz") != "1" || !bytes.Equal(rec.Body.Bytes(), wantOut) {
			t.Fatalf("response %d %v %q, want 299 X-Fuzz: 1 %q", rec.Code, rec.Header(), rec.Body.Bytes(), wantOut)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
