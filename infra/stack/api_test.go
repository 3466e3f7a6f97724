package stack_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

func TestRoutesAndIAMOnAdmin(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// WHEN the routes are read
	var got, want []string
	for _, r := range f.ofType("AWS::ApiGatewayV2::Route") {
		p := props(r)
		key := p["RouteKey"].(string)
		got = append(got, key)
		// THEN admin routes require IAM and no other route does
		wantAuth := "NONE"
		if strings.Contains(key, " /api/admin/") {
			wantAuth = "AWS_IAM"
		}
		if p["AuthorizationType"] != wantAuth {
			t.Errorf("%s: authorization %v, want %s", key, p["AuthorizationType"], wantAuth)
		}
	}
	// and the routes are exactly those of the API's route table (routes.All)
	for _, r := range routes.All {
		want = append(want, r.Key())
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("routes\n got %v\nwant %v", got, want)
	}
	// and each goes to the function the table names
	for _, r := range f.ofType("AWS::ApiGatewayV2::Route") {
		key := props(r)["RouteKey"].(string)
		if fn, want := routeFunction(t, f, r), functionOf(key); fn != want {
			t.Errorf("%s goes to %q, want %q", key, fn, want)
		}
	}
	// and the integrations are Lambda proxies with payload 2.0, and the stage is throttled
	f.all(t, "AWS::ApiGatewayV2::Integration", map[string]any{
		"IntegrationType": "AWS_PROXY", "PayloadFormatVersion": "2.0",
	})
	f.has(t, "AWS::ApiGatewayV2::Stage", map[string]any{
		"StageName":            "$default",
		"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": 5000, "ThrottlingBurstLimit": 5000},
	})
}

// functionOf is the function routes.All names for a route key.
func functionOf(key string) string {
	for _, r := range routes.All {
		if r.Key() == key {
			return r.Function
		}
	}
	return ""
}

// routeFunction follows a route to its integration and the integration to its function, and returns
// the function's name (its description is "Vestibule <name>").
func routeFunction(t *testing.T, f fixture, route map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(props(route)["Target"])
	for id, r := range f.resources {
		if r["Type"] != "AWS::ApiGatewayV2::Integration" || !strings.Contains(string(b), `"Ref":"`+id+`"`) {
			continue
		}
		uri, _ := json.Marshal(props(r)["IntegrationUri"])
		for fid, fr := range f.resources {
			if fr["Type"] == "AWS::Lambda::Function" && strings.Contains(string(uri), `"`+fid+`"`) {
				return strings.TrimPrefix(props(fr)["Description"].(string), "Vestibule ")
			}
		}
	}
	t.Errorf("route %v: no integration to a function", props(route)["RouteKey"])
	return ""
}

func TestAPIAccessLogs(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	var stage map[string]any
	for _, s := range f.ofType("AWS::ApiGatewayV2::Stage") {
		stage = props(s)
	}
	// THEN the stage writes JSON access logs to a log group of the stack, with a retention
	als, _ := stage["AccessLogSettings"].(map[string]any)
	dest, _ := als["DestinationArn"].(map[string]any)["Fn::GetAtt"].([]any)
	if len(dest) != 2 || f.resources[dest[0].(string)]["Type"] != "AWS::Logs::LogGroup" ||
		props(f.resources[dest[0].(string)])["RetentionInDays"] != 30.0 {
		t.Fatalf("access log settings %v", als)
	}
	var line map[string]string
	if err := json.Unmarshal([]byte(als["Format"].(string)), &line); err != nil {
		t.Fatalf("format is not a JSON object: %v", err)
	}
	// with the request, the answer and the signer of admin calls, under short keys, and nothing else
	want := map[string]string{"id": "$context.requestId", "t": "$context.requestTimeEpoch",
		"ip": "$context.identity.sourceIp", "m": "$context.httpMethod", "p": "$context.path",
		"s": "$context.status", "ms": "$context.responseLatency", "is": "$context.integrationStatus",
		"ie": "$context.integrationErrorMessage", "u": "$context.identity.userArn", "st": "Vestibule"}
	if !reflect.DeepEqual(line, want) {
		t.Errorf("access log format %v, want %v", line, want)
	}
	for _, v := range line {
		if strings.Contains(strings.ToLower(v), "header") || strings.Contains(v, "body") {
			t.Errorf("access log carries %s", v)
		}
	}
}

// A successful poll's access log line, with typical values: a 16-character request id, an edge
// server's address, a 16-character room id, a 2-digit latency. Every poll writes one (about ten
// million for a million visitors), so the line stays short; it was 366 B with the long keys and
// the route key, response length and caller fields before.
func TestAccessLogLineOfAPoll(t *testing.T) {
	line := stack.AccessLogOfAPoll("Vestibule")
	if strings.Contains(line, "$context") {
		t.Fatalf("a variable without a typical value: %s", line)
	}
	var fields map[string]string
	if err := json.Unmarshal([]byte(line), &fields); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	t.Logf("%d B: %s", len(line), line)
	// The ApiThrottled metric filter reads these keys ({ ($.s = "429") && ($.is = "-") }, $.st).
	for _, k := range []string{"s", "is", "st"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("the access log has no key %q, which the ApiThrottled metric filter reads: %s", k, line)
		}
	}
	if len(line) > 200 {
		t.Errorf("a poll's access log line is %d B, want at most 200", len(line))
	}
}
