// Package stack defines the Vestibule CloudFormation stack as constructs, a file and a test file
// each: the VPC and the Valkey cache (cache.go), the settings bucket (durable.go), the signing
// secrets and the keys object the functions read (keys.go), the Lambda functions built by `make
// build` and the admission schedule (functions.go), the HTTP API (api.go), the page bucket behind
// CloudFront (front.go), the edge gate (gate.go, edgegate.go), the OIDC door (oidc.go: /oidc/* and
// an ALB's authenticate-oidc rule), the events (events.go), and the alarms that say when a waiting
// room is not working, with their dashboard (alarms.go). New
// (stack.go) wires them; settings.go reads the deploy-time settings.
//
// The stack is environment-agnostic (no account lookups) so `cdk synth` works offline; only the
// optional WAF pins the region, because CloudFront web ACLs exist only in us-east-1.
package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// AccountWideName is the name of a resource whose name must be unique in the account (or,
// for CloudFront, across all regions of it): the stack name, the region and what it is.
// Two stages, or one stage in two regions, never share one.
func AccountWideName(st awscdk.Stack, what string) *string {
	return jsii.String(*st.StackName() + "-" + *st.Region() + "-" + what)
}

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
	// ServerlessCacheName names the serverless cache (its CloudWatch clusterId); "" with cache=nodes.
	ServerlessCacheName string
	// AccessLogs receives the HTTP API's access log (JSON, one line per request).
	AccessLogs awslogs.LogGroup
	Gate       *Gate // the protected site's distribution, when Settings.ProtectOrigin is set
	// OIDCRule is the authenticate-oidc rule on a site's ALB listener, when Settings.OIDC is set.
	OIDCRule awselasticloadbalancingv2.CfnListenerRule
	// WaitingRoomURL is the waiting room's https URL: its domain, or the distribution's name.
	WaitingRoomURL string
	// LogsBucket receives the distributions' standard logs.
	LogsBucket awss3.Bucket
	// APIOriginDomain is the host CloudFront reaches the API on: Settings.APIDomain or execute-api's.
	APIOriginDomain *string
	// Keys is the keys object the API functions read their keys from, and its sync.
	Keys   *Keys
	Events *Events // the events' bus, forwarder and log subscriptions (events.go)
	Notify *Notify // the notices of visitors' turns (notify.go); nil without them
	Alarms *Alarms // the alarms, their topic and the dashboard (alarms.go)
}

