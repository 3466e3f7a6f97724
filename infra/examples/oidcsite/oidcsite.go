// Package oidcsite is an example of a site's own CDK stack putting the site behind its Application
// Load Balancer through a Vestibule room, with the room as an OpenID Connect provider
// (docs/GATE.md, "OpenID Connect"): stack.NewOIDCListenerRule adds an authenticate-oidc rule to
// the ALB's HTTPS listener, so a visitor without the ALB's session waits in the room first. The
// site needs no code and no CloudFront. Copy New into your app; every input is an output of the
// deployed Vestibule stack or yours.
package oidcsite

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

// Props are the site's and the Vestibule stack's values.
type Props struct {
	awscdk.StackProps
	// ListenerArn is the site's ALB HTTPS listener, TargetGroupArn the site's targets; Priority
	// the rule's place among the listener's rules, Hosts its host names (none: every host).
	ListenerArn, TargetGroupArn string
	Priority                    int
	Hosts                       []string
	// Room guards the site; SessionSeconds is its sessionTTLSeconds, which the ALB's session
	// timeout follows.
	Room           string
	SessionSeconds int
	// WaitingRoomURL is the Vestibule stack's WaitingRoomUrl output; ClientSecretArn a secret you
	// made holding the room's origin credential (`vestibule rooms get ROOM --credential`).
	WaitingRoomURL, ClientSecretArn string
}

// Site is the example stack and its rule.
type Site struct {
	awscdk.Stack
	Rule awselasticloadbalancingv2.CfnListenerRule
}

// New defines the site's stack: the rule on its listener.
func New(scope constructs.Construct, id string, p *Props) (*Site, error) {
	st := awscdk.NewStack(scope, &id, &p.StackProps)
	rule, err := stack.NewOIDCListenerRule(st, "WaitingRoomSignIn", &stack.OIDCRuleProps{
		ListenerArn: p.ListenerArn, TargetGroupArn: p.TargetGroupArn, Priority: p.Priority, Hosts: p.Hosts,
		WaitingRoomURL: p.WaitingRoomURL, Room: p.Room, ClientSecretArn: p.ClientSecretArn,
		SessionSeconds: p.SessionSeconds,
	})
	if err != nil {
		return nil, err
	}
	return &Site{Stack: st, Rule: rule}, nil
}
