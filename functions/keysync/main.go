// Command keysync is the Lambda that copies the three Secrets Manager secrets
// (ticket, entry key, origin) into the stack's keys object, which the API
// functions read at cold start through the VPC's S3 gateway endpoint
// (internal/keysync). CloudFormation runs it as a custom resource when a
// deploy creates the stack or pins a new origin-secret version, before the
// distribution changes; after every rotation of a secret an operator invokes
// it by hand (docs/OPERATING.md, "Rotate a secret"):
//
//	aws lambda invoke --function-name <KeySyncFunctionName> /dev/stdout
//
// Environment: TICKET_SECRET_ARN, ENTRY_KEY_SECRET_ARN, ORIGIN_SECRET_ARN,
// NOTICE_SECRET_ARN (of which it copies only the public keys) and KEYS_OBJECT
// (bucket/key). It lives outside the VPC, where Secrets Manager is
// reachable without an endpoint. It logs and returns no secret value, only the
// entry keys' public kids.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vestibule-dev/vestibule/internal/awsenv"
	"github.com/vestibule-dev/vestibule/internal/awsenv/secrets"
	"github.com/vestibule-dev/vestibule/internal/cfnwrap"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/keysync"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// target is what one run works on: from the custom resource's properties, or
// from the environment for a manual invocation.
type target struct {
	object keysync.Object
	arns   token.SecretARNs
}

func fromEnv() (target, error) {
	return newTarget(os.Getenv(config.EnvKeysObject), token.SecretARNs{
		Ticket: os.Getenv(config.EnvTicketSecretARN),
		Entry:  os.Getenv(config.EnvEntryKeySecretARN),
		Origin: os.Getenv(config.EnvOriginSecretARN),
		Notice: os.Getenv(config.EnvNoticeSecretARN),
	})
}

func fromProperties(p map[string]any) (target, error) {
	s := func(k string) string { v, _ := p[k].(string); return v }
	return newTarget(s("KeysObject"), token.SecretARNs{Ticket: s("TicketSecretArn"), Entry: s("EntrySecretArn"), Origin: s("OriginSecretArn"),
		Notice: s("NoticeSecretArn")})
}

func newTarget(object string, arns token.SecretARNs) (target, error) {
	o, err := keysync.ParseObject(object)
	if err != nil {
		return target{}, fmt.Errorf("keysync: %s: %w", config.EnvKeysObject, err)
	}
	if arns.Ticket == "" || arns.Entry == "" {
		return target{}, fmt.Errorf("keysync: %s and %s are required", config.EnvTicketSecretARN, config.EnvEntryKeySecretARN)
	}
	return target{object: o, arns: arns}, nil
}

type clients struct {
	sm *secretsmanager.Client
	s3 *s3.Client
}

func newClients(ctx context.Context) (clients, error) {
	cfg, err := awsenv.Config()
	if err != nil {
		return clients{}, err
	}
	return clients{sm: secrets.NewClient(cfg), s3: s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = awsenv.Endpoint("S3", o.BaseEndpoint)
	})}, nil
}

func sync(ctx context.Context, t target) (keysync.Result, error) {
	c, err := newClients(ctx)
	if err != nil {
		return keysync.Result{}, err
	}
	return keysync.Sync(ctx, c.sm, c.s3, t.object, t.arns)
}

// custom is the custom resource: Create and Update sync; Delete removes the
// object, so the keys bucket is empty when the stack deletes it (and no copy
// of a secret outlives the stack).
func custom(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
	t, err := fromProperties(ev.ResourceProperties)
	if err != nil {
		return ev.PhysicalResourceID, nil, err
	}
	id := t.object.String()
	if ev.RequestType == cfn.RequestDelete {
		c, err := newClients(ctx)
		if err != nil {
			return ev.PhysicalResourceID, nil, err
		}
		return ev.PhysicalResourceID, nil, keysync.Delete(ctx, c.s3, t.object)
	}
	r, err := sync(ctx, t)
	if err != nil {
		return id, nil, err
	}
	return id, map[string]any{"EntryKid": r.Entry[0]}, nil
}

// syncEnv syncs the environment's secrets and returns the result.
func syncEnv(ctx context.Context) (any, error) {
	t, err := fromEnv()
	if err != nil {
		return nil, err
	}
	return sync(ctx, t)
}

func main() { lambda.Start(cfnwrap.Handler(custom, syncEnv)) }
