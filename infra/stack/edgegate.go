package stack

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The edge gate as a reusable piece: what a team that manages its booking site's distribution
// with the CDK adds to its own app, in one call, to put the site behind a Vestibule room
// (docs/GATE.md, "With the CDK"). The stack's own gate (gate.go) is made the same way.

// EdgeGateProps configure an edge gate.
type EdgeGateProps struct {
	// Room is the room that guards the site; or Routes put rooms on paths of the site
	// (gate.Config.Routes), one or the other.
	Room   string
	Routes []gate.Route
	// WaitingRoomURL is where the gate sends visitors without a session: the waiting room's
	// https URL (the Vestibule stack's WaitingRoomUrl output), ending in "/". A token is fine.
	WaitingRoomURL string
	// OpenPaths pass without a session (gate.Config.OpenPaths).
	OpenPaths []string
	// EntryKeySecret is the Vestibule stack's entry-key secret (its EntryKeySecretArn output,
	// for example awssecretsmanager.Secret_FromSecretCompleteArn): the cookies' keys derive from it.
	EntryKeySecret awssecretsmanager.ISecret
	// KeysCode is the gatekeys function's code: `make build` leaves it in dist/gatekeys (arm64).
	KeysCode awslambda.Code
	// LogRetention of the gatekeys function's log group; a month if empty.
	LogRetention awslogs.RetentionDays
}

// EdgeGate is the gate's pieces: the store of the cookie keys, the function that fills it at
// deploy (and after a rotation), and the two CloudFront Functions.
type EdgeGate struct {
	Store awscloudfront.KeyValueStore
	Keys  awslambda.Function
	// Sync is the custom resource that writes the keys at deploy; a distribution using the gate
	// depends on it (AddTo), so no visitor meets an empty store.
	Sync awscdk.CustomResource
	// Function is the gate (viewer request) for the site's behaviours; Host the function of the
	// /.vestibule/* behaviour, which passes the site's host to the API.
	Function, Host awscloudfront.Function
}

// ValidateEdgeGate checks the props NewEdgeGate needs.
func ValidateEdgeGate(p *EdgeGateProps) error {
	var errs []error
	switch {
	case len(p.Routes) > 0 && p.Room != "":
		errs = append(errs, fmt.Errorf("%w: edge gate: a room and routes are one or the other", ErrBadSetting))
	case len(p.Routes) == 0 && !room.ValidRoomID(p.Room):
		errs = append(errs, fmt.Errorf("%w: edge gate: room %q is not a room id (1-64 of [A-Za-z0-9_-])", ErrBadSetting, p.Room))
	}
	if p.WaitingRoomURL == "" {
		errs = append(errs, fmt.Errorf("%w: edge gate: no waiting room URL", ErrBadSetting))
	}
	if p.EntryKeySecret == nil || p.KeysCode == nil {
		errs = append(errs, fmt.Errorf("%w: edge gate: the entry-key secret and the gatekeys code are required", ErrBadSetting))
	}
	if _, err := gate.CloudFrontFunction(p.config()); err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%w: edge gate: %v", ErrBadSetting, err))
	}
	return errors.Join(errs...)
}

// config is the gate's configuration as the function is rendered from it, with the placeholder
// waiting room.
func (p *EdgeGateProps) config() gate.Config {
	return gate.Config{Room: p.Room, Routes: p.Routes, WaitingRoomURL: waitingRoomPlaceholder, OpenPaths: p.OpenPaths}
}

