// Command notify tells visitors who looked away that it is their turn
// (docs/ENGINE.md, "Notices"). An EventBridge rule on the stack's bus sends
// it the admission.tick events whose count of notices due is above 0; for
// the event's room it takes the due notices through the API's admin route
// (signed with its role: it needs no Redis, so it runs outside the VPC,
// where the push services and SES are reachable), opens each address with
// the notice secret's key (Secrets Manager), sends a web push or an email
// through SES, and acks each with its outcome (package notice/send). It logs
// rooms, sequences and outcomes, never an address.
//
// Environment: NOTICE_SECRET_ARN, NOTICE_API_URL, NOTICE_PAGE_URL,
// NOTICE_FROM (the SES sender; empty: no email), NOTICE_PUSH_HOSTS.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/vestibule-dev/vestibule/internal/awsenv"
	"github.com/vestibule-dev/vestibule/internal/awsenv/secrets"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/notice/send"
)

func main() {
	env, err := send.ReadEnv(os.Getenv)
	if err != nil {
		fail(err)
	}
	cfg, err := awsenv.Config()
	if err != nil {
		fail(fmt.Errorf("aws config: %w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	keys, err := send.Keys(ctx, secrets.NewClient(cfg), env.SecretARN)
	cancel()
	if err != nil {
		fail(err)
	}
	s := &send.Sender{Opener: notice.NewOpener(keys...), Page: env.Page, From: env.From,
		Policy: notice.Policy{Push: true, Email: env.From != "", PushHosts: env.PushHosts}}
	if env.From != "" {
		s.Mail = sesv2.NewFromConfig(cfg, func(o *sesv2.Options) { o.BaseEndpoint = awsenv.Endpoint("SESv2", o.BaseEndpoint) })
	}
	f := &send.Function{Sender: s, Log: slog.New(slog.NewJSONHandler(os.Stdout, nil)),
		Queue: &send.APIQueue{Base: env.API, Authorize: send.SigV4(cfg.Credentials, cfg.Region)}}
	lambda.Start(f.Handle)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "notify: start-up failed: %s\n", err)
	os.Exit(1)
}
