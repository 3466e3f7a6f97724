package stack

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// The room as an OpenID Connect provider (docs/GATE.md, "OpenID Connect"): the waiting room's
// distribution sends /oidc/* to the API, and, with Settings.OIDC set, the stack adds an
// authenticate-oidc rule to an existing Application Load Balancer listener, so that the site
// behind it signs its visitors in through the room.

// Context keys of the ALB rule.
const (
	CtxOIDCListenerArn     = "oidcListenerArn"     // the HTTPS listener of the site's ALB
	CtxOIDCTargetGroupArn  = "oidcTargetGroupArn"  // where the rule forwards a signed-in visitor
	CtxOIDCRoom            = "oidcRoom"            // the room: the client id, the issuer's last segment
	CtxOIDCClientSecretArn = "oidcClientSecretArn" // a Secrets Manager secret holding the room's origin credential
	CtxOIDCPriority        = "oidcPriority"        // the rule's priority on the listener (1-50000)
	CtxOIDCHosts           = "oidcHosts"           // the host headers the rule matches (comma-separated; none: any)
	CtxOIDCPaths           = "oidcPaths"           // the path patterns it matches (comma-separated; default /*)
	CtxOIDCSessionSeconds  = "oidcSessionSeconds"  // the ALB's session timeout: the room's sessionTTLSeconds
)

// OIDCSettings put a site's ALB listener behind a room (an authenticate-oidc rule); the zero value
// adds none.
type OIDCSettings struct {
	ListenerArn, TargetGroupArn, Room, ClientSecretArn string
	Priority                                           int
	Hosts, Paths                                       []string
	// SessionSeconds is the ALB's session timeout; 0: the room defaults' sessionTTLSeconds.
	SessionSeconds int
}

// The shapes of the ARNs the rule takes.
var (
	listenerARN    = regexp.MustCompile(`^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:listener/app/[A-Za-z0-9-]+/[0-9a-f]+/[0-9a-f]+$`)
	targetGroupARN = regexp.MustCompile(`^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:targetgroup/[A-Za-z0-9-]+/[0-9a-f]+$`)
	secretARN      = regexp.MustCompile(`^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$`)
)

// maxALBSession is the longest session an ALB's authenticate action keeps (7 days).
const maxALBSession = 604_800

