package stack

import (
	"encoding/json"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/config"
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
// a reservation must leave the account's unreserved pool at 100 or more, which a new account with
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

// functionsProps are what the functions of Functions are built from.
type functionsProps struct {
	Settings       Settings
	Network        *Network
	Cache          *Cache
	Keys           *Keys
	SettingsBucket awss3.Bucket
	Retention      awslogs.RetentionDays
}

// newFunctions creates the functions of Functions in the VPC, each with its log group, grants and
// environment, and admit's schedule; it returns them by name.
func newFunctions(st awscdk.Stack, p *functionsProps) map[string]awslambda.Function {
	env := functionEnvironment(st, p)
	checkEnvironment(st, env)
	fns := map[string]awslambda.Function{}
	var readers []awsiam.IRole
	for _, f := range Functions {
		fn := newFunction(st, f, p, &env)
		// admit only ticks: it never reads a key (it links no token code), so it gets none.
		// The others read the keys object, and start only once the deploy has written it.
		if f.Name != Admit {
			p.Keys.grantKeys(fn)
			readers = append(readers, fn.Role())
			fn.Node().AddDependency(p.Keys.Resource)
		}
		// Any function may find a room missing from Redis and restore it from the bucket; each
		// writes only the keys its code writes (SettingsWrites).
		grantSettings(fn, f.Name, p.SettingsBucket)
		if f.Name == routes.Admin {
			grantSettingsDelete(fn, p.SettingsBucket) // and only admin deletes a room
		}
		fns[f.Name] = fn
	}
	p.Keys.lockDown(readers)
	newAdmitSchedule(st, fns[Admit])
	return fns
}

// functionEnvironment is the functions' environment. Every variable the functions read is
// declared, empty where unused: `sam local` only overrides the variables a template declares
// (docs/DEPLOY.md, "SAM CLI").
func functionEnvironment(st awscdk.Stack, p *functionsProps) map[string]*string {
	set := p.Settings
	roomDefaults, _ := json.Marshal(set.RoomDefaults) // validated settings: cannot fail
	env := map[string]*string{}
	for _, name := range config.Names() {
		env[name] = jsii.String("")
	}
	for name, value := range map[string]*string{
		config.EnvRedisURL:          p.Cache.URL,
		config.EnvRedisCluster:      jsii.String(p.Cache.Cluster),
		config.EnvKeysObject:        p.Keys.Object, // the secret ARNs stay empty: no Secrets Manager call
		config.EnvIssuer:            jsii.String(set.Issuer),
		config.EnvAdminAuth:         jsii.String(string(config.AdminIAM)),
		config.EnvDefaultRoomConfig: jsii.String(string(roomDefaults)),
		config.EnvLogLevel:          jsii.String(set.LogLevel),
		config.EnvLogSample:         jsii.String(strconv.FormatFloat(set.LogSample, 'g', -1, 64)),
		config.EnvStack:             st.StackName(),
		config.EnvSettingsBucket:    p.SettingsBucket.BucketName(),
		config.EnvNoticeChannels:    jsii.String(noticeChannels(set)),
	} {
		env[name] = value
	}
	if set.RegionFence {
		env[config.EnvRegionFence] = st.Region() // resolved at deploy: AWS::Region
	}
	return env
}

// newFunction creates one function of Functions with its log group.
func newFunction(st awscdk.Stack, f Function, p *functionsProps, env *map[string]*string) awslambda.Function {
	logs := awslogs.NewLogGroup(st, jsii.String(title(f.Name)+"Logs"), &awslogs.LogGroupProps{
		Retention:     p.Retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	var reserved, retries *float64
	var maxEventAge awscdk.Duration
	if f.Reserved > 0 {
		reserved = jsii.Number(f.Reserved)
	}
	if f.Name == Admit && p.Settings.AdmitReservedConcurrency > 0 {
		reserved = jsii.Number(float64(p.Settings.AdmitReservedConcurrency))
	}
	if f.Name == Admit {
		// An invocation that waited (throttled behind the previous minute) for a minute is
		// superseded by the next one; a failed minute is not retried, the next one is the retry.
		maxEventAge, retries = awscdk.Duration_Seconds(jsii.Number(60)), jsii.Number(0)
	}
	fn := awslambda.NewFunction(st, jsii.String(title(f.Name)+"Function"), quietPlatformLogs(&awslambda.FunctionProps{
		ReservedConcurrentExecutions: reserved,
		MaxEventAge:                  maxEventAge,
		RetryAttempts:                retries,
		Description:                  jsii.String("Vestibule " + f.Name),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(jsii.String(filepath.Join(p.Settings.AssetDir, f.Name)), nil),
		MemorySize:                   jsii.Number(f.Memory),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(f.Timeout)),
		Environment:                  env,
		Vpc:                          p.Network.Vpc,
		VpcSubnets:                   p.Network.Isolated,
		SecurityGroups:               &[]awsec2.ISecurityGroup{p.Network.Functions},
		LogGroup:                     logs,
	}))
	ownLogsOnly(fn, logs, true)
	return fn
}

// newAdmitSchedule is admission's clock: EventBridge fires once a minute; the function ticks every
// second inside it. One at a time is enough, and two at once harmless (the token bucket makes an
// overlap admit nothing extra), so no concurrency is reserved unless asked.
func newAdmitSchedule(st awscdk.Stack, admit awslambda.Function) awsevents.Rule {
	return awsevents.NewRule(st, jsii.String("AdmitSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Vestibule: run the admission ticks every minute"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(admit, &awseventstargets.LambdaFunctionProps{
			// A retried minute would only overlap the next one; the next minute is the retry.
			RetryAttempts: jsii.Number(0),
		})},
	})
}
