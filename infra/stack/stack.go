// Package stack defines the Vestibule CloudFormation stack: the VPC, the Valkey cache, the Lambda
// functions built by `make build`, the HTTP API, the admission schedule, the page bucket behind
// CloudFront, the signing secrets, and the alarms that say when a waiting room is not working.
//
// The stack is environment-agnostic (no account lookups) so `cdk synth` works offline; only the
// optional WAF pins the region, because CloudFront web ACLs exist only in us-east-1.
package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// Function describes one Lambda function of dist/.
type Function struct {
	Name    string
	Timeout float64 // seconds
	Memory  float64 // MB
	// Reserved is the reserved concurrency, 0 for none (the account's unreserved pool).
	Reserved float64
}

// Functions are the binaries `make build` leaves in dist/<name>/bootstrap. The HTTP handlers get 10 s:
// they answer in milliseconds, and bound their own Redis calls so an outage is a quick 503, not a
// timeout. admit ticks every second until 3 s before its deadline; with a 60 s timeout it ends
// before the next minute's invocation, so two runs overlap only when EventBridge delivers an event
// twice or late. No function reserves concurrency by default (Settings.AdmitReservedConcurrency):
// a reservation must leave the account's unreserved pool at 10 or more, which a new account with
// a total of 10 cannot, and the first deploy would roll back. admit needs none: every tick is one
// atomic script whose token bucket refills by elapsed time, so overlapping or duplicate ticks
// admit nothing extra (docs/ARCHITECTURE.md, "Admission timing and polling").
var Functions = []Function{
	{Name: routes.Enqueue, Timeout: 10, Memory: 256},
	{Name: routes.Poll, Timeout: 10, Memory: 256},
	{Name: routes.Status, Timeout: 10, Memory: 256},
	{Name: routes.Consume, Timeout: 10, Memory: 256},
	{Name: routes.Admin, Timeout: 10, Memory: 256},
	{Name: routes.Booking, Timeout: 10, Memory: 256},
	{Name: Admit, Timeout: 60, Memory: 256},
}

// Admit is the admission function: EventBridge invokes it, no route does.
const Admit = "admit"

// NotPublic are the files of static/ the page bucket never gets (glob patterns): the
// operator's console and its chart library, Go source, and the modules under js/, which
// `make page` bundles into waiting.js and challenge-worker.js (the page loads those).
var NotPublic = []string{"*.go", "console.html", "console.css", "js/**", "vendor/uplot/**"}

// CachedAPIPaths are the CloudFront path patterns served from the edge cache for a second or two:
// public, identical for every visitor of a room, and the paths carry the room, so the path (always
// part of a CloudFront cache key) keys them per room.
var CachedAPIPaths = []string{"/api/rooms/*/status", "/api/jwks.json"}

// ContentSecurityPolicy allows the page to load and call only its own origin, to show images
// over https (a room's page.logoUrl), and to post forms to any https site: a gated room's
// waiting page posts the entry token to the protected site's /.vestibule/enter (docs/GATE.md),
// whose address is a room setting, not known here.
const ContentSecurityPolicy = "default-src 'self'; base-uri 'none'; object-src 'none'; img-src 'self' https:; " +
	"frame-ancestors 'none'; form-action 'self' https:; upgrade-insecure-requests"

// RoomPathsFunction is the CloudFront Function (viewer request, default behaviour) that serves
// index.html for the room paths of the page; room ids are those room.ValidRoomID accepts.
const RoomPathsFunction = `function handler(event) {
  var request = event.request;
  if (/^\/(r|rooms)\/[A-Za-z0-9_-]{1,64}\/?$/.test(request.uri)) {
    request.uri = '/index.html';
  }
  return request;
}`

// ViewerAddressHeader is the CloudFront header with the viewer's address and port that the
// /api/* behaviour forwards to the API (api.ViewerAddressHeader reads it).
const ViewerAddressHeader = "CloudFront-Viewer-Address"

// AccountWideName is the name of a resource whose name must be unique in the account (or,
// for CloudFront, across all regions of it): the stack name, the region and what it is.
// Two stages, or one stage in two regions, never share one.
func AccountWideName(st awscdk.Stack, what string) *string {
	return jsii.String(*st.StackName() + "-" + *st.Region() + "-" + what)
}

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

// quietPlatformLogs sets Lambda's advanced logging controls on the props of a function that
// every call or event invokes (the API's and admit's, the events' forwarder), and returns them.
// SystemLogLevel WARN keeps Lambda's own START, END and REPORT lines (platform.start and
// platform.report are INFO) out of the log group: about 300 B a call, which Lambda's metrics
// (Invocations, Duration, Errors, Throttles) already count without them. What goes with them
// is each call's billed duration and memory used, and a cold start's init duration; set
// SystemLogLevel to INFO on a function to see them again (docs/DEPLOY.md, "Logs").
// Log-level filtering needs the JSON log format. With it Lambda also filters the function's own
// lines by their "level" field (a line without one is INFO): ApplicationLogLevel TRACE, the most
// detailed, lets every line through, so LOG_LEVEL stays the one setting of what the functions
// log and the event lines (no level) always reach the subscription filters.
func quietPlatformLogs(p *awslambda.FunctionProps) *awslambda.FunctionProps {
	p.LoggingFormat = awslambda.LoggingFormat_JSON
	p.SystemLogLevelV2 = awslambda.SystemLogLevel_WARN
	p.ApplicationLogLevelV2 = awslambda.ApplicationLogLevel_TRACE
	return p
}

// APIThrottled is the custom metric (namespace metrics.Namespace, dimension Stack) that a
// metric filter on the access log counts: requests API Gateway answered 429 itself, without
// calling a function, because the stage's rate or burst limit was reached. The HTTP API's own
// metrics only count them among all 4xx.
const APIThrottled = "ApiThrottled"