// New defines the whole waiting room in one stack: the network and the cache, the settings bucket,
// the secrets and the keys object, the functions, the API, the waiting room's distribution, the
// gate's, the events, the alarms. Each construct builds its resources in the stack's own scope, so
// they keep the logical IDs a deployed stack already has: a construct scope of its own would
// rename, and so replace, every resource in it.
func New(scope constructs.Construct, id string, props *Props) *Vestibule {
	st := awscdk.NewStack(scope, &id, &props.StackProps)
	set := props.Settings
	v := &Vestibule{Stack: st}
	net := newNetwork(st)
	cache := newCache(st, net, set)
	v.ServerlessCacheName = cache.ServerlessName
	settingsBucket, gateway := newSettingsBucket(st, net.Vpc, net.Isolated, net.Functions)
	v.SettingsBucket = settingsBucket
	secrets := newSecrets(st, set)
	retention := checkSettings(st, set)
	v.Keys = newKeys(st, set, retention, secrets.byVariable())
	v.Keys.allowThroughGateway(gateway)
	v.Functions = newFunctions(st, &functionsProps{
		Settings: set, Network: net, Cache: cache, Keys: v.Keys, SettingsBucket: settingsBucket, Retention: retention,
	})
	api := newAPI(st, &apiProps{Settings: set, Functions: v.Functions, Retention: retention})
	v.API, v.AccessLogs, v.APIOriginDomain = api.HttpApi, api.AccessLogs, api.OriginDomain
	// The writes reach the API on its own domain, or with two regions on the write name, which
	// points at the active region (regions.go).
	writeOrigin := api.OriginDomain
	if set.TwoRegions() {
		writeOrigin = jsii.String(set.Regions.WriteName)
	}
	front := newFront(st, &frontProps{Settings: set, Retention: retention, APIOrigin: writeOrigin, OriginSecret: secrets.Origin})
	v.Distribution, v.Bucket, v.LogsBucket, v.WaitingRoomURL = front.Distribution, front.Bucket, front.LogsBucket, front.URL
	v.Gate = newGate(st, &gateProps{
		Settings: set, WaitingRoomURL: front.URL, LogsBucket: front.LogsBucket, APIOrigin: writeOrigin,
		EntryKeySecret: secrets.EntryKey, OriginSecret: secrets.Origin, WebACL: front.WebACL,
	})
	v.OIDCRule = newOIDCDoor(st, set, front.URL)
	// CloudFront sends the origin value only once the keys object accepts it (a deploy that pins
	// a new origin-secret version syncs first).
	v.Distribution.Node().AddDependency(v.Keys.Resource)
	if v.Gate != nil {
		v.Gate.Distribution.Node().AddDependency(v.Keys.Resource)
	}
	v.Events = newEvents(st, &eventsProps{Settings: set, Functions: v.Functions, Retention: retention})
	v.Notify = newNotify(st, &notifyProps{Settings: set, Secret: secrets.Notice, API: api.HttpApi,
		APIURL: jsii.String("https://" + *api.OriginDomain + "/"), WaitingRoomURL: front.URL, Bus: v.Events.Bus, Retention: retention})
	v.Alarms = newAlarms(st, &alarmsProps{
		Settings: set, Functions: v.Functions, API: api.HttpApi, AccessLogs: api.AccessLogs,
		DeadLetters: v.Events.DeadLetters, ServerlessCacheName: v.ServerlessCacheName, Notify: v.Notify,
	})
	helperLogs(st, retention)
	customResourceTimeouts(st)
	recordQuotas(st, set)
	suppressNag(st, v, set, nagTargets{Secrets: secrets, Network: net})
	return v
}

// checkSettings checks the settings given as props rather than read by FromContext (an annotation
// error stops the synthesis with the message), and returns the log retention: the setting's, or a
// month when it is not one CloudWatch takes.
func checkSettings(st awscdk.Stack, set Settings) awslogs.RetentionDays {
	retention, err := RetentionFor(set.LogRetentionDays)
	if err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	if err := ValidateRoomDefaults(set.RoomDefaults); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
	}
	if err := ValidateDomains(set); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
	}
	if err := checkCertificateRegion(st, set); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
	}
	if err := ValidateRegions(set); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
	}
	if err := checkRegionOf(st, set); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
	}
	return retention
}

// checkCertificateRegion checks that the API's certificate is in the stack's region, where API
// Gateway takes a regional domain's certificate from. A stack whose region is unknown at
// synthesis cannot be checked, so it is refused: infra/main.go pins the stack to the deploying
// credentials' region (CDK_DEFAULT_REGION, which the CLI sets from AWS_REGION or the profile)
// whenever a certificate is given, as it does for waf=true.
func checkCertificateRegion(st awscdk.Stack, set Settings) error {
	m := certificateARN.FindStringSubmatch(set.APICertificateArn)
	switch {
	case m == nil:
		return nil // no certificate, or not an ARN: ValidateDomains says so
	case *awscdk.Token_IsUnresolved(st.Region()):
		return fmt.Errorf("%w: %s=%q: the stack's region is unknown, so the certificate's (%s) cannot be checked: "+
			"deploy with AWS_REGION (or the profile's region) set", ErrBadSetting, CtxAPICertificateArn, set.APICertificateArn, m[1])
	case m[1] != *st.Region():
		return fmt.Errorf("%w: %s=%q: API Gateway takes a regional domain's certificate from the stack's region, %s",
			ErrBadSetting, CtxAPICertificateArn, set.APICertificateArn, *st.Region())
	}
	return nil
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
func helperLogs(st awscdk.Stack, retention awslogs.RetentionDays) {
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

// title turns a function name into a construct id prefix ("enqueue" → "Enqueue").
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
