package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/routes"
)

// AccessLogFormat is the HTTP API's access log line: JSON with what an operator needs of a
// request, under short keys (every poll writes one, so every byte is paid ten million times
// for a million visitors): id the request id, t its time (epoch ms), ip the caller's address
// (for traffic through CloudFront an edge server), m the method, p the path, s the status,
// ms the latency, is the integration's status ("-" when no function was called), ie the
// integration's error, u the signer of an IAM-signed call (the audit trail of the admin
// routes; "-" otherwise) and st the stack, which the ApiThrottled metric filter takes as its
// dimension. No header and no body is logged, so no ticket or token is.
func AccessLogFormat(stackName string) string {
	fields := [][2]string{
		{"id", "$context.requestId"},
		{"t", "$context.requestTimeEpoch"},
		{"ip", "$context.identity.sourceIp"},
		{"m", "$context.httpMethod"},
		{"p", "$context.path"},
		{"s", "$context.status"},
		{"ms", "$context.responseLatency"},
		{"is", "$context.integrationStatus"},
		{"ie", "$context.integrationErrorMessage"},
		{"u", "$context.identity.userArn"},
		{"st", stackName},
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprintf("%q:%q", f[0], f[1])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// AccessLogOfAPoll is the access log line AccessLogFormat writes for a typical poll through
// CloudFront (API Gateway's request id, an edge address, a room's poll path; no error, no
// signer): its size is what the cost model (cmd/vestibule-bench) prices per call.
func AccessLogOfAPoll(stackName string) string {
	return strings.NewReplacer(
		"$context.requestId", "JWQ5XiWBIAMEMQw=",
		"$context.requestTimeEpoch", "1795680204123",
		"$context.identity.sourceIp", "130.176.137.72",
		"$context.httpMethod", "GET",
		"$context.path", "/api/rooms/spring-sale-2026/poll",
		"$context.status", "200",
		"$context.responseLatency", "12",
		"$context.integrationStatus", "200",
		"$context.integrationErrorMessage", "-",
		"$context.identity.userArn", "-",
	).Replace(AccessLogFormat(stackName))
}

// API is the HTTP API: its routes (routes.All) to the functions, its stage and access log, and
// the domain CloudFront reaches it on.
type API struct {
	HttpApi awsapigatewayv2.HttpApi
	Stage   awsapigatewayv2.HttpStage
	// AccessLogs receives the access log (JSON, one line per request, AccessLogFormat).
	AccessLogs awslogs.LogGroup
	// OriginDomain is the host CloudFront reaches the API on: Settings.APIDomain or execute-api's.
	OriginDomain *string
}

// apiProps are what the API is built from.
type apiProps struct {
	Settings  Settings
	Functions map[string]awslambda.Function
	Retention awslogs.RetentionDays
}

// newAPI creates the HTTP API with its stage, access log and routes, its own domain when the
// settings give one (domains.go), and the outputs of its URL.
func newAPI(st awscdk.Stack, p *apiProps) *API {
	set := p.Settings
	a := &API{}
	a.HttpApi = awsapigatewayv2.NewHttpApi(st, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description: jsii.String("Vestibule waiting room API"),
		// The default stage is created below, with throttling, which the default stage cannot take.
		CreateDefaultStage: jsii.Bool(false),
		// With a domain of its own the API answers there only (domains.go): a request that skips
		// CloudFront cannot use the execute-api name, and with origin mTLS cannot use the domain.
		DisableExecuteApiEndpoint: jsii.Bool(set.APIDomain != ""),
	})
	a.Stage = awsapigatewayv2.NewHttpStage(st, jsii.String("ApiStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    a.HttpApi,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(set.APIRateLimit),
			BurstLimit: jsii.Number(set.APIBurstLimit),
		},
	})
	// The access log: one JSON line per request, the audit trail of admin calls (who signed,
	// what route, what answer). "stack" lets a metric filter count API Gateway's own throttling.
	a.AccessLogs = awslogs.NewLogGroup(st, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     p.Retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	a.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: a.AccessLogs.LogGroupArn(),
		Format:         jsii.String(AccessLogFormat(*st.StackName())),
	})
	a.addRoutes(p.Functions)
	a.OriginDomain = apiDomain(st, a.HttpApi, a.Stage, set)
	a.outputs(st, set)
	return a
}

// addRoutes adds routes.All, each to its function's integration; the admin routes need an
// IAM-signed call.
func (a *API) addRoutes(functions map[string]awslambda.Function) {
	integrations := map[string]awsapigatewayv2.HttpRouteIntegration{}
	iam := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	for _, r := range routes.All {
		in, ok := integrations[r.Function]
		if !ok {
			in = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(title(r.Function)+"Integration"), functions[r.Function],
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
					PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
				})
			integrations[r.Function] = in
		}
		opts := &awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(r.Method)},
			Integration: in,
		}
		if r.Admin {
			opts.Authorizer = iam
		}
		a.HttpApi.AddRoutes(opts)
	}
}

// outputs are the API's URL, for the signed admin calls, and an example of one.
func (a *API) outputs(st awscdk.Stack, set Settings) {
	apiURL := a.Stage.Url()
	if set.APIDomain != "" {
		apiURL = jsii.String("https://" + set.APIDomain + "/")
	}
	awscdk.NewCfnOutput(st, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The HTTP API itself; admin calls are signed for this host"),
		Value:       apiURL,
	})
	awscdk.NewCfnOutput(st, jsii.String("AdminExample"), &awscdk.CfnOutputProps{
		Description: jsii.String("Create or change a room with IAM-signed admin calls (pip install awscurl)"),
		Value: jsii.String("awscurl --service execute-api --region " + *st.Region() +
			" -X PUT -H 'Content-Type: application/json' -d '{\"maxActive\":100,\"admitPerMinute\":600,\"mode\":\"queue\",\"originUrl\":\"https://booking.example.com/\"}' " +
			*apiURL + "api/admin/rooms/demo"),
	})
}
