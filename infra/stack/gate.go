package stack

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The edge gate in front of a booking site (docs/GATE.md): with Settings.ProtectOrigin set, the
// stack adds a second CloudFront distribution in front of that origin. Its default behaviour runs
// the gate's CloudFront Function (viewer request) with a KeyValueStore of the cookie keys; its
// /.vestibule/* behaviour goes to the HTTP API, where /.vestibule/enter and leave live. The
// gatekeys Lambda writes the keys to the store when a deploy creates the gate (a custom resource)
// and when invoked by hand after a change of the entry-key secret.

// Context keys of the gate.
const (
	CtxProtectOrigin    = "protectOrigin"    // the booking site's origin domain, e.g. booking-origin.example.com
	CtxProtectRoom      = "protectRoom"      // the room that guards it
	CtxProtectRoutes    = "protectRoutes"    // or rooms by path: /tickets=ROOM,/merch=ROOM2 (or a JSON list in cdk.json)
	CtxProtectOpenPaths = "protectOpenPaths" // comma-separated (or a JSON list in cdk.json): /robots.txt,/assets/*
)

// GateKeysFunction is the Lambda (functions/gatekeys) that writes the gate's keys to its store.
const GateKeysFunction = "gatekeys"

// GateHostFunction is the CloudFront Function (viewer request) of the protected distribution's
// /.vestibule/* behaviour: gate.HostFunction, which `vestibule gate attach` deploys too.
const GateHostFunction = gate.HostFunction

// waitingRoomPlaceholder stands for the waiting room's URL while gate.CloudFrontFunction checks
// and renders the function: the real URL is the other distribution's domain, a token at synth
// time, put in its place afterwards.
const waitingRoomPlaceholder = "https://waiting-room.vestibule.invalid/"

// originDomain is a DNS name: what CloudFront accepts as a custom origin's domain.
var originDomain = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// gateFromContext reads the gate's context keys into s.
func gateFromContext(node constructs.Node, s *Settings) []error {
	get := func(key string) (any, bool) {
		v := node.TryGetContext(&key)
		return v, v != nil
	}
	if v, ok := get(CtxProtectOrigin); ok {
		s.ProtectOrigin = fmt.Sprint(v)
	}
	if v, ok := get(CtxProtectRoom); ok {
		s.ProtectRoom = fmt.Sprint(v)
	}
	if v, ok := get(CtxProtectOpenPaths); ok {
		s.ProtectOpenPaths = contextList(v)
	}
	if v, ok := get(CtxProtectRoutes); ok {
		routes, err := gate.ParseRoutes(strings.Join(contextList(v), ","))
		if err != nil {
			return []error{fmt.Errorf("%w: %s: %v", ErrBadSetting, CtxProtectRoutes, err)}
		}
		s.ProtectRoutes = routes
	}
	if err := ValidateGate(*s); err != nil {
		return []error{err}
	}
	return nil
}