// oidcFromContext reads the rule's context keys into s.
func oidcFromContext(node constructs.Node, s *Settings) []error {
	get := func(key string) (any, bool) {
		v := node.TryGetContext(&key)
		return v, v != nil
	}
	o := &s.OIDC
	for key, dst := range map[string]*string{CtxOIDCListenerArn: &o.ListenerArn, CtxOIDCTargetGroupArn: &o.TargetGroupArn,
		CtxOIDCRoom: &o.Room, CtxOIDCClientSecretArn: &o.ClientSecretArn} {
		if v, ok := get(key); ok {
			*dst = fmt.Sprint(v)
		}
	}
	for key, dst := range map[string]*[]string{CtxOIDCHosts: &o.Hosts, CtxOIDCPaths: &o.Paths} {
		if v, ok := get(key); ok {
			*dst = contextList(v)
		}
	}
	var errs []error
	for key, dst := range map[string]*int{CtxOIDCPriority: &o.Priority, CtxOIDCSessionSeconds: &o.SessionSeconds} {
		if v, ok := get(key); ok {
			n, err := strconv.Atoi(fmt.Sprint(v))
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s=%v is not a whole number", ErrBadSetting, key, v))
			}
			*dst = n
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if err := ValidateOIDC(*s); err != nil {
		return []error{err}
	}
	return nil
}

// ValidateOIDC checks the rule's settings: none, or a listener, a target group, a room, a secret,
// a priority and a session the ALB takes.
func ValidateOIDC(s Settings) error {
	o := s.OIDC
	if o.ListenerArn == "" && o.TargetGroupArn == "" && o.Room == "" && o.ClientSecretArn == "" {
		return nil
	}
	var errs []error
	bad := func(key, v, want string) {
		errs = append(errs, fmt.Errorf("%w: %s=%q: %s", ErrBadSetting, key, v, want))
	}
	if !listenerARN.MatchString(o.ListenerArn) {
		bad(CtxOIDCListenerArn, o.ListenerArn, "an Application Load Balancer listener's ARN (arn:aws:elasticloadbalancing:…:listener/app/…)")
	}
	if !targetGroupARN.MatchString(o.TargetGroupArn) {
		bad(CtxOIDCTargetGroupArn, o.TargetGroupArn, "a target group's ARN (arn:aws:elasticloadbalancing:…:targetgroup/…)")
	}
	if !room.ValidRoomID(o.Room) {
		bad(CtxOIDCRoom, o.Room, "a room id (1-64 of [A-Za-z0-9_-])")
	}
	if !secretARN.MatchString(o.ClientSecretArn) {
		bad(CtxOIDCClientSecretArn, o.ClientSecretArn, "a Secrets Manager secret's ARN, holding the room's origin credential")
	}
	if o.Priority < 1 || o.Priority > 50_000 {
		bad(CtxOIDCPriority, strconv.Itoa(o.Priority), "the rule's priority on the listener, 1-50000, one no other rule has")
	}
	if o.SessionSeconds < 0 || o.SessionSeconds > maxALBSession {
		bad(CtxOIDCSessionSeconds, strconv.Itoa(o.SessionSeconds), "1-604800 seconds: the room's sessionTTLSeconds (0: the room defaults')")
	}
	return errors.Join(errs...)
}

// OIDCRuleProps are what an authenticate-oidc rule is made of.
type OIDCRuleProps struct {
	// ListenerArn is the site's ALB listener (HTTPS), TargetGroupArn where a signed-in visitor goes.
	ListenerArn, TargetGroupArn string
	// Priority is the rule's place among the listener's rules; Hosts and Paths its conditions
	// (Paths default to /*, every path).
	Priority     int
	Hosts, Paths []string
	// WaitingRoomURL is the Vestibule stack's WaitingRoomUrl output (with its final "/"), Room
	// the room: the issuer is <WaitingRoomURL>oidc/<Room>, the client id the room.
	WaitingRoomURL, Room string
	// ClientSecretArn is a Secrets Manager secret whose value is the room's origin credential
	// (`vestibule rooms get ROOM --credential` prints it); CloudFormation resolves it, the template holds only
	// the reference.
	ClientSecretArn string
	// SessionSeconds is the ALB's session timeout, which alone ends a signed-in visitor's access
	// (docs/GATE.md, "OpenID Connect"): the room's sessionTTLSeconds.
	SessionSeconds int
}

// NewOIDCListenerRule adds to an existing ALB listener a rule that signs visitors in through the
// room (authenticate-oidc, with the room's endpoints) and forwards them to the target group. It
// returns ErrBadSetting for props the ALB would refuse.
func NewOIDCListenerRule(scope constructs.Construct, id string, p *OIDCRuleProps) (awselasticloadbalancingv2.CfnListenerRule, error) {
	if p.WaitingRoomURL == "" {
		return nil, fmt.Errorf("%w: the waiting room's URL is required", ErrBadSetting)
	}
	set := Settings{OIDC: OIDCSettings{ListenerArn: p.ListenerArn, TargetGroupArn: p.TargetGroupArn, Room: p.Room,
		ClientSecretArn: p.ClientSecretArn, Priority: p.Priority, SessionSeconds: p.SessionSeconds}}
	if err := ValidateOIDC(set); err != nil {
		return nil, err
	}
	if p.SessionSeconds < 1 {
		return nil, fmt.Errorf("%w: the session timeout is required: the room's sessionTTLSeconds", ErrBadSetting)
	}
	issuer := p.WaitingRoomURL + routes.OIDCPrefix[1:] + p.Room
	paths := p.Paths
	if len(paths) == 0 {
		paths = []string{"/*"}
	}
	conditions := []any{&awselasticloadbalancingv2.CfnListenerRule_RuleConditionProperty{
		Field: jsii.String("path-pattern"), PathPatternConfig: &awselasticloadbalancingv2.CfnListenerRule_PathPatternConfigProperty{Values: jsii.Strings(paths...)},
	}}
	if len(p.Hosts) > 0 {
		conditions = append(conditions, &awselasticloadbalancingv2.CfnListenerRule_RuleConditionProperty{
			Field: jsii.String("host-header"), HostHeaderConfig: &awselasticloadbalancingv2.CfnListenerRule_HostHeaderConfigProperty{Values: jsii.Strings(p.Hosts...)},
		})
	}
	secret := awscdk.SecretValue_SecretsManager(jsii.String(p.ClientSecretArn), nil)
	return awselasticloadbalancingv2.NewCfnListenerRule(scope, jsii.String(id), &awselasticloadbalancingv2.CfnListenerRuleProps{
		ListenerArn: jsii.String(p.ListenerArn),
		Priority:    jsii.Number(float64(p.Priority)),
		Conditions:  conditions,
		Actions: []any{
			&awselasticloadbalancingv2.CfnListenerRule_ActionProperty{
				Type: jsii.String("authenticate-oidc"), Order: jsii.Number(1),
				AuthenticateOidcConfig: &awselasticloadbalancingv2.CfnListenerRule_AuthenticateOidcConfigProperty{
					Issuer:                   jsii.String(issuer),
					AuthorizationEndpoint:    jsii.String(issuer + "/authorize"),
					TokenEndpoint:            jsii.String(issuer + "/token"),
					UserInfoEndpoint:         jsii.String(issuer + "/userinfo"),
					ClientId:                 jsii.String(p.Room),
					ClientSecret:             secret.UnsafeUnwrap(), // a {{resolve:secretsmanager:…}} reference, never the value
					Scope:                    jsii.String("openid"),
					SessionTimeout:           jsii.Number(float64(p.SessionSeconds)),
					OnUnauthenticatedRequest: jsii.String("authenticate"),
				},
			},
			&awselasticloadbalancingv2.CfnListenerRule_ActionProperty{
				Type: jsii.String("forward"), Order: jsii.Number(2), TargetGroupArn: jsii.String(p.TargetGroupArn),
			},
		},
	}), nil
}

// newOIDCDoor adds the rule of Settings.OIDC, when set, with the waiting room's URL, and outputs
// the room's issuer.
func newOIDCDoor(st awscdk.Stack, set Settings, waitingRoomURL string) awselasticloadbalancingv2.CfnListenerRule {
	o := set.OIDC
	if o.ListenerArn == "" && o.Room == "" {
		return nil
	}
	session := o.SessionSeconds
	if session == 0 {
		session = int(set.RoomDefaults.SessionTTLSeconds)
	}
	rule, err := NewOIDCListenerRule(st, "OIDCListenerRule", &OIDCRuleProps{
		ListenerArn: o.ListenerArn, TargetGroupArn: o.TargetGroupArn, Priority: o.Priority, Hosts: o.Hosts, Paths: o.Paths,
		WaitingRoomURL: waitingRoomURL, Room: o.Room, ClientSecretArn: o.ClientSecretArn, SessionSeconds: session,
	})
	if err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
		return nil
	}
	awscdk.NewCfnOutput(st, jsii.String("OIDCIssuer"), &awscdk.CfnOutputProps{
		Description: jsii.String("The issuer of room " + o.Room + " as an OpenID Connect provider; list the ALB's https://<its DNS name>/oauth2/idpresponse in the room's oidcRedirectUris"),
		Value:       jsii.String(waitingRoomURL + routes.OIDCPrefix[1:] + o.Room),
	})
	return rule
}

