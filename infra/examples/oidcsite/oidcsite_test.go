package oidcsite_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/examples/oidcsite"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func props() *oidcsite.Props {
	return &oidcsite.Props{
		StackProps:      awscdk.StackProps{Env: &awscdk.Environment{Region: jsii.String("eu-west-1")}},
		ListenerArn:     "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/tickets/50dc6c495c0c9188/f2f7dc8efc522ab2",
		TargetGroupArn:  "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/tickets/73e2d6bc24d8a067",
		Priority:        5,
		Room:            "spring-tour",
		SessionSeconds:  900,
		WaitingRoomURL:  "https://queue.example.com/",
		ClientSecretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:spring-tour-oidc-AbCdEf",
	}
}

func TestASitesALBBehindTheRoom(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: synthesizing the site's stack runs in the CDK's node process; make test runs it")
	}
	// GIVEN a site's own stack that adds the room's sign-in to its ALB listener
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	site, err := oidcsite.New(app, "TicketsSite", props())
	if err != nil {
		t.Fatal(err)
	}
	// WHEN it is synthesized
	tmpl := assertions.Template_FromStack(site.Stack, nil)
	// THEN the listener gets one rule: the room's endpoints, the secret by reference, the
	// session of the room, then the site's target group
	iss := "https://queue.example.com/oidc/spring-tour"
	tmpl.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::ListenerRule"), &map[string]any{
		"ListenerArn": props().ListenerArn,
		"Priority":    5,
		"Conditions":  []any{map[string]any{"Field": "path-pattern", "PathPatternConfig": map[string]any{"Values": []any{"/*"}}}},
		"Actions": []any{
			map[string]any{"Type": "authenticate-oidc", "Order": 1, "AuthenticateOidcConfig": map[string]any{
				"Issuer": iss, "AuthorizationEndpoint": iss + "/authorize", "TokenEndpoint": iss + "/token",
				"UserInfoEndpoint": iss + "/userinfo", "ClientId": "spring-tour",
				"ClientSecret":             "{{resolve:secretsmanager:" + props().ClientSecretArn + ":SecretString:::}}",
				"Scope":                    "openid",
				"SessionTimeout":           900,
				"OnUnauthenticatedRequest": "authenticate",
			}},
			map[string]any{"Type": "forward", "Order": 2, "TargetGroupArn": props().TargetGroupArn},
		},
	})
	tmpl.ResourceCountIs(jsii.String("AWS::ElasticLoadBalancingV2::ListenerRule"), jsii.Number(1))
	// AND cfn-lint finds nothing wrong with it
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		testkit.Missing(t, "cfn-lint", "make deps-cfn-lint installs it")
	}
	b, _ := json.Marshal(tmpl.ToJSON())
	p := filepath.Join(t.TempDir(), "site.template.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(lint, "--format", "parseable", "--regions", "eu-west-1", "--", p).CombinedOutput(); err != nil {
		t.Errorf("cfn-lint: %v\n%s", err, out)
	}
}

func TestOIDCRuleRefusesBadProps(t *testing.T) {
	for name, edit := range map[string]func(*oidcsite.Props){
		"room":     func(p *oidcsite.Props) { p.Room = "spring tour" },
		"listener": func(p *oidcsite.Props) { p.ListenerArn = "listener" },
		"secret":   func(p *oidcsite.Props) { p.ClientSecretArn = "my-secret" },
		"session":  func(p *oidcsite.Props) { p.SessionSeconds = 0 },
		"priority": func(p *oidcsite.Props) { p.Priority = 0 },
		"no URL":   func(p *oidcsite.Props) { p.WaitingRoomURL = "" },
	} {
		// GIVEN bad props WHEN the site is defined THEN NewOIDCListenerRule says which setting
		p := props()
		edit(p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := oidcsite.New(app, "TicketsSite", p); !errors.Is(err, stack.ErrBadSetting) {
			t.Errorf("%s: err %v, want ErrBadSetting", name, err)
		}
	}
}