// NewEdgeGate defines the gate's pieces in scope (their ids start with "Gate"; one gate per
// scope). The KeyValueStore's name carries the stack's name and region (AccountWideName), so the
// gate of another stage or region does not collide. Use ViewerRequest on the site's behaviours
// and AddTo for the /.vestibule/* behaviour.
func NewEdgeGate(scope constructs.Construct, p *EdgeGateProps) (*EdgeGate, error) {
	if err := ValidateEdgeGate(p); err != nil {
		return nil, err
	}
	st := awscdk.Stack_Of(scope)
	// The function is rendered with a placeholder, then the URL (which may be a token) put in.
	src, _ := gate.CloudFrontFunction(p.config())
	if strings.Count(src, waitingRoomPlaceholder) != 1 {
		return nil, errors.New("edge gate: the gate's function does not hold the waiting room URL once")
	}
	src = strings.Replace(src, waitingRoomPlaceholder, p.WaitingRoomURL, 1)
	retention := p.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	g := &EdgeGate{}

	// A KeyValueStore's name is unique in the account across regions (it is CloudFront's), and the
	// CDK's default is made of the construct path alone: the stack name and the region keep a
	// second region's gate, or a second stage's, from colliding.
	g.Store = awscloudfront.NewKeyValueStore(scope, jsii.String("GateKeyValueStore"), &awscloudfront.KeyValueStoreProps{
		KeyValueStoreName: AccountWideName(st, "gate-keys"),
		Comment:           jsii.String("Vestibule gate: the session cookies' keys (key:<kid>, current)"),
	})

	// The key sync: outside any VPC (the KeyValueStore API has no VPC endpoint), reading only the
	// entry-key secret and writing only this store.
	logs := awslogs.NewLogGroup(scope, jsii.String("GateKeysLogs"), &awslogs.LogGroupProps{
		Retention:     retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	g.Keys = awslambda.NewFunction(scope, jsii.String("GateKeysFunction"), &awslambda.FunctionProps{
		Description:  jsii.String("Vestibule gate: writes the cookie keys, derived from the entry-key secret, to the KeyValueStore"),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         p.KeysCode,
		MemorySize:   jsii.Number(128),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(30)),
		Environment: &map[string]*string{
			config.EnvEntryKeySecretARN: p.EntryKeySecret.SecretArn(),
			config.EnvGateKVSARN:        g.Store.KeyValueStoreArn(),
		},
		LogGroup: logs,
	})
	ownLogsOnly(g.Keys, logs, false)
	p.EntryKeySecret.GrantRead(g.Keys, nil)
	g.Keys.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("cloudfront-keyvaluestore:DescribeKeyValueStore",
			"cloudfront-keyvaluestore:ListKeys", "cloudfront-keyvaluestore:UpdateKeys"),
		Resources: &[]*string{g.Store.KeyValueStoreArn()},
	}))
	g.Sync = awscdk.NewCustomResource(scope, jsii.String("GateKeys"), &awscdk.CustomResourceProps{
		ServiceToken:   g.Keys.FunctionArn(),
		ResourceType:   jsii.String("Custom::VestibuleGateKeys"),
		ServiceTimeout: awscdk.Duration_Seconds(jsii.Number(ownServiceTimeout)),
		Properties: &map[string]any{
			"KvsArn":         g.Store.KeyValueStoreArn(),
			"EntrySecretArn": p.EntryKeySecret.SecretArn(),
		},
	})

	g.Function = awscloudfront.NewFunction(scope, jsii.String("GateFunction"), &awscloudfront.FunctionProps{
		Comment:       jsii.String("Vestibule gate for room " + gateRooms(p.Room, p.Routes)),
		Runtime:       awscloudfront.FunctionRuntime_JS_2_0(),
		Code:          awscloudfront.FunctionCode_FromInline(jsii.String(src)),
		KeyValueStore: g.Store,
	})
	g.Host = awscloudfront.NewFunction(scope, jsii.String("GateHostFunction"), &awscloudfront.FunctionProps{
		Comment: jsii.String("Vestibule gate: the site's host to the API in X-Forwarded-Host"),
		Runtime: awscloudfront.FunctionRuntime_JS_2_0(),
		Code:    awscloudfront.FunctionCode_FromInline(jsii.String(GateHostFunction)),
	})
	return g, nil
}

// Associations are the gate's function associations for the site's behaviours (its default one,
// and any other that serves pages the room guards): at viewer request it lets a session through
// or sends the visitor to the room; at viewer response it turns the site's "Vestibule-Session: end"
// header into an ended session (docs/GATE.md). One function serves both events.
func (g *EdgeGate) Associations() *[]*awscloudfront.FunctionAssociation {
	return &[]*awscloudfront.FunctionAssociation{
		{Function: g.Function, EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST},
		{Function: g.Function, EventType: awscloudfront.FunctionEventType_VIEWER_RESPONSE},
	}
}

// APIOrigin is the Vestibule API as an origin of the site's distribution: its host (the
// Vestibule stack's ApiUrl output without scheme and path) and the origin header CloudFront must
// send it, resolved from the origin secret by CloudFormation (OriginSecretArn output).
func APIOrigin(apiHost *string, originSecret awssecretsmanager.ISecret) awscloudfront.IOrigin {
	return apiOrigin(apiHost, originSecret, "")
}

// apiOrigin is the API as an origin of a distribution: HTTPS, TLS 1.2, with the origin header
// (originHeaderValue) of the origin secret's current version, or of version when one is pinned.
// The waiting room's distribution, the gate's and a site's (APIOrigin) reach the API through it.
func apiOrigin(host *string, originSecret awssecretsmanager.ISecret, version string) awscloudfront.IOrigin {
	return awscloudfrontorigins.NewHttpOrigin(host, &awscloudfrontorigins.HttpOriginProps{
		ProtocolPolicy:     awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
		OriginSslProtocols: &[]awscloudfront.OriginSslPolicy{awscloudfront.OriginSslPolicy_TLS_V1_2},
		CustomHeaders:      &map[string]*string{config.OriginHeader: originHeaderValue(version, originSecret)},
	})
}

// AddTo adds the /.vestibule/* behaviour to dist, to the Vestibule API through api (APIOrigin;
// it must send the origin header), uncached, with every viewer header but Host and the host
// function; and makes dist wait for the keys.
func (g *EdgeGate) AddTo(dist awscloudfront.Distribution, api awscloudfront.IOrigin) {
	dist.AddBehavior(jsii.String(gate.VestibulePrefix+"*"), api, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
		OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
		FunctionAssociations: &[]*awscloudfront.FunctionAssociation{{
			Function: g.Host, EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST,
		}},
	})
	// The store holds the keys before the first visitor reaches the gate.
	dist.Node().AddDependency(g.Sync)
}