// addOIDCBehaviour sends /oidc/* on the waiting room's distribution to the API: all methods, no
// caching, Authorization (a relying party's client credentials, userinfo's access token) through
// the per-visitor cache policy, every other viewer header but Host, and a viewer-request function
// that copies the viewer's Host into X-Forwarded-Host, from which the API makes the issuer (the
// API's own Host is execute-api's).
func (f *Front) addOIDCBehaviour(st awscdk.Stack, api awscloudfront.IOrigin) {
	host := awscloudfront.NewFunction(st, jsii.String("OIDCHostFunction"), &awscloudfront.FunctionProps{
		FunctionName: AccountWideName(st, "oidc-host"),
		Comment:      jsii.String("Vestibule: the viewer's Host for the OIDC provider's issuer"),
		Runtime:      awscloudfront.FunctionRuntime_JS_2_0(),
		Code:         awscloudfront.FunctionCode_FromInline(jsii.String(gate.HostFunction)),
	})
	f.Distribution.AddBehavior(jsii.String(routes.OIDCPrefix+"*"), api, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:        awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:           f.perVisitor,
		OriginRequestPolicy:   awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
		ResponseHeadersPolicy: f.headers,
		FunctionAssociations: &[]*awscloudfront.FunctionAssociation{{
			Function: host, EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST,
		}},
	})
}
