package functions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/routes"
)

// servesItsRoutes checks, on the bootstraps running under the emulator, that
// each API function answers every route the route table gives it, which is
// what the stack sends it (infra/stack makes one API Gateway route per
// routes.All entry, to the function it names; its TestAPIRoutes checks
// that): each function links only the handlers of its own routes
// (api.EnqueuePart…), so one dropped from its part, or a main naming
// another's part, answers the router's 404 or 405 instead. Each request is
// one the route refuses before it touches Redis or a key (an invalid room
// or event id, no credential), so any answer but 404 and 405 is the route's
// own. And a route of another function is not served: the split is real.
func servesItsRoutes(t *testing.T, fn map[string]*lambda) {
	t.Helper()
	for name, l := range fn {
		if name == "admit" {
			continue
		}
		served := 0
		for _, r := range routes.All {
			resp := l.route(t, r)
			if r.Function != name {
				if resp.StatusCode != 404 && resp.StatusCode != 405 {
					t.Errorf("%s answers %s, a route of %s: %d", name, r.Key(), r.Function, resp.StatusCode)
				}
				continue
			}
			served++
			if resp.StatusCode == 404 || resp.StatusCode == 405 {
				t.Errorf("%s does not serve its route %s: %d %s", name, r.Key(), resp.StatusCode, resp.Body)
			}
		}
		if served == 0 {
			t.Errorf("the route table gives %s no route", name)
		}
	}
}

// route invokes l with a request of r that the route itself refuses: the
// path's {room} and {event} are invalid ids, and nothing else is sent but,
// on an admin route, API Gateway's IAM authorizer context (ADMIN_AUTH=iam).
func (l *lambda) route(t *testing.T, r routes.Route) events.APIGatewayV2HTTPResponse {
	t.Helper()
	method := r.Method
	if method == routes.Any {
		method = "GET"
	}
	path := strings.NewReplacer("{room}", "bad.room", "{event}", "bad.event!", "{token}", "1",
		"{order}", "o1", "{path+}", "nginx").Replace(r.Path)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: r.Key(), RawPath: path,
		Headers: map[string]string{"host": "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "routes", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "198.51.100.23"},
		},
	}
	if r.Admin {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
				AccountID: "123456789012", UserARN: "arn:aws:sts::123456789012:assumed-role/VestibuleOperator/ops"},
		}
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if out := l.invoke(t, raw); json.Unmarshal(out, &resp) != nil {
		t.Fatalf("%s: not an API Gateway response: %s", r.Key(), out)
	}
	return resp
}
