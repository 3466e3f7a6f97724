package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	cloudfronttypes "github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/gateattach"
	"github.com/vestibule-dev/vestibule/internal/gateattach/gateattachtest"
)

// The detailed recorded-API tests of attach and detach are internal/gateattach's; these are the
// command's: its arguments, what it reads from the Vestibule stack, and one run of each verb
// against the loopback CloudFront (gateattachtest).

type fakeStacks map[string]string

func (f fakeStacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	var s cftypes.Stack
	for k, v := range f {
		s.Outputs = append(s.Outputs, cftypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{s}}, nil
}

// fakeSecrets: ARN -> AWSCURRENT value.
type fakeSecrets map[string]string

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	v, ok := f[*in.SecretId]
	if !ok || (in.VersionStage != nil && *in.VersionStage != "AWSCURRENT") {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("no such secret")}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

// noDistribution is a CloudFront that knows no distribution; nothing else may be called.
type noDistribution struct {
	gateattach.CloudFront
	asked []string
}

func (n *noDistribution) GetDistributionConfig(_ context.Context, in *cloudfront.GetDistributionConfigInput, _ ...func(*cloudfront.Options)) (*cloudfront.GetDistributionConfigOutput, error) {
	n.asked = append(n.asked, *in.Id)
	return nil, &cloudfronttypes.NoSuchDistribution{Message: aws.String("The specified distribution does not exist.")}
}

func stackAWS(cf gateattach.CloudFront) gateAWS {
	return gateAWS{
		cf: cf,
		stacks: fakeStacks{
			"WaitingRoomUrl":    "https://d2waiting.cloudfront.net/",
			"ApiUrl":            "https://abc123.execute-api.eu-west-1.amazonaws.com/",
			"EntryKeySecretArn": "arn:entry",
			"OriginSecretArn":   "arn:origin",
		},
		secrets: fakeSecrets{"arn:entry": strings.Repeat("e", 64), "arn:origin": "the-origin-secret"},
	}
}

func TestGateUsage(t *testing.T) {
	old := newGateAWS
	t.Cleanup(func() { newGateAWS = old })
	for _, args := range [][]string{
		{"gate"},
		{"gate", "nope"},
		{"gate", "attach", "--stack", "S", "--room", "r"},
		{"gate", "attach", "--stack", "S", "--distribution", "E2QWRUHAPOMQZL"},
		{"gate", "attach", "--distribution", "E2QWRUHAPOMQZL", "--room", "r"}, // no --stack
		{"gate", "attach", "--stack", "S", "--distribution", "not/an/id", "--room", "r"},
		{"gate", "detach", "--distribution", "E2QWRUHAPOMQZL", "--room", "no spaces"},
		{"gate", "detach", "--distribution", "E2QWRUHAPOMQZL", "--room", "r", "extra"},
	} {
		t.Setenv("VESTIBULE_STACK", "")
		newGateAWS = func(context.Context, *globals) (gateAWS, error) {
			t.Fatalf("%v reached AWS", args)
			return gateAWS{}, nil
		}
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut.String())
		}
	}
}

// attach reads the stack's outputs and secrets and stops at an unknown distribution, exit 1.
func TestGateAttachUnknownDistribution(t *testing.T) {
	cf := &noDistribution{}
	old := newGateAWS
	t.Cleanup(func() { newGateAWS = old })
	newGateAWS = func(context.Context, *globals) (gateAWS, error) { return stackAWS(cf), nil }
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--stack", "Vestibule", "gate", "attach", "--distribution", "E3NOSUCHDIST", "--room", "spring-tour", "--dry-run"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "there is no distribution E3NOSUCHDIST") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if len(cf.asked) != 1 {
		t.Fatalf("asked CloudFront for %v", cf.asked)
	}
}

