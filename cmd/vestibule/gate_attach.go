package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/gateattach"
	"github.com/vestibule-dev/vestibule/internal/gatekeys"
	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// vestibule gate attach / detach: the edge gate on a CloudFront distribution the team already has
// and does not manage with the CDK (docs/GATE.md, "Attaching the gate to a distribution you
// already have"). The work is internal/gateattach's; this reads the Vestibule stack's outputs and
// secrets and builds the AWS clients.

// The Vestibule stack's outputs attach reads.
const (
	outWaitingRoomURL = "WaitingRoomUrl"
	outEntrySecretARN = "EntryKeySecretArn"
	outOriginSecret   = "OriginSecretArn"
)

// gateFlags are attach's and detach's own flags.
type gateFlags struct {
	distribution     string
	openPaths        string
	routes           string
	behaviours       []string
	originSecretFile string
	dryRun, delete   bool
}

// gateAWS are the AWS APIs attach and detach use.
type gateAWS struct {
	cf      gateattach.CloudFront
	kvs     gatekeys.Store
	secrets token.SecretsGetter
	stacks  operator.StackOutputs
	poll    time.Duration // between looks at a store or a deployment; 0: gateattach's
}

// newGateAWS builds the clients from the standard configuration (a variable for the tests).
var newGateAWS = func(ctx context.Context, g *globals) (gateAWS, error) {
	cfg, err := operator.LoadAWS(ctx, g.target.Profile, g.target.Region)
	if err != nil {
		return gateAWS{}, err
	}
	if cfg.Region == "" {
		return gateAWS{}, errors.New("no AWS region: pass --region (the Vestibule stack's), or set AWS_REGION")
	}
	return gateAWS{
		cf:      cloudfront.NewFromConfig(cfg),
		kvs:     cloudfrontkeyvaluestore.NewFromConfig(cfg),
		secrets: secretsmanager.NewFromConfig(cfg),
		stacks:  cloudformation.NewFromConfig(cfg),
	}, nil
}

// gateAttach runs `vestibule gate attach --distribution ID --room ROOM`.
func (c *command) gateAttach(ctx context.Context, pos []string) error {
	if err := c.gateArgs(pos, "attach"); err != nil {
		return err
	}
	if c.g.target.Stack == "" {
		return usageError("gate attach needs --stack NAME: the Vestibule stack whose waiting room, API and secrets the gate uses")
	}
	cl, err := newGateAWS(ctx, c.g)
	if err != nil {
		return err
	}
	g, err := c.gateFromStack(ctx, cl)
	if err != nil {
		return err
	}
	a := &gateattach.Attacher{CF: cl.cf, KVS: cl.kvs, Out: c.stdout, DryRun: c.gate.dryRun, Poll: cl.poll}
	if err := a.Attach(ctx, g); err != nil {
		return err
	}
	if c.gate.dryRun {
		c.out.Println("dry run: nothing was changed")
		return nil
	}
	c.out.Printf("\nThe gate is on distribution %s. Last step, once it is deployed (a few minutes):\n"+
		"  vestibule --stack %s rooms set %s gate=true originUrl=https://<the site's host>/\n", g.Distribution, c.g.target.Stack, g.Room)
	return nil
}

// gateDetach runs `vestibule gate detach --distribution ID --room ROOM [--delete]`.
func (c *command) gateDetach(ctx context.Context, pos []string) error {
	if err := c.gateArgs(pos, "detach"); err != nil {
		return err
	}
	cl, err := newGateAWS(ctx, c.g)
	if err != nil {
		return err
	}
	a := &gateattach.Attacher{CF: cl.cf, KVS: cl.kvs, Out: c.stdout, DryRun: c.gate.dryRun, Poll: cl.poll}
	if err := a.Detach(ctx, c.gate.distribution, c.room, c.gate.delete); err != nil {
		return err
	}
	if c.gate.dryRun {
		c.out.Println("dry run: nothing was changed")
	}
	return nil
}

// gateArgs checks the arguments both commands need.
func (c *command) gateArgs(pos []string, verb string) error {
	switch {
	case len(pos) > 0:
		return usageError(fmt.Sprintf("gate %s takes no arguments but flags (%q)", verb, pos[0]))
	case c.gate.distribution == "":
		return usageError(fmt.Sprintf("gate %s needs --distribution ID (the site's CloudFront distribution)", verb))
	case c.room == "":
		return usageError(fmt.Sprintf("gate %s needs --room ROOM (the room that guards the site)", verb))
	}
	if _, err := gateattach.NamesFor(c.gate.distribution, c.room); err != nil {
		return usageError(err.Error())
	}
	return nil
}

// gateOutputs reads the stack's outputs gate attach and gate serve need: the waiting room's
// URL, the API's, the entry key's secret and, without --origin-secret-file, the origin secret's.
func (c *command) gateOutputs(ctx context.Context, cl gateAWS) (map[string]string, error) {
	stack := c.g.target.Stack
	outputs, err := operator.ReadStackOutputs(ctx, cl.stacks, stack)
	if err != nil {
		return nil, err
	}
	need := []string{outWaitingRoomURL, operator.ApiURLOutput, outEntrySecretARN}
	if c.gate.originSecretFile == "" {
		need = append(need, outOriginSecret)
	}
	for _, k := range need {
		if outputs[k] == "" {
			return nil, fmt.Errorf("the stack %q has no %s output: is it a Vestibule stack, deployed?", stack, k)
		}
	}
	return outputs, nil
}

// gateFromStack assembles what attach needs from the stack's outputs and secrets.
func (c *command) gateFromStack(ctx context.Context, cl gateAWS) (gateattach.Gate, error) {
	outputs, err := c.gateOutputs(ctx, cl)
	if err != nil {
		return gateattach.Gate{}, err
	}
	keys, err := gatekeys.Load(ctx, cl.secrets, outputs[outEntrySecretARN])
	if err != nil {
		return gateattach.Gate{}, fmt.Errorf("the gate's keys (from the entry-key secret): %w", err)
	}
	var secret string
	if f := c.gate.originSecretFile; f != "" {
		raw, err := os.ReadFile(f)
		if err != nil {
			return gateattach.Gate{}, err
		}
		secret = strings.TrimSpace(string(raw))
	} else {
		arn := outputs[outOriginSecret]
		v, err := cl.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
		if err != nil {
			return gateattach.Gate{}, fmt.Errorf("the origin secret: %w (or pass --origin-secret-file)", err)
		}
		secret = aws.ToString(v.SecretString)
	}
	g := gateattach.Gate{
		Distribution:   c.gate.distribution,
		Room:           c.room,
		WaitingRoomURL: outputs[outWaitingRoomURL],
		APIURL:         outputs[operator.ApiURLOutput],
		OriginSecret:   secret,
		Keys:           keys.Entries(),
		Behaviours:     c.gate.behaviours,
	}
	for p := range strings.SplitSeq(c.gate.openPaths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			g.OpenPaths = append(g.OpenPaths, p)
		}
	}
	if g.Routes, err = gate.ParseRoutes(c.gate.routes); err != nil {
		return gateattach.Gate{}, usageError(err.Error())
	}
	return g, nil
}
