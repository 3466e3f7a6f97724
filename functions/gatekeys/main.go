// Command gatekeys is the Lambda that writes the edge gate's keys to its
// CloudFront KeyValueStore (internal/gatekeys). CloudFormation runs it as a
// custom resource when a deploy creates the gate (or changes its store or
// secret); after every change of the entry-key secret an operator invokes it
// by hand (docs/GATE.md):
//
//	aws lambda invoke --function-name <GateKeysFunction> /dev/stdout
//
// Environment: ENTRY_KEY_SECRET_ARN (the entry-key secret) and GATE_KVS_ARN
// (the store). It lives outside the VPC: the KeyValueStore API has no VPC
// endpoint.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"

	"github.com/vestibule-dev/vestibule/internal/awsenv"
	"github.com/vestibule-dev/vestibule/internal/awsenv/secrets"
	"github.com/vestibule-dev/vestibule/internal/cfnwrap"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/gatekeys"
)

func sync(ctx context.Context) (gatekeys.Result, error) {
	secret, store := os.Getenv(config.EnvEntryKeySecretARN), os.Getenv(config.EnvGateKVSARN)
	if secret == "" || store == "" {
		return gatekeys.Result{}, fmt.Errorf("gatekeys: %s and %s are required", config.EnvEntryKeySecretARN, config.EnvGateKVSARN)
	}
	cfg, err := awsenv.Config()
	if err != nil {
		return gatekeys.Result{}, err
	}
	keys, err := gatekeys.Load(ctx, secrets.NewClient(cfg), secret)
	if err != nil {
		return gatekeys.Result{}, err
	}
	return gatekeys.Sync(ctx, cloudfrontkeyvaluestore.NewFromConfig(cfg, func(o *cloudfrontkeyvaluestore.Options) {
		o.BaseEndpoint = awsenv.Endpoint("CloudFront KeyValueStore", o.BaseEndpoint)
	}), store, keys.Entries())
}

// custom is the custom resource: Create and Update sync; Delete does nothing
// (the store goes with the stack).
func custom(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
	id := "vestibule-gate-keys"
	if ev.RequestType == cfn.RequestDelete {
		return ev.PhysicalResourceID, nil, nil
	}
	r, err := sync(ctx)
	if err != nil {
		return id, nil, err
	}
	return id, map[string]any{"Current": r.Current}, nil
}

func main() {
	lambda.Start(cfnwrap.Handler(custom, func(ctx context.Context) (any, error) { return sync(ctx) }))
}