func TestGateFromStack(t *testing.T) {
	c := &command{g: &globals{}, room: "spring-tour"}
	c.g.target.Stack = "Vestibule"
	c.gate = gateFlags{distribution: "E2QWRUHAPOMQZL", openPaths: " /robots.txt, /static/* ,", behaviours: []string{"/checkout/*"}}
	cl := stackAWS(nil)
	g, err := c.gateFromStack(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := gate.DeriveKey([]byte(strings.Repeat("e", 64)))
	if g.WaitingRoomURL != "https://d2waiting.cloudfront.net/" || g.APIURL != "https://abc123.execute-api.eu-west-1.amazonaws.com/" ||
		g.OriginSecret != "the-origin-secret" || g.Keys[gate.KVSCurrent] != key.ID ||
		strings.Join(g.OpenPaths, " ") != "/robots.txt /static/*" || strings.Join(g.Behaviours, " ") != "/checkout/*" {
		t.Fatalf("gate %+v", g)
	}
	// --origin-secret-file: the stack's secret is not read.
	file := filepath.Join(t.TempDir(), "origin")
	if err := os.WriteFile(file, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.gate.originSecretFile = file
	delete(cl.secrets.(fakeSecrets), "arn:origin")
	if g, err = c.gateFromStack(context.Background(), cl); err != nil || g.OriginSecret != "from-a-file" {
		t.Fatalf("%v %q", err, g.OriginSecret)
	}
	// A stack without the outputs.
	cl.stacks = fakeStacks{"ApiUrl": "https://x.example.com/"}
	if _, err := c.gateFromStack(context.Background(), cl); err == nil || !strings.Contains(err.Error(), "no WaitingRoomUrl output") {
		t.Fatalf("a stack without outputs: %v", err)
	}
}

// The whole command against the loopback CloudFront: a dry run writes nothing and prints the
// diff; attach puts the gate on and says the last step; detach --delete takes it all off.
func TestGateAttachDetach(t *testing.T) {
	const dist = "E2QWRUHAPOMQZL"
	srv := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	kvs := &gateattachtest.MemKVS{}
	cl := stackAWS(srv.Client())
	cl.kvs = kvs
	cl.poll = time.Millisecond
	old := newGateAWS
	t.Cleanup(func() { newGateAWS = old })
	newGateAWS = func(context.Context, *globals) (gateAWS, error) { return cl, nil }
	vestibule := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	out := vestibule("--stack", "Vestibule", "gate", "attach", "--distribution", dist, "--room", "spring-tour",
		"--open-paths", "/robots.txt", "--behaviour", "/checkout/*", "--dry-run")
	if srv.WriteCount() != 0 || !strings.Contains(out, `"PathPattern": "/.vestibule/*"`) || !strings.Contains(out, "dry run: nothing was changed") {
		t.Fatalf("the dry run (%d writes):\n%s", srv.WriteCount(), out)
	}
	if strings.Contains(out, "the-origin-secret") {
		t.Fatal("the dry run shows the origin secret")
	}
	out = vestibule("--stack", "Vestibule", "gate", "attach", "--distribution", dist, "--room", "spring-tour",
		"--open-paths", "/robots.txt", "--behaviour", "/checkout/*")
	if len(srv.Updates) != 1 || !bytes.Contains(srv.Updates[0], []byte("<HeaderValue>the-origin-secret</HeaderValue>")) ||
		!strings.Contains(out, "rooms set spring-tour gate=true") {
		t.Fatalf("attach (%d updates):\n%s", len(srv.Updates), out)
	}
	if len(srv.Funcs) != 2 || len(srv.Stores) != 1 || kvs.Updates != 1 {
		t.Fatalf("attach made %d functions, %d stores, %d key writes", len(srv.Funcs), len(srv.Stores), kvs.Updates)
	}
	out = vestibule("gate", "detach", "--distribution", dist, "--room", "spring-tour", "--delete")
	if len(srv.Updates) != 2 || len(srv.Funcs) != 0 || len(srv.Stores) != 0 {
		t.Fatalf("detach left %d functions, %d stores:\n%s", len(srv.Funcs), len(srv.Stores), out)
	}
	if bytes.Contains(srv.Updates[1], []byte("vestibule")) {
		t.Fatalf("detach left the gate in the config: %s", srv.Updates[1])
	}
}

// Rooms by path through the command: --routes puts the rules in the
// function's code; a rule that is not [HOST]/PREFIX=ROOM, or that the gate
// refuses, is an error before anything is written.
func TestGateAttachRoutes(t *testing.T) {
	const dist = "E2QWRUHAPOMQZL"
	srv := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	cl := stackAWS(srv.Client())
	cl.kvs = &gateattachtest.MemKVS{}
	cl.poll = time.Millisecond
	old := newGateAWS
	t.Cleanup(func() { newGateAWS = old })
	newGateAWS = func(context.Context, *globals) (gateAWS, error) { return cl, nil }
	attach := func(routes string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"--stack", "Vestibule", "gate", "attach", "--distribution", dist, "--room", "site",
			"--routes", routes}, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	for _, bad := range []string{"tickets=tix", "/tickets", "/tickets/=tix", "/a=x,/a=y", "Shop.example.com/a=x"} {
		if code, out := attach(bad); code == 0 || !strings.Contains(out, "route") || srv.WriteCount() != 0 {
			t.Errorf("--routes %q: exit %d, %d writes: %s", bad, code, srv.WriteCount(), out)
		}
	}
	if code, out := attach("/tickets=tix, shop.example.com/merch=merch"); code != 0 {
		t.Fatalf("attach with routes: exit %d: %s", code, out)
	}
	found := false
	for _, fn := range srv.Funcs {
		found = found || bytes.Contains(fn.Dev, []byte(`"routes":[{"h":"","p":"/tickets","r":"tix"},{"h":"shop.example.com","p":"/merch","r":"merch"}]`))
	}
	if !found {
		t.Fatal("no function holds the routes")
	}
}