// Props configure a Vestibule stack.
type Props struct {
	awscdk.StackProps
	Settings Settings
}

// Vestibule is the synthesized stack and the constructs tests and outputs refer to.
type Vestibule struct {
	awscdk.Stack
	Functions    map[string]awslambda.Function
	API          awsapigatewayv2.HttpApi
	Distribution awscloudfront.Distribution
	Bucket       awss3.Bucket
	// SettingsBucket keeps each room's settings and admission head (SETTINGS_BUCKET).
	SettingsBucket awss3.Bucket
	// Cache names the serverless cache (its CloudWatch clusterId); "" with cache=nodes.
	ServerlessCacheName string
	// AccessLogs receives the HTTP API's access log (JSON, one line per request).
	AccessLogs awslogs.LogGroup
	Gate       *Gate // the protected site's distribution, when Settings.ProtectOrigin is set
	// WaitingRoomURL is the waiting room's https URL: its domain, or the distribution's name.
	WaitingRoomURL string
	// LogsBucket receives the distributions' standard logs.
	LogsBucket awss3.Bucket
	// APIOriginDomain is the host CloudFront reaches the API on: Settings.APIDomain or execute-api's.
	APIOriginDomain *string
	// Keys is the keys object the API functions read their keys from, and its sync.
	Keys   *Keys
	Events *Events // the events' bus, forwarder and log subscriptions (events.go)
}

