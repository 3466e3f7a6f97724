package localstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api"
)

// LambdaHTTP is the signature of an API Gateway HTTP API Lambda handler.
type LambdaHTTP func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// maxRead bounds what the gateway reads of a body: more than the largest
// limit of any route (MaxEventBody, an event's definition), so the handler
// sees a body is over its route's limit and answers 413, as it would in AWS
// (API Gateway passes up to 10 MB), never a JSON cut short.
const maxRead = 2 * api.MaxEventBody

// Gateway serves plain HTTP through a Lambda handler the way API Gateway's
// HTTP API does with payload format 2.0: header names lower-cased and repeated
// values joined by commas, cookies apart, a binary body base64-encoded, the
// request context filled in; and the response translated back.
func Gateway(fn LambdaHTTP) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRead+1))
		if err != nil {
			http.Error(w, "bad request body", http.StatusBadRequest)
			return
		}
		resp, err := fn(r.Context(), Event(r, body))
		if err != nil {
			// API Gateway answers a failed invocation like this.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"message":"Internal Server Error"}`)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		for k, vs := range resp.MultiValueHeaders {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		for _, c := range resp.Cookies {
			w.Header().Add("Set-Cookie", c)
		}
		out := []byte(resp.Body)
		if resp.IsBase64Encoded {
			if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(out)
	})
}

// Event translates an HTTP request (with its body already read) into the
// event API Gateway would send.
func Event(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
	headers := make(map[string]string, len(r.Header)+1)
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        r.URL.EscapedPath(),
		RawQueryString: r.URL.RawQuery,
		Cookies:        cookies,
		Headers:        headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     "$default",
			AccountID:    "000000000000",
			Stage:        "$default",
			RequestID:    requestID(),
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			Time:         time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    time.Now().UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	if q := r.URL.Query(); len(q) > 0 {
		ev.QueryStringParameters = make(map[string]string, len(q))
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	return ev
}

func requestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
