// Command forwarder puts Vestibule's events on the stack's EventBridge bus.
// The functions in the VPC write each event as a JSON line to stdout
// (package eventbus); a CloudWatch Logs subscription filter on their log
// groups (eventbus.FilterPattern) invokes this function with the matching
// lines, and it calls PutEvents (eventbus.Bus.Forward): ten entries and at
// most 256 KiB a call, refused entries retried alone, what still fails
// reported and the batch failed so Lambda retries it. It runs outside the
// VPC, so it reaches EventBridge without a NAT or an interface endpoint; it
// needs no Redis and no secret. It takes events only from the log groups
// VESTIBULE_EVENT_LOG_GROUPS names (the stack names those of the functions
// that emit events, each with its function), and of each only the kinds of
// event its function emits (eventbus.Emitters). Its own log group has no subscription, and
// its log lines carry no "source" field, so nothing it writes is forwarded.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/vestibule-dev/vestibule/internal/awsenv"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/eventbus/putevents"
)

func main() {
	bus := os.Getenv(eventbus.EnvBus)
	if bus == "" {
		fail(fmt.Errorf("%s is not set: the bus to put events on", eventbus.EnvBus))
	}
	cfg, err := awsenv.Config()
	if err != nil {
		fail(fmt.Errorf("aws config: %w", err))
	}
	groups, err := eventbus.ParseLogGroups(os.Getenv(eventbus.EnvLogGroups))
	if err != nil {
		fail(err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	lambda.Start(eventbus.NewBus(putevents.Client(eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) {
		o.BaseEndpoint = awsenv.Endpoint("EventBridge", o.BaseEndpoint)
	})), bus, eventbus.WithLogger(log), eventbus.WithLogGroups(groups)).Forward)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "forwarder: start-up failed: %s\n", err)
	os.Exit(1)
}