// New defines the whole waiting room in one stack.
func New(scope constructs.Construct, id string, props *Props) *Vestibule {
	st := awscdk.NewStack(scope, &id, &props.StackProps)
	set := props.Settings
	v := &Vestibule{Stack: st, Functions: map[string]awslambda.Function{}}

	// Network: isolated subnets only. The functions talk to Valkey and, through the free S3 gateway
	// endpoint, to the settings bucket and the keys object, so there is no NAT gateway and no
	// interface endpoint to pay for by the hour (docs/DEPLOY.md, "No NAT gateway").
	vpc := awsec2.NewVpc(st, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name:       jsii.String("isolated"),
			SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED,
			CidrMask:   jsii.Number(24),
		}},
	})
	isolated := &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
	fnSG := awsec2.NewSecurityGroup(st, jsii.String("FunctionsSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Vestibule functions: out to the cache and the Secrets Manager endpoint only"),
		AllowAllOutbound: jsii.Bool(false),
	})

	redisURL, redisCluster := newCache(st, vpc, isolated, fnSG, set)
	settingsBucket, gateway := newSettingsBucket(st, vpc, isolated, fnSG)
	v.SettingsBucket = settingsBucket
	if set.Cache != CacheNodes {
		v.ServerlessCacheName = cacheName(*st.StackName())
	}

	// Secrets: generated by Secrets Manager at deploy time, so no key is ever in the template.
	// They are the source of truth and what an operator rotates; the functions read a copy in the
	// keys object (newKeys), which the keysync function writes.
	// The entry-token ES256 key is derived by the functions from this random seed, because
	// CloudFormation cannot generate an EC key pair (see docs/DEPLOY.md, "Secrets and rotation").
	secretString := &awssecretsmanager.SecretStringGenerator{
		ExcludePunctuation: jsii.Bool(true),
		PasswordLength:     jsii.Number(64),
	}
	ticketSecret := awssecretsmanager.NewSecret(st, jsii.String("TicketSecret"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("Vestibule: HS256 key of visitor tickets"),
		GenerateSecretString: secretString,
	})
	entrySecret := awssecretsmanager.NewSecret(st, jsii.String("EntryKeySecret"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("Vestibule: seed of the ES256 entry-token signing key"),
		GenerateSecretString: secretString,
	})
	// CloudFront sends this value in config.OriginHeader; the public routes refuse requests
	// without it, so nobody skips the WAF and the cache by calling the API's own URL.
	originSecret := awssecretsmanager.NewSecret(st, jsii.String("OriginSecret"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("Vestibule: the header CloudFront sends to the API to prove a request came through it"),
		GenerateSecretString: secretString,
	})
	for id, sec := range map[string]awssecretsmanager.Secret{
		"TicketSecretArn": ticketSecret, "EntryKeySecretArn": entrySecret, "OriginSecretArn": originSecret,
	} {
		awscdk.NewCfnOutput(st, jsii.String(id), &awscdk.CfnOutputProps{
			Description: jsii.String("For the rotation steps of docs/DEPLOY.md"),
			Value:       sec.SecretArn(),
		})
	}

	retention, err := RetentionFor(set.LogRetentionDays)
	if err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	keys := newKeys(st, set, retention, map[string]awssecretsmanager.Secret{
		config.EnvTicketSecretARN: ticketSecret, config.EnvEntryKeySecretARN: entrySecret, config.EnvOriginSecretARN: originSecret,
	})
	keys.allowThroughGateway(gateway)
	v.Keys = keys

	// Settings given as props rather than read by FromContext are checked here; an annotation error
	// stops the synthesis with the message.
	if err := ValidateRoomDefaults(set.RoomDefaults); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
	}
	if err := ValidateDomains(set); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
	}
	if m := certificateARN.FindStringSubmatch(set.APICertificateArn); m != nil && !*awscdk.Token_IsUnresolved(st.Region()) && m[1] != *st.Region() {
		awscdk.Annotations_Of(st).AddError(jsii.String(fmt.Sprintf("%s: %s=%q: API Gateway takes a regional domain's certificate from the stack's region, %s",
			ErrBadSetting, CtxAPICertificateArn, set.APICertificateArn, *st.Region())))
	}
	roomDefaults, _ := json.Marshal(set.RoomDefaults) // validated settings: cannot fail
	// Every variable the functions read is declared, empty where unused: `sam local` only
	// overrides the variables a template declares (docs/DEPLOY.md, "SAM CLI").
	env := map[string]*string{}
	for _, name := range config.Names() {
		env[name] = jsii.String("")
	}
	for name, value := range map[string]*string{
		config.EnvRedisURL:          redisURL,
		config.EnvRedisCluster:      jsii.String(redisCluster),
		config.EnvKeysObject:        keys.Object, // the secret ARNs stay empty: no Secrets Manager call
		config.EnvIssuer:            jsii.String(set.Issuer),
		config.EnvAdminAuth:         jsii.String(string(config.AdminIAM)),
		config.EnvDefaultRoomConfig: jsii.String(string(roomDefaults)),
		config.EnvLogLevel:          jsii.String(set.LogLevel),
		config.EnvLogSample:         jsii.String(strconv.FormatFloat(set.LogSample, 'g', -1, 64)),
		config.EnvStack:             st.StackName(),
		config.EnvSettingsBucket:    settingsBucket.BucketName(),
	} {
		env[name] = value
	}
	checkEnvironment(st, env)

	var readers []awsiam.IRole
	for _, f := range Functions {
		name := f.Name
		logs := awslogs.NewLogGroup(st, jsii.String(title(name)+"Logs"), &awslogs.LogGroupProps{
			Retention:     retention,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		var reserved, retries *float64
		var maxEventAge awscdk.Duration
		if f.Reserved > 0 {
			reserved = jsii.Number(f.Reserved)
		}
		if name == Admit && set.AdmitReservedConcurrency > 0 {
			reserved = jsii.Number(float64(set.AdmitReservedConcurrency))
		}
		if name == Admit {
			// An invocation that waited (throttled behind the previous minute) for a minute is
			// superseded by the next one; a failed minute is not retried, the next one is the retry.
			maxEventAge, retries = awscdk.Duration_Seconds(jsii.Number(60)), jsii.Number(0)
		}
		fn := awslambda.NewFunction(st, jsii.String(title(name)+"Function"), quietPlatformLogs(&awslambda.FunctionProps{
			ReservedConcurrentExecutions: reserved,
			MaxEventAge:                  maxEventAge,
			RetryAttempts:                retries,
			Description:                  jsii.String("Vestibule " + name),
			Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:                 awslambda.Architecture_ARM_64(),
			Handler:                      jsii.String("bootstrap"),
			Code:                         awslambda.Code_FromAsset(jsii.String(filepath.Join(set.AssetDir, name)), nil),
			MemorySize:                   jsii.Number(f.Memory),
			Timeout:                      awscdk.Duration_Seconds(jsii.Number(f.Timeout)),
			Environment:                  &env,
			Vpc:                          vpc,
			VpcSubnets:                   isolated,
			SecurityGroups: &[]awsec2.ISecurityGroup{
				fnSG,
			},
			LogGroup: logs,
		}))
		// admit only ticks: it never reads a key (it links no token code), so it gets none.
		// The others read the keys object, and start only once the deploy has written it.
		if name != Admit {
			keys.grantKeys(fn)
			readers = append(readers, fn.Role())
			fn.Node().AddDependency(keys.Resource)
		}
		// Any function may find a room missing from Redis and restore it from the bucket; only
		// admin writes settings and only admit heads (settingsWrites).
		grantSettings(fn, settingsBucket, settingsWrites(name)...)
		if name == routes.Admin {
			grantSettingsDelete(fn, settingsBucket) // and only admin deletes a room
		}
		v.Functions[name] = fn
	}
	keys.lockDown(readers)

	// Admission: EventBridge fires once a minute; the function ticks every second inside it.
	// One at a time is enough, and two at once harmless (the token bucket makes an overlap admit
	// nothing extra), so no concurrency is reserved unless asked.
	admit := v.Functions[Admit]
	awsevents.NewRule(st, jsii.String("AdmitSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Vestibule: run the admission ticks every minute"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(admit, &awseventstargets.LambdaFunctionProps{
			// A retried minute would only overlap the next one; the next minute is the retry.
			RetryAttempts: jsii.Number(0),
		})},
	})

	v.API, v.Distribution = newFront(st, v, set, originSecret)
	v.Gate = newGate(st, v, set, entrySecret, originSecret)
	// CloudFront sends the origin value only once the keys object accepts it (a deploy that pins
	// a new origin-secret version syncs first).
	v.Distribution.Node().AddDependency(keys.Resource)
	if v.Gate != nil {
		v.Gate.Distribution.Node().AddDependency(keys.Resource)
	}
	v.Events = newEvents(st, v, set, retention)
	newAlarms(st, v, set)
	helperLogs(st, v, retention)
	customResourceTimeouts(st)
	suppressNag(st, v, set)
	return v
}

// Custom resources' timeouts. CloudFormation waits an hour for a custom resource's provider to
// answer unless the resource says otherwise (ServiceTimeout): a provider that crashed before
// answering would hold a deploy, or its rollback, that long. Ours answer within their
// function's 30 s; the CDK's own providers (the page upload, the default security group's
// rules) run with a 15-minute function timeout for work of seconds, so they get 5 minutes.
const (
	ownServiceTimeout    = 120 // s: KeySync and GateKeys, whose functions time out after 30 s
	helperFunctionTimout = 300 // s: the CDK's provider functions
	helperServiceTimeout = 360 // s: their custom resources, past the function's timeout
)

