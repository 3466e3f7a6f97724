package gatesite_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/examples/gatesite"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
)

func props(t *testing.T) *gatesite.Props {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return &gatesite.Props{
		StackProps: awscdk.StackProps{Env: &awscdk.Environment{Region: jsii.String("eu-west-1")}},
		SiteOrigin: "origin.tickets.example.com", Room: "spring-tour", OpenPaths: []string{"/assets/*"},
		WaitingRoomURL:    "https://queue.example.com/",
		APIHost:           "api.queue.example.com",
		EntryKeySecretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:EntryKeySecret-AbCdEf",
		OriginSecretArn:   "arn:aws:secretsmanager:eu-west-1:123456789012:secret:OriginSecret-GhIjKl",
		GateKeysDir:       dir,
	}
}

func TestATeamsDistributionBehindTheGate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: synthesizing the site's stack runs in the CDK's node process; make test runs it")
	}
	// GIVEN a booking site's own stack that adds the gate to its distribution
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	site, err := gatesite.New(app, "TicketsSite", props(t))
	if err != nil {
		t.Fatal(err)
	}
	// WHEN it is synthesized
	tmpl := assertions.Template_FromStack(site.Stack, nil)
	b, _ := json.Marshal(tmpl.ToJSON())
	var raw struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
			DependsOn  []string
		}
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var dist map[string]any
	var distDeps []string
	var gateFn, sync, store string
	for id, r := range raw.Resources {
		switch r.Type {
		case "AWS::CloudFront::Distribution":
			dist, distDeps = r.Properties["DistributionConfig"].(map[string]any), r.DependsOn
		case "AWS::CloudFront::Function":
			if strings.Contains(r.Properties["Name"].(string), "GateFunction") {
				gateFn = id
			}
		case "Custom::VestibuleGateKeys":
			sync = id
			if r.Properties["ServiceTimeout"] == nil {
				t.Error("the key sync has no ServiceTimeout")
			}
		case "AWS::CloudFront::KeyValueStore":
			store = id
			if n, _ := json.Marshal(r.Properties["Name"]); !strings.Contains(string(n), "TicketsSite-eu-west-1-gate-keys") {
				t.Errorf("store name %s, want the stack's and region's", n)
			}
		}
	}
	if dist == nil || gateFn == "" || sync == "" || store == "" {
		t.Fatalf("distribution %v, gate function %q, key sync %q, store %q", dist != nil, gateFn, sync, store)
	}
	// THEN the site's default behaviour runs the gate at viewer request
	fa, _ := json.Marshal(dist["DefaultCacheBehavior"].(map[string]any)["FunctionAssociations"])
	if !strings.Contains(string(fa), `"viewer-request"`) || !strings.Contains(string(fa), gateFn) {
		t.Errorf("default behaviour's functions %s, want the gate", fa)
	}
	// and /.vestibule/* goes to the Vestibule API with the origin header, resolved from the secret
	var target string
	for _, cb := range dist["CacheBehaviors"].([]any) {
		if cb.(map[string]any)["PathPattern"] == "/.vestibule/*" {
			target = cb.(map[string]any)["TargetOriginId"].(string)
		}
	}
	found := false
	for _, o := range dist["Origins"].([]any) {
		o := o.(map[string]any)
		if o["Id"] != target {
			continue
		}
		found = o["DomainName"] == "api.queue.example.com"
		h, _ := json.Marshal(o["OriginCustomHeaders"])
		if !strings.Contains(string(h), config.OriginHeader) || !strings.Contains(string(h), "{{resolve:secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:OriginSecret-GhIjKl:SecretString:::}}") {
			t.Errorf("API origin headers %s", h)
		}
	}
	if !found {
		t.Errorf("/.vestibule/* goes to origin %q, not the API", target)
	}
	// and the distribution waits for the keys
	if !strings.Contains(strings.Join(distDeps, ","), sync) {
		t.Errorf("distribution depends on %v, not the key sync %s", distDeps, sync)
	}
}

func TestEdgeGateRefusesBadProps(t *testing.T) {
	for name, edit := range map[string]func(*gatesite.Props){
		"room":      func(p *gatesite.Props) { p.Room = "spring tour" },
		"open path": func(p *gatesite.Props) { p.OpenPaths = []string{"no-slash"} },
		"no URL":    func(p *gatesite.Props) { p.WaitingRoomURL = "" },
	} {
		// GIVEN bad props WHEN the site is defined THEN NewEdgeGate says which setting
		p := props(t)
		edit(p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := gatesite.New(app, "TicketsSite", p); !errors.Is(err, stack.ErrBadSetting) {
			t.Errorf("%s: err %v, want ErrBadSetting", name, err)
		}
	}
}
