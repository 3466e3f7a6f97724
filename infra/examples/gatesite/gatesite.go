// Package gatesite is an example of a booking site's own CDK stack putting its distribution behind
// a Vestibule room with stack.NewEdgeGate: the site keeps its distribution and its domain, and adds
// the gate's function to its default behaviour and the /.vestibule/* behaviour to the Vestibule
// API. Copy New into your app; every input is an output of the deployed Vestibule stack or yours.
package gatesite

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

// Props are the site's and the Vestibule stack's values.
type Props struct {
	awscdk.StackProps
	// SiteOrigin is the booking site's origin domain (what the distribution serves).
	SiteOrigin string
	// Room guards the site; OpenPaths pass without a session.
	Room      string
	OpenPaths []string
	// From the Vestibule stack's outputs: WaitingRoomUrl, the host of ApiUrl, EntryKeySecretArn
	// and OriginSecretArn.
	WaitingRoomURL, APIHost, EntryKeySecretArn, OriginSecretArn string
	// GateKeysDir holds the gatekeys function's bootstrap (`make build`: dist/gatekeys).
	GateKeysDir string
}

// Site is the example stack and its distribution.
type Site struct {
	awscdk.Stack
	Distribution awscloudfront.Distribution
	Gate         *stack.EdgeGate
}

// New defines the site's stack: its distribution, with the gate.
func New(scope constructs.Construct, id string, p *Props) (*Site, error) {
	st := awscdk.NewStack(scope, &id, &p.StackProps)
	entry := awssecretsmanager.Secret_FromSecretCompleteArn(st, jsii.String("EntryKeySecret"), jsii.String(p.EntryKeySecretArn))
	origin := awssecretsmanager.Secret_FromSecretCompleteArn(st, jsii.String("OriginSecret"), jsii.String(p.OriginSecretArn))
	g, err := stack.NewEdgeGate(st, &stack.EdgeGateProps{
		Room:           p.Room,
		WaitingRoomURL: p.WaitingRoomURL,
		OpenPaths:      p.OpenPaths,
		EntryKeySecret: entry,
		KeysCode:       awslambda.Code_FromAsset(jsii.String(p.GateKeysDir), nil),
	})
	if err != nil {
		return nil, err
	}
	dist := awscloudfront.NewDistribution(st, jsii.String("Site"), &awscloudfront.DistributionProps{
		Comment: jsii.String("Booking site behind Vestibule room " + p.Room),
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin:               awscloudfrontorigins.NewHttpOrigin(jsii.String(p.SiteOrigin), nil),
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
			CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
			OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
			// the gate runs first on every request of the site
			FunctionAssociations: g.Associations(),
		},
	})
	// /.vestibule/enter and leave go to the Vestibule API, with the origin header it requires
	g.AddTo(dist, stack.APIOrigin(jsii.String(p.APIHost), origin))
	return &Site{Stack: st, Distribution: dist, Gate: g}, nil
}