// customResourceTimeouts gives every custom resource of the stack a ServiceTimeout, and the
// CDK's provider functions a timeout below it.
func customResourceTimeouts(st awscdk.Stack) {
	for _, c := range *st.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if !*awscdk.CfnResource_IsCfnResource(c) {
			continue
		}
		r, ok := c.(awscdk.CfnResource)
		if !ok {
			continue
		}
		typ := *r.CfnResourceType()
		switch {
		case typ == "Custom::VestibuleKeySync" || typ == "Custom::VestibuleGateKeys":
			r.AddPropertyOverride(jsii.String("ServiceTimeout"), jsii.Number(ownServiceTimeout))
		case strings.HasPrefix(typ, "Custom::") || typ == "AWS::CloudFormation::CustomResource":
			r.AddPropertyOverride(jsii.String("ServiceTimeout"), jsii.Number(helperServiceTimeout))
		case typ == "AWS::Lambda::Function":
			id := *st.GetLogicalId(r)
			if strings.HasPrefix(id, "CustomCDKBucketDeployment") || strings.HasPrefix(id, "CustomVpcRestrictDefaultSG") {
				r.AddPropertyOverride(jsii.String("Timeout"), jsii.Number(helperFunctionTimout))
			}
		}
	}
}

// helperLogs gives every Lambda function the CDK adds on its own (custom-resource providers
// such as the one that empties the VPC's default security group) a log group with the
// stack's retention, instead of a /aws/lambda/... group kept forever.
func helperLogs(st awscdk.Stack, v *Vestibule, retention awslogs.RetentionDays) {
	var logs awslogs.LogGroup
	for _, c := range *st.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if !*awscdk.CfnResource_IsCfnResource(c) {
			continue
		}
		r, ok := c.(awscdk.CfnResource)
		if !ok || *r.CfnResourceType() != "AWS::Lambda::Function" {
			continue
		}
		if _, l1 := c.(awslambda.CfnFunction); l1 {
			continue // an awslambda.Function: ours and BucketDeployment's get their log group as a prop
		}
		if logs == nil {
			logs = awslogs.NewLogGroup(st, jsii.String("HelperLogs"), &awslogs.LogGroupProps{
				Retention:     retention,
				RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
			})
		}
		r.AddPropertyOverride(jsii.String("LoggingConfig.LogGroup"), logs.LogGroupName())
	}
}

// originHeaderValue is the value CloudFront sends to the API in config.OriginHeader: a
// CloudFormation dynamic reference to the origin secret, resolved by CloudFormation when it
// updates a distribution, so the value is never in the template (it is visible, as any origin
// header, to whoever may read the distribution's configuration). A pinned version makes a
// rotation a template change (docs/DEPLOY.md). Every distribution that reaches the API sends it.
func originHeaderValue(set Settings, originSecret awssecretsmanager.Secret) *string {
	var version *awscdk.SecretsManagerSecretOptions
	if set.OriginSecretVersion != "" {
		version = &awscdk.SecretsManagerSecretOptions{VersionId: jsii.String(set.OriginSecretVersion)}
	}
	return awscdk.SecretValue_SecretsManager(originSecret.SecretArn(), version).UnsafeUnwrap()
}

