package stack

import (
	"fmt"
	"net/mail"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsses"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// NotifyFunction is the function that sends the notices of visitors' turns (functions/notify).
const NotifyFunction = "notify"

// Notify is the notices' part of the stack (docs/DEPLOY.md, "Notices"): the notify function,
// outside the VPC (it reaches the push services and SES; it needs no Redis: it takes the due
// notices through the API's admin routes, signed with its role), the rule that sends it the
// admission.tick events counting notices due, and the SES identity of the sender. The notice
// secret, whose keys seal the addresses and sign the pushes, is one of the stack's secrets
// (keys.go): keysync copies its public half into the keys object.
type Notify struct {
	Function awslambda.Function
	Rule     awsevents.Rule
	// DeadLetters keeps the events the function failed on after its retries (an unreachable
	// API): the notices stay due in Redis, and the next tick's event sends them.
	DeadLetters awssqs.Queue
	Identity    awsses.EmailIdentity // nil without NoticeSender
}

// noticesOn says whether the stack sends notices: on unless the notices setting is false, and
// never with origin mTLS on the API (only CloudFront gets past its TLS handshake, so the notify
// function could not take the notices).
func noticesOn(set Settings) bool { return set.Notices && set.APIClientCertificateArn == "" }

// noticeChannels is the API functions' NOTICE_CHANNELS: push always, email with a sender.
func noticeChannels(set Settings) string {
	switch {
	case !noticesOn(set):
		return ""
	case set.NoticeSender != "":
		return "push,email"
	}
	return "push"
}

// noticeIdentity is the SES identity the stack creates: NoticeIdentity, else the sender's address.
func noticeIdentity(set Settings) string {
	if set.NoticeIdentity != "" {
		return set.NoticeIdentity
	}
	return set.NoticeSender
}

var domainName = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// CheckNoticeSettings checks the sender (a plain address SES may send from) and the identity (a
// domain or an address, which the sender must fall under).
func CheckNoticeSettings(s Settings) error {
	if s.NoticeSender == "" {
		if s.NoticeIdentity != "" {
			return fmt.Errorf("%w: %s=%q without %s", ErrBadSetting, CtxNoticeIdentity, s.NoticeIdentity, CtxNoticeSender)
		}
		return nil
	}
	if _, err := notice.CheckEmail(s.NoticeSender); err != nil {
		return fmt.Errorf("%w: %s=%q is not a plain email address", ErrBadSetting, CtxNoticeSender, s.NoticeSender)
	}
	id := noticeIdentity(s)
	if a, err := mail.ParseAddress(id); err == nil && a.Address == id {
		if !strings.EqualFold(id, s.NoticeSender) {
			return fmt.Errorf("%w: %s=%q is an address other than the sender %q", ErrBadSetting, CtxNoticeIdentity, id, s.NoticeSender)
		}
		return nil
	}
	_, domain, _ := strings.Cut(s.NoticeSender, "@")
	if !domainName.MatchString(id) || !(strings.EqualFold(domain, id) || strings.HasSuffix(strings.ToLower(domain), "."+id)) {
		return fmt.Errorf("%w: %s=%q is neither the sender's address nor a domain of it", ErrBadSetting, CtxNoticeIdentity, id)
	}
	return nil
}

// notifyProps are what the notices are built from.
type notifyProps struct {
	Settings       Settings
	Secret         awssecretsmanager.ISecret
	API            awsapigatewayv2.HttpApi
	APIURL         *string // the API's URL: its domain, or execute-api's
	WaitingRoomURL string
	Bus            awsevents.IEventBus
	Retention      awslogs.RetentionDays
}

// newNotify defines the notify function, its rule on the bus, its grants and the SES identity;
// nil when the stack sends no notices.
func newNotify(st awscdk.Stack, p *notifyProps) *Notify {
	set := p.Settings
	if !noticesOn(set) {
		if set.Notices && set.APIClientCertificateArn != "" {
			awscdk.Annotations_Of(st).AddWarningV2(jsii.String("vestibule:notices-mtls"), jsii.String(
				"the API takes only CloudFront's client certificate (origin mTLS): the notify function could not reach it, so the stack sends no notices"), nil)
		}
		return nil
	}
	n := &Notify{}
	logs := awslogs.NewLogGroup(st, jsii.String("NotifyLogs"), &awslogs.LogGroupProps{
		Retention:     p.Retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	n.DeadLetters = awssqs.NewQueue(st, jsii.String("NotifyDeadLetterQueue"), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	n.Function = awslambda.NewFunction(st, jsii.String("NotifyFunction"), quietPlatformLogs(&awslambda.FunctionProps{
		Description:  jsii.String("Vestibule " + NotifyFunction + ": web pushes and emails of visitors' turns"),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(set.AssetDir, NotifyFunction)), nil),
		MemorySize:   jsii.Number(256),
		// A run sends until it has a send's time left (send.SendTimeout): a minute is some ten
		// rounds of fifty notices, sixteen at a time.
		Timeout: awscdk.Duration_Seconds(jsii.Number(60)),
		Environment: &map[string]*string{
			config.EnvNoticeSecretARN: p.Secret.SecretArn(),
			config.EnvNoticeFrom:      jsii.String(set.NoticeSender),
			config.EnvNoticePageURL:   jsii.String(strings.TrimRight(p.WaitingRoomURL, "/") + "/"),
			config.EnvNoticeAPIURL:    p.APIURL,
			config.EnvNoticePushHosts: jsii.String(""),
		},
		LogGroup:        logs,
		RetryAttempts:   jsii.Number(2),
		DeadLetterQueue: n.DeadLetters,
	}))
	ownLogsOnly(n.Function, logs, false)
	// The notice secret, and no other.
	p.Secret.GrantRead(n.Function, nil)
	// The two admin routes of notices, and no other route.
	n.Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("execute-api:Invoke"),
		Resources: &[]*string{
			p.API.ArnForExecuteApi(jsii.String(routes.AdminTakeNotice.Method), executePath(routes.AdminTakeNotice.Path), jsii.String("$default")),
			p.API.ArnForExecuteApi(jsii.String(routes.AdminAckNotice.Method), executePath(routes.AdminAckNotice.Path), jsii.String("$default")),
		},
	}))
	if set.NoticeSender != "" {
		id := noticeIdentity(set)
		identity := awsses.Identity_Email(jsii.String(id))
		if !strings.Contains(id, "@") {
			identity = awsses.Identity_Domain(jsii.String(id))
		}
		n.Identity = awsses.NewEmailIdentity(st, jsii.String("NoticeIdentity"), &awsses.EmailIdentityProps{Identity: identity})
		// ses:SendEmail (SES v2's SendEmail; not SendRawEmail) on the sender's identity only.
		n.Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("ses:SendEmail"),
			Resources: &[]*string{n.Identity.EmailIdentityArn()},
		}))
		awscdk.NewCfnOutput(st, jsii.String("NoticeIdentityName"), &awscdk.CfnOutputProps{
			Description: jsii.String("The SES identity of email notices: verify it (docs/DEPLOY.md, Notices)"),
			Value:       n.Identity.EmailIdentityName(),
		})
	}
	n.Rule = awsevents.NewRule(st, jsii.String("NoticeRule"), &awsevents.RuleProps{
		Description: jsii.String("Vestibule: the ticks that count notices due, to the notify function"),
		EventBus:    p.Bus,
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(eventbus.SourceAdmission),
			DetailType: jsii.Strings(roomevents.TypeTick),
			Detail:     &map[string]any{"notices": []any{map[string]any{"numeric": []any{">", 0}}}},
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(n.Function, &awseventstargets.LambdaFunctionProps{
			// A notice not sent is due again at the next tick's event: an old event is of no use.
			MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(5)),
			RetryAttempts: jsii.Number(2),
		})},
	})
	awscdk.NewCfnOutput(st, jsii.String("NotifyFunctionName"), &awscdk.CfnOutputProps{
		Description: jsii.String("Sends the notices of visitors' turns (docs/DEPLOY.md, Notices)"),
		Value:       n.Function.FunctionName(),
	})
	return n
}

// executePath is a route's path as execute-api ARNs name it: a {room} segment is any.
func executePath(path string) *string {
	return jsii.String(regexp.MustCompile(`\{[a-z]+\}`).ReplaceAllString(path, "*"))
}