// contextList is a context value that is a list: a JSON list in cdk.json, or comma-separated
// text on the command line.
func contextList(v any) []string {
	var out []string
	switch list := v.(type) {
	case []any:
		for _, p := range list {
			out = append(out, fmt.Sprint(p))
		}
	default:
		for p := range strings.SplitSeq(fmt.Sprint(v), ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// ValidateGate checks the gate's settings: none, or an origin domain, a room id or routes (one or
// the other), and open paths the gate accepts.
func ValidateGate(s Settings) error {
	if s.ProtectOrigin == "" {
		if s.ProtectRoom != "" || len(s.ProtectOpenPaths) > 0 || len(s.ProtectRoutes) > 0 {
			return fmt.Errorf("%w: %s, %s and %s need %s", ErrBadSetting, CtxProtectRoom, CtxProtectRoutes, CtxProtectOpenPaths, CtxProtectOrigin)
		}
		return nil
	}
	var errs []error
	if !originDomain.MatchString(s.ProtectOrigin) {
		errs = append(errs, fmt.Errorf("%w: %s=%q is not a domain name (no scheme, port or path)", ErrBadSetting, CtxProtectOrigin, s.ProtectOrigin))
	}
	switch {
	case len(s.ProtectRoutes) > 0 && s.ProtectRoom != "":
		errs = append(errs, fmt.Errorf("%w: %s and %s are one or the other", ErrBadSetting, CtxProtectRoom, CtxProtectRoutes))
	case len(s.ProtectRoutes) == 0 && !room.ValidRoomID(s.ProtectRoom):
		errs = append(errs, fmt.Errorf("%w: %s=%q is not a room id (1-64 of [A-Za-z0-9_-]); it (or %s) is required with %s",
			ErrBadSetting, CtxProtectRoom, s.ProtectRoom, CtxProtectRoutes, CtxProtectOrigin))
	default:
		if _, err := gateFunctionSource(s); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s, %s: %v", ErrBadSetting, CtxProtectRoutes, CtxProtectOpenPaths, err))
		}
	}
	return errors.Join(errs...)
}

// gateFunctionSource is the gate's function for the settings, with the placeholder waiting room.
func gateFunctionSource(s Settings) (string, error) {
	return gate.CloudFrontFunction(gate.Config{Room: s.ProtectRoom, Routes: s.ProtectRoutes,
		WaitingRoomURL: waitingRoomPlaceholder, OpenPaths: s.ProtectOpenPaths})
}

// gateRooms names the rooms of a gate: its room, or its routes' rooms in order, once each.
func gateRooms(single string, routes []gate.Route) string {
	if len(routes) == 0 {
		return single
	}
	var rooms []string
	for _, r := range routes {
		if !slices.Contains(rooms, r.Room) {
			rooms = append(rooms, r.Room)
		}
	}
	return strings.Join(rooms, ", ")
}

// Gate is what newGate made, for tests and outputs.
type Gate struct {
	Distribution awscloudfront.Distribution
	Function     awscloudfront.Function
	Store        awscloudfront.KeyValueStore
	Keys         awslambda.Function
}

// gateProps are what the gate is built from.
type gateProps struct {
	Settings Settings
	// WaitingRoomURL is where the gate sends visitors (Front.URL), LogsBucket where its
	// distribution logs (Front.LogsBucket), APIOrigin the API's host (API.OriginDomain; with
	// two regions the write name, as the waiting room's writes).
	WaitingRoomURL string
	LogsBucket     awss3.IBucket
	APIOrigin      *string
	// EntryKeySecret gives the gate's keys, OriginSecret the header its API origin sends.
	EntryKeySecret, OriginSecret awssecretsmanager.ISecret
	// WebACL is the stack's web ACL (Front.WebACL), nil without waf.
	WebACL *string
}

// newGate adds the protected site's distribution when the settings name an origin.
func newGate(st awscdk.Stack, p *gateProps) *Gate {
	set := p.Settings
	if set.ProtectOrigin == "" {
		return nil
	}
	if err := ValidateGate(set); err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
		return nil
	}
	eg, err := NewEdgeGate(st, &EdgeGateProps{
		Room:           set.ProtectRoom,
		Routes:         set.ProtectRoutes,
		WaitingRoomURL: p.WaitingRoomURL,
		OpenPaths:      set.ProtectOpenPaths,
		EntryKeySecret: p.EntryKeySecret,
		KeysCode:       awslambda.Code_FromAsset(jsii.String(filepath.Join(set.AssetDir, GateKeysFunction)), nil),
		LogRetention:   retentionOr(set.LogRetentionDays),
	})
	if err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
		return nil
	}
	g := &Gate{Function: eg.Function, Store: eg.Store, Keys: eg.Keys}

	// The booking site as it is: nothing cached, every viewer header but Host forwarded (the origin
	// keeps its own name and certificate); a team that caches pages can change the cache policy,
	// since a viewer-request function runs before the cache.
	distProps := &awscloudfront.DistributionProps{
		Comment:     jsii.String("Vestibule gate: " + set.ProtectOrigin + " behind room " + gateRooms(set.ProtectRoom, set.ProtectRoutes)),
		WebAclId:    p.WebACL,
		HttpVersion: awscloudfront.HttpVersion_HTTP2_AND_3,
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin: awscloudfrontorigins.NewHttpOrigin(jsii.String(set.ProtectOrigin), &awscloudfrontorigins.HttpOriginProps{
				ProtocolPolicy:     awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
				OriginSslProtocols: &[]awscloudfront.OriginSslPolicy{awscloudfront.OriginSslPolicy_TLS_V1_2},
			}),
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
			CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
			OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
			FunctionAssociations: eg.Associations(),
		},
	}
	viewerDomain(st, "GateCertificate", set.ProtectDomain, set.ProtectCertificateArn, distProps)
	logTo(distProps, p.LogsBucket, "gate")
	g.Distribution = awscloudfront.NewDistribution(st, jsii.String("GateDistribution"), distProps)
	// The API's public routes answer only requests that carry CloudFront's origin secret.
	eg.AddTo(g.Distribution, apiOrigin(p.APIOrigin, p.OriginSecret, set.OriginSecretVersion))
	originMTLS(g.Distribution, set, 1)

	awscdk.NewCfnOutput(st, jsii.String("ProtectedSiteUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The booking site behind the gate; set the originUrl of room " + gateRooms(set.ProtectRoom, set.ProtectRoutes) +
			" to it (with the room's path) and gate to true"),
		Value: jsii.String(distributionURL(set.ProtectDomain, g.Distribution)),
	})
	awscdk.NewCfnOutput(st, jsii.String("GateKeysFunctionName"), &awscdk.CfnOutputProps{
		Description: jsii.String("After rotating the entry-key secret: aws lambda invoke --function-name <this> /dev/stdout"),
		Value:       g.Keys.FunctionName(),
	})
	awscdk.NewCfnOutput(st, jsii.String("GateFunctionArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("The gate's CloudFront Function, to associate with a distribution you already have"),
		Value:       g.Function.FunctionArn(),
	})
	awscdk.NewCfnOutput(st, jsii.String("GateKeyValueStoreArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("The gate's KeyValueStore (the cookie keys)"),
		Value:       g.Store.KeyValueStoreArn(),
	})
	return g
}

// retentionOr is the log retention of the settings, a month if they name none CloudWatch takes
// (New reports that error already).
func retentionOr(days int) awslogs.RetentionDays {
	r, err := RetentionFor(days)
	if err != nil {
		return awslogs.RetentionDays_ONE_MONTH
	}
	return r
}