// newCache creates the Valkey cache in the isolated subnets behind a security group that only the
// functions' security group can reach, and returns the REDIS_URL and REDIS_CLUSTER values.
func newCache(st awscdk.Stack, vpc awsec2.Vpc, isolated *awsec2.SubnetSelection, fnSG awsec2.SecurityGroup, set Settings) (*string, string) {
	cacheSG := awsec2.NewSecurityGroup(st, jsii.String("CacheSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Vestibule cache: reachable from the functions only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	subnetIDs := vpc.SelectSubnets(isolated).SubnetIds
	ids := make([]any, 0, len(*subnetIDs))
	for _, id := range *subnetIDs {
		ids = append(ids, id)
	}
	name := cacheName(*st.StackName())

	if set.Cache == CacheNodes {
		cacheSG.Connections().AllowFrom(fnSG, awsec2.Port_Tcp(jsii.Number(6379)), jsii.String("functions to Valkey"))
		subnets := awselasticache.NewCfnSubnetGroup(st, jsii.String("CacheSubnets"), &awselasticache.CfnSubnetGroupProps{
			Description: jsii.String("Vestibule cache subnets"),
			SubnetIds:   &ids,
		})
		rg := awselasticache.NewCfnReplicationGroup(st, jsii.String("Cache"), &awselasticache.CfnReplicationGroupProps{
			ReplicationGroupDescription: jsii.String("Vestibule waiting rooms"),
			Engine:                      jsii.String("valkey"),
			EngineVersion:               jsii.String("8.0"),
			CacheNodeType:               jsii.String(set.CacheNodeType),
			CacheParameterGroupName:     jsii.String("default.valkey8.cluster.on"),
			ClusterMode:                 jsii.String("enabled"),
			NumNodeGroups:               jsii.Number(float64(set.CacheShards)),
			ReplicasPerNodeGroup:        jsii.Number(1),
			AutomaticFailoverEnabled:    jsii.Bool(true),
			MultiAzEnabled:              jsii.Bool(true),
			TransitEncryptionEnabled:    jsii.Bool(true),
			TransitEncryptionMode:       jsii.String("required"),
			AtRestEncryptionEnabled:     jsii.Bool(true),
			CacheSubnetGroupName:        subnets.Ref(),
			SecurityGroupIds:            &[]*string{cacheSG.SecurityGroupId()},
			Port:                        jsii.Number(6379),
		})
		url := "rediss://" + *rg.AttrConfigurationEndPointAddress() + ":" + *rg.AttrConfigurationEndPointPort()
		return &url, "true"
	}

	// Serverless listens on 6379 (primary) and 6380 (reads from replicas).
	cacheSG.Connections().AllowFrom(fnSG, awsec2.Port_TcpRange(jsii.Number(6379), jsii.Number(6380)), jsii.String("functions to Valkey"))
	// The name is fixed (CloudFormation requires ServerlessCacheName): a change of a property
	// that replaces the cache (its subnets, a KMS key) must come with a new name, or the new cache
	// cannot be created while the old one holds it (docs/DEPLOY.md, "The node-based cache").
	cache := awselasticache.NewCfnServerlessCache(st, jsii.String("Cache"), &awselasticache.CfnServerlessCacheProps{
		Engine:              jsii.String("valkey"),
		MajorEngineVersion:  jsii.String("8"),
		ServerlessCacheName: jsii.String(name),
		Description:         jsii.String("Vestibule waiting rooms"),
		SecurityGroupIds:    &[]any{cacheSG.SecurityGroupId()},
		SubnetIds:           &ids,
	})
	url := "rediss://" + *cache.AttrEndpointAddress() + ":" + *cache.AttrEndpointPort()
	return &url, "true"
}

// cacheName makes a serverless cache name (lowercase letters, digits, hyphens, at most 40) from the
// stack name, so two stacks in one account do not collide.
func cacheName(stackName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(stackName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	n := strings.Trim(b.String(), "-")
	if len(n) > 34 {
		n = n[:34]
	}
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "v" + n
	}
	return n + "-cache"
}

// newFront creates the HTTP API with its routes and the CloudFront distribution in front of it and of
// the page bucket.
func newFront(st awscdk.Stack, v *Vestibule, set Settings, originSecret awssecretsmanager.Secret) (awsapigatewayv2.HttpApi, awscloudfront.Distribution) {
	api := awsapigatewayv2.NewHttpApi(st, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description: jsii.String("Vestibule waiting room API"),
		// The default stage is created below, with throttling, which the default stage cannot take.
		CreateDefaultStage: jsii.Bool(false),
		// With a domain of its own the API answers there only (domains.go): a request that skips
		// CloudFront cannot use the execute-api name, and with origin mTLS cannot use the domain.
		DisableExecuteApiEndpoint: jsii.Bool(set.APIDomain != ""),
	})
	stage := awsapigatewayv2.NewHttpStage(st, jsii.String("ApiStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    api,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(set.APIRateLimit),
			BurstLimit: jsii.Number(set.APIBurstLimit),
		},
	})
	// The access log: one JSON line per request, the audit trail of admin calls (who signed,
	// what route, what answer). "stack" lets a metric filter count API Gateway's own throttling.
	retention, _ := RetentionFor(set.LogRetentionDays) // checked in New
	v.AccessLogs = awslogs.NewLogGroup(st, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: v.AccessLogs.LogGroupArn(),
		Format:         jsii.String(AccessLogFormat(*st.StackName())),
	})
	integrations := map[string]awsapigatewayv2.HttpRouteIntegration{}
	iam := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	for _, r := range routes.All {
		in, ok := integrations[r.Function]
		if !ok {
			in = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(title(r.Function)+"Integration"), v.Functions[r.Function],
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
		api.AddRoutes(opts)
	}

	// The page bucket: private, TLS only, readable by this distribution only (origin access control).
	bucket := awss3.NewBucket(st, jsii.String("PageBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		// The deployment below empties the bucket on stack deletion, so the bucket can go too.
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	v.Bucket = bucket

	headers := awscloudfront.NewResponseHeadersPolicy(st, jsii.String("SecurityHeaders"), &awscloudfront.ResponseHeadersPolicyProps{
		ResponseHeadersPolicyName: AccountWideName(st, "security-headers"),
		Comment:                   jsii.String("Vestibule security headers"),
		SecurityHeadersBehavior: &awscloudfront.ResponseSecurityHeadersBehavior{
			StrictTransportSecurity: &awscloudfront.ResponseHeadersStrictTransportSecurity{
				AccessControlMaxAge: awscdk.Duration_Days(jsii.Number(365)),
				IncludeSubdomains:   jsii.Bool(true),
				Override:            jsii.Bool(true),
			},
			ContentTypeOptions: &awscloudfront.ResponseHeadersContentTypeOptions{Override: jsii.Bool(true)},
			FrameOptions: &awscloudfront.ResponseHeadersFrameOptions{
				FrameOption: awscloudfront.HeadersFrameOption_DENY, Override: jsii.Bool(true),
			},
			// Entry tokens travel in URLs to the origin; no-referrer keeps them out of every Referer.
			ReferrerPolicy: &awscloudfront.ResponseHeadersReferrerPolicy{
				ReferrerPolicy: awscloudfront.HeadersReferrerPolicy_NO_REFERRER, Override: jsii.Bool(true),
			},
			ContentSecurityPolicy: &awscloudfront.ResponseHeadersContentSecurityPolicy{
				ContentSecurityPolicy: jsii.String(ContentSecurityPolicy), Override: jsii.Bool(true),
			},
		},
	})

	var webACL *string
	if set.WAF {
		webACL = newWebACL(st, set)
	}

	// Room status and the JWKS are the same for every visitor: a second or two at the edge turns a
	// million pollers of the status into a request per second per edge location.
	shortCache := awscloudfront.NewCachePolicy(st, jsii.String("ShortCache"), &awscloudfront.CachePolicyProps{
		CachePolicyName:            AccountWideName(st, "short-cache"),
		Comment:                    jsii.String("Vestibule: public API answers, 1-2 s, keyed on the path"),
		MinTtl:                     awscdk.Duration_Seconds(jsii.Number(0)),
		DefaultTtl:                 awscdk.Duration_Seconds(jsii.Number(1)),
		MaxTtl:                     awscdk.Duration_Seconds(jsii.Number(2)),
		CookieBehavior:             awscloudfront.CacheCookieBehavior_None(),
		HeaderBehavior:             awscloudfront.CacheHeaderBehavior_None(),
		QueryStringBehavior:        awscloudfront.CacheQueryStringBehavior_None(),
		EnableAcceptEncodingGzip:   jsii.Bool(true),
		EnableAcceptEncodingBrotli: jsii.Bool(true),
	})

	// The page reads the room from ?room=, /r/<room> or /rooms/<room> (docs/PAGE.md); the path forms
	// are the same index.html, which S3 alone cannot know.
	roomPaths := awscloudfront.NewFunction(st, jsii.String("RoomPaths"), &awscloudfront.FunctionProps{
		FunctionName: AccountWideName(st, "room-paths"),
		Comment:      jsii.String("Vestibule: /r/<room> and /rooms/<room> serve the waiting page"),
		Runtime:      awscloudfront.FunctionRuntime_JS_2_0(),
		Code:         awscloudfront.FunctionCode_FromInline(jsii.String(RoomPathsFunction)),
	})

	priceClass, err := PriceClassFor(set.PriceClass)
	if err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
		priceClass = awscloudfront.PriceClass_PRICE_CLASS_100
	}
	oac := awscloudfront.NewS3OriginAccessControl(st, jsii.String("PageAccess"), &awscloudfront.S3OriginAccessControlProps{
		OriginAccessControlName: AccountWideName(st, "page"),
		Description:             jsii.String("Vestibule: CloudFront reads the page bucket"),
	})
	v.LogsBucket = newLogsBucket(st, set)
	distProps := &awscloudfront.DistributionProps{
		Comment:           jsii.String("Vestibule waiting room " + *st.StackName()),
		PriceClass:        priceClass,
		DefaultRootObject: jsii.String("index.html"),
		HttpVersion:       awscloudfront.HttpVersion_HTTP2_AND_3,
		WebAclId:          webACL,
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin: awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(bucket, &awscloudfrontorigins.S3BucketOriginWithOACProps{
				OriginAccessControl: oac,
			}),
			ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			CachePolicy:           awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
			ResponseHeadersPolicy: headers,
			Compress:              jsii.Bool(true),
			FunctionAssociations: &[]*awscloudfront.FunctionAssociation{{
				Function: roomPaths, EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST,
			}},
		},
		// CloudFront caches 5xx answers for 10 s unless told otherwise; a 503 with Retry-After from
		// a Redis hiccup should stop being served after a second.
		ErrorResponses: &[]*awscloudfront.ErrorResponse{
			{HttpStatus: jsii.Number(500), Ttl: awscdk.Duration_Seconds(jsii.Number(1))},
			{HttpStatus: jsii.Number(502), Ttl: awscdk.Duration_Seconds(jsii.Number(1))},
			{HttpStatus: jsii.Number(503), Ttl: awscdk.Duration_Seconds(jsii.Number(1))},
			{HttpStatus: jsii.Number(504), Ttl: awscdk.Duration_Seconds(jsii.Number(1))},
		},
	}
	viewerDomain(st, "Certificate", set.Domain, set.CertificateArn, distProps)
	logTo(distProps, v.LogsBucket, "waiting-room")
	dist := awscloudfront.NewDistribution(st, jsii.String("Distribution"), distProps)
	v.WaitingRoomURL = distributionURL(set.Domain, dist)
	v.APIOriginDomain = apiDomain(st, api, stage, set)
	originHeader := originHeaderValue(set, originSecret)
	apiOrigin := awscloudfrontorigins.NewHttpOrigin(v.APIOriginDomain, &awscloudfrontorigins.HttpOriginProps{
		ProtocolPolicy:     awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
		OriginSslProtocols: &[]awscloudfront.OriginSslPolicy{awscloudfront.OriginSslPolicy_TLS_V1_2},
		CustomHeaders:      &map[string]*string{config.OriginHeader: originHeader},
	})
	// The rest of the API is per visitor and never cached. The ticket (Authorization) must be
	// in a cache policy to reach the origin, so this policy keys on it but caches nothing
	// (default TTL 0, and every per-visitor answer says no-store). The origin request policy
	// adds the viewer's address, which the enqueue limit keys on, Content-Type, a join
	// challenge's proof and a confirm's idempotency key; it does
	// not forward Host, which must stay the API's own.
	apiCache := awscloudfront.NewCachePolicy(st, jsii.String("ApiPerVisitor"), &awscloudfront.CachePolicyProps{
		CachePolicyName:     AccountWideName(st, "api-per-visitor"),
		Comment:             jsii.String("Vestibule: per-visitor API answers, not cached; forwards Authorization"),
		MinTtl:              awscdk.Duration_Seconds(jsii.Number(0)),
		DefaultTtl:          awscdk.Duration_Seconds(jsii.Number(0)),
		MaxTtl:              awscdk.Duration_Seconds(jsii.Number(1)),
		CookieBehavior:      awscloudfront.CacheCookieBehavior_None(),
		HeaderBehavior:      awscloudfront.CacheHeaderBehavior_AllowList(jsii.String("Authorization")),
		QueryStringBehavior: awscloudfront.CacheQueryStringBehavior_All(),
	})
	apiRequests := awscloudfront.NewOriginRequestPolicy(st, jsii.String("ApiRequests"), &awscloudfront.OriginRequestPolicyProps{
		OriginRequestPolicyName: AccountWideName(st, "api-requests"),
		Comment:                 jsii.String("Vestibule: the viewer's address and the body's type to the API"),
		HeaderBehavior: awscloudfront.OriginRequestHeaderBehavior_AllowList(jsii.String(ViewerAddressHeader), jsii.String("Content-Type"),
			jsii.String(challenge.HeaderChallenge), jsii.String(challenge.HeaderSolution), jsii.String(routes.IdempotencyHeader)),
		CookieBehavior:      awscloudfront.OriginRequestCookieBehavior_None(),
		QueryStringBehavior: awscloudfront.OriginRequestQueryStringBehavior_All(),
	})
	// Behaviours are matched in the order added: the cached paths first, then the rest of /api/*.
	for _, p := range CachedAPIPaths {
		dist.AddBehavior(jsii.String(p), apiOrigin, &awscloudfront.AddBehaviorOptions{
			ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:        awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
			CachePolicy:           shortCache,
			ResponseHeadersPolicy: headers,
			Compress:              jsii.Bool(true),
		})
	}
	// Everything else is per visitor (apiCache, apiRequests above).
	dist.AddBehavior(jsii.String("/api/*"), apiOrigin, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:        awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:           apiCache,
		OriginRequestPolicy:   apiRequests,
		ResponseHeadersPolicy: headers,
	})

	if info, err := os.Stat(set.StaticDir); err == nil && info.IsDir() {
		awss3deployment.NewBucketDeployment(st, jsii.String("Page"), &awss3deployment.BucketDeploymentProps{
			DestinationBucket: bucket,
			// The operator's console is served by `vestibule console` on the operator's own
			// machine (it signs the admin calls), never from the public bucket.
			Sources: &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(set.StaticDir), &awss3assets.AssetOptions{
				Exclude: jsii.Strings(NotPublic...),
			})},
			Prune:          jsii.Bool(true),
			RetainOnDelete: jsii.Bool(false),
			// A minute of caching instead of an invalidation after each deployment: the
			// invalidation grant of BucketDeployment is on every distribution ("Resource": "*"),
			// and a page that is new a minute later is soon enough.
			CacheControl: &[]awss3deployment.CacheControl{
				awss3deployment.CacheControl_FromString(jsii.String("public, max-age=60")),
			},
			// The upload's handler keeps its logs as long as the functions', not forever.
			LogGroup: awslogs.NewLogGroup(st, jsii.String("PageDeploymentLogs"), &awslogs.LogGroupProps{
				Retention:     retention,
				RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
			}),
		})
	} else {
		awscdk.Annotations_Of(st).AddWarningV2(jsii.String("vestibule:no-static"),
			jsii.String(fmt.Sprintf("%s does not exist: the stack deploys no waiting page", set.StaticDir)), nil)
	}

	originMTLS(dist, set)
	awscdk.NewCfnOutput(st, jsii.String("WaitingRoomUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The waiting room page (add ?room=<id>) and, under /api/, the public API"),
		Value:       jsii.String(v.WaitingRoomURL),
	})
	apiURL := stage.Url()
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
	return api, dist
}

// newWebACL creates the CloudFront-scoped web ACL. Such an ACL can only be created in us-east-1, so
// the stack refuses to synthesize with waf=true in any other (or an unknown) region rather than
// fail half-way through a deployment.
func newWebACL(st awscdk.Stack, set Settings) *string {
	region := st.Region()
	if *awscdk.Token_IsUnresolved(region) || *region != "us-east-1" {
		awscdk.Annotations_Of(st).AddError(jsii.String(
			"waf=true needs the stack in us-east-1 (CloudFront web ACLs exist only there): " +
				"deploy with AWS_REGION=us-east-1, or without waf"))
	}
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			MetricName:               jsii.String(name),
			SampledRequestsEnabled:   jsii.Bool(true),
		}
	}
	acl := awswafv2.NewCfnWebACL(st, jsii.String("WebAcl"), &awswafv2.CfnWebACLProps{
		Name:             AccountWideName(st, "web-acl"),
		Scope:            jsii.String("CLOUDFRONT"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		VisibilityConfig: visibility(*st.StackName()),
		Rules: &[]any{&awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String("RatePerIp"),
			Priority: jsii.Number(0),
			Action:   &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{}},
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
					Limit:            jsii.Number(float64(set.WAFRateLimit)),
					AggregateKeyType: jsii.String("IP"),
				},
			},
			VisibilityConfig: visibility(*st.StackName() + "-rate-per-ip"),
		}},
	})
	return acl.AttrArn()
}

// newAlarms creates the alarms that say a waiting room is not working, a topic they notify, and a
// dashboard.
func newAlarms(st awscdk.Stack, v *Vestibule, set Settings) {
	topic := awssns.NewTopic(st, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("Vestibule alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	// With enforceSSL the topic gets a policy of its own (a Deny of plain HTTP), and a topic
	// policy replaces SNS's default one, which is what let the account's services publish: without
	// this Allow, CloudWatch's notifications would be refused and no alarm would ever arrive.
	// aws:SourceAccount keeps it to the alarms of this account (the confused-deputy guard).
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Effect:     awsiam.Effect_ALLOW,
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{topic.TopicArn()},
		Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": st.Account()}},
	}))
	if set.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(set.AlarmEmail), nil))
	}
	awscdk.NewCfnOutput(st, jsii.String("AlarmsTopicArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("Subscribe to this SNS topic to hear about the alarms"),
		Value:       topic.TopicArn(),
	})
	action := awscloudwatchactions.NewSnsAction(topic)
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	alarm := func(id string, m awscloudwatch.IMetric, props awscloudwatch.AlarmProps) {
		props.Metric = m
		a := awscloudwatch.NewAlarm(st, jsii.String(id), &props)
		a.AddAlarmAction(action)
		a.AddOkAction(action)
	}

	var errorsW, throttlesW, durationW []awscloudwatch.IMetric
	for _, f := range Functions {
		fn := v.Functions[f.Name]
		errs := fn.MetricErrors(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")})
		thr := fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")})
		// A handler answers client faults and Redis outages with a response, so a Lambda error is a
		// crash or a timeout: one is worth a look. For admit it means ticks failed.
		alarm(title(f.Name)+"Errors", errs, awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(fmt.Sprintf("Vestibule %s: invocations failed", f.Name)),
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		// admit, with a reserved concurrency of 1 (admitReservedConcurrency), may see a throttle
		// when EventBridge fires early while the previous minute is finishing; a throttled minute is
		// made up by the next one, so for admit only a throttle minute after minute is a problem.
		periods := 1.0
		if f.Reserved > 0 || f.Name == Admit {
			periods = 3
		}
		alarm(title(f.Name)+"Throttles", thr, awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(fmt.Sprintf("Vestibule %s: invocations throttled (concurrency limit)", f.Name)),
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(periods),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		errorsW = append(errorsW, errs)
		throttlesW = append(throttlesW, thr)
		durationW = append(durationW, fn.MetricDuration(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("p99")}))
	}

	// No admission at all is the failure nobody sees: visitors just wait. The schedule fires every
	// minute, so three minutes without an invocation (or without data) means it stopped.
	admitInvocations := v.Functions[Admit].MetricInvocations(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")})
	alarm("AdmitNotRunning", admitInvocations, awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("Vestibule admit: not invoked for 3 minutes, nobody is being admitted"),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(3),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
	})

	// Events the forwarder could not put on the bus, after Lambda's retries: downstream consumers
	// miss them until someone sends the batch again (docs/DEPLOY.md, "Events").
	deadLetters := v.Events.DeadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
	})
	alarm("ForwarderDeadLetters", deadLetters, awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("Vestibule forwarder: event batches not put on the bus are waiting in the dead-letter queue"),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})

	// The functions put their stack name in the metric's Stack dimension (VESTIBULE_STACK),
	// so each stack in an account and region watches its own Redis errors.
	redisErrors := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(metrics.Namespace),
		MetricName:    jsii.String(metrics.RedisErrors),
		DimensionsMap: &map[string]*string{metrics.StackDimension: st.StackName()},
		Statistic:     jsii.String("Sum"),
		Period:        minute,
	})
	alarm("RedisErrors", redisErrors, awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("Vestibule: Redis calls failing (visitors get 503) two minutes running"),
		Threshold:          jsii.Number(5),
		EvaluationPeriods:  jsii.Number(2),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})

	// API Gateway: 5xx are Lambda crashes, timeouts and the functions' 503s (Redis); a few
	// a minute for two minutes is worth a look.
	api5xx := v.API.MetricServerError(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")})
	alarm("Api5xx", api5xx, awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("Vestibule API: 5 or more 5xx answers a minute, two minutes running"),
		Threshold:          jsii.Number(5),
		EvaluationPeriods:  jsii.Number(2),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	// API Gateway's own throttling (the stage's apiRateLimit/apiBurstLimit) has no metric of
	// its own in an HTTP API: it is a 429 among the 4xx. The access log tells it apart: a 429
	// that reached no integration.
	awslogs.NewMetricFilter(st, jsii.String("ApiThrottledFilter"), &awslogs.MetricFilterProps{
		LogGroup:        v.AccessLogs,
		FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(`{ ($.s = "429") && ($.is = "-") }`)),
		MetricNamespace: jsii.String(metrics.Namespace),
		MetricName:      jsii.String(APIThrottled),
		MetricValue:     jsii.String("1"),
		Dimensions:      &map[string]*string{metrics.StackDimension: jsii.String("$.st")},
		Unit:            awscloudwatch.Unit_COUNT,
	})
	apiThrottled := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(metrics.Namespace),
		MetricName:    jsii.String(APIThrottled),
		DimensionsMap: &map[string]*string{metrics.StackDimension: st.StackName()},
		Statistic:     jsii.String("Sum"),
		Period:        minute,
	})
	alarm("ApiThrottled", apiThrottled, awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("Vestibule API: API Gateway throttled requests (raise apiRateLimit/apiBurstLimit)"),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	cacheW := []awscloudwatch.IMetric{}
	if v.ServerlessCacheName != "" {
		cacheMetric := func(name string) awscloudwatch.Metric {
			return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace:     jsii.String("AWS/ElastiCache"),
				MetricName:    jsii.String(name),
				DimensionsMap: &map[string]*string{"clusterId": jsii.String(v.ServerlessCacheName)},
				Statistic:     jsii.String("Sum"),
				Period:        minute,
			})
		}
		// Commands ElastiCache Serverless refused because the load grew faster than it
		// scales: each is a visitor's 503.
		throttled := cacheMetric("ThrottledCmds")
		alarm("CacheThrottled", throttled, awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String("Vestibule cache: ElastiCache throttled commands (load growing faster than it scales)"),
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		// ECPUs are what the cache bills per request: a sustained load above the setting is
		// an unusual crowd, a flood, or a bug, and costs money either way.
		ecpu := cacheMetric("ElastiCacheProcessingUnits")
		alarm("CacheECPU", ecpu, awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(fmt.Sprintf("Vestibule cache: over %d ECPU/s for 5 minutes", set.CacheECPUAlarm)),
			Threshold:          jsii.Number(float64(set.CacheECPUAlarm) * 60),
			EvaluationPeriods:  jsii.Number(5),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		cacheW = append(cacheW, throttled, ecpu)
	}

	graph := func(title string, ms []awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &ms, Width: jsii.Number(8),
		})
	}
	requests := []awscloudwatch.IMetric{
		v.API.MetricCount(&awscloudwatch.MetricOptions{Period: minute}),
		v.API.MetricClientError(&awscloudwatch.MetricOptions{Period: minute}),
		v.API.MetricServerError(&awscloudwatch.MetricOptions{Period: minute}),
	}
	dash := awscloudwatch.NewDashboard(st, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: AccountWideName(st, "dashboard"),
	})
	dash.AddWidgets(graph("API requests, 4xx, 5xx", requests), graph("Function errors", errorsW), graph("Function throttles", throttlesW))
	dash.AddWidgets(graph("Function duration p99", durationW), graph("Admit invocations", []awscloudwatch.IMetric{admitInvocations}),
		graph("Redis errors", []awscloudwatch.IMetric{redisErrors}))
	dash.AddWidgets(graph("API 5xx and throttled", []awscloudwatch.IMetric{api5xx, apiThrottled}))
	if len(cacheW) > 0 {
		dash.AddWidgets(graph("Cache throttled commands and ECPUs", cacheW))
	}
}

// title turns a function name into a construct id prefix ("enqueue" → "Enqueue").
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
