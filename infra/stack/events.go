package stack

import (
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogsdestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
)

// Forwarder is the function that puts the events the others log on the bus (functions/forwarder).
const Forwarder = "forwarder"

// EventFunctions are the functions whose stdout carries event lines (eventbus.Emitters, which
// says which kinds each emits): admit's ticks, scheduled changes and booking sweep, enqueue's and
// poll's request-driven ticks, consume's consumes and completes (and the edge gate's enter and
// leave), booking's orders and event audits, admin's room changes. status emits none.
var EventFunctions = func() []string {
	var names []string
	for _, e := range eventbus.Emitters() {
		names = append(names, e.Function)
	}
	return names
}()

// Events is the delivery of Vestibule's events to EventBridge: the functions in the VPC write
// them as JSON lines to CloudWatch Logs, a subscription filter on each of their log groups hands
// the matching lines to the forwarder outside the VPC, and it puts them on the bus. Nothing here
// costs anything while no event flows: a custom bus, subscription filters and an idle function
// are free (docs/DEPLOY.md, "Events").
type Events struct {
	Bus       awsevents.EventBus
	Forwarder awslambda.Function
	// DeadLetters keeps the batches the forwarder failed on after Lambda's retries (14 days):
	// events that did not reach the bus, with the ForwarderDeadLetters alarm on them.
	DeadLetters awssqs.Queue
	Filters     map[string]awslogs.SubscriptionFilter // by function name
}

// eventsProps are what the events are built from: the functions whose logs carry them.
type eventsProps struct {
	Settings  Settings
	Functions map[string]awslambda.Function
	Retention awslogs.RetentionDays
}

// newEvents defines the bus, the forwarder and the subscription filters on the log groups of
// EventFunctions.
func newEvents(st awscdk.Stack, p *eventsProps) *Events {
	ev := &Events{Filters: map[string]awslogs.SubscriptionFilter{}}
	// A custom bus: its name is the stack's (unique in the region), so two stages get two buses.
	ev.Bus = awsevents.NewEventBus(st, jsii.String("EventBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(*st.StackName() + "-events"),
		Description:  jsii.String("Vestibule: admission and order events (docs/API.md, Events)"),
	})
	// The forwarder's own log group has no subscription, so nothing it writes is forwarded again.
	logs := awslogs.NewLogGroup(st, jsii.String("ForwarderLogs"), &awslogs.LogGroupProps{
		Retention:     p.Retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// A batch still failing after the retries lands here instead of being dropped, so no event is
	// lost unseen: the alarm fires, and the message (the CloudWatch Logs event, as the forwarder
	// got it) can be sent to the forwarder again (docs/DEPLOY.md, "Events"). An empty queue costs
	// nothing.
	ev.DeadLetters = awssqs.NewQueue(st, jsii.String("ForwarderDeadLetterQueue"), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	ev.Forwarder = awslambda.NewFunction(st, jsii.String("ForwarderFunction"), quietPlatformLogs(&awslambda.FunctionProps{
		Description:  jsii.String("Vestibule " + Forwarder + ": events from the functions' logs to the bus"),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(p.Settings.AssetDir, Forwarder)), nil),
		MemorySize:   jsii.Number(128),
		// PutEvents calls, with up to three retries of refused entries (0.7 s of back-off) each.
		Timeout: awscdk.Duration_Seconds(jsii.Number(30)),
		// Outside the VPC: it reaches EventBridge's public endpoint without a NAT or an interface
		// endpoint, and it needs neither Redis nor a secret.
		// It takes events only from the log groups of EventFunctions, of each only the kinds its
		// function emits.
		Environment: &map[string]*string{eventbus.EnvBus: ev.Bus.EventBusArn(), eventbus.EnvLogGroups: eventLogGroups(p.Functions)},
		LogGroup:    logs,
		// CloudWatch Logs invokes it asynchronously: a failed batch is retried twice, then kept in
		// the dead-letter queue.
		RetryAttempts:   jsii.Number(2),
		DeadLetterQueue: ev.DeadLetters,
	}))
	ownLogsOnly(ev.Forwarder, logs, false)
	// events:PutEvents on this bus, and nothing else.
	ev.Bus.GrantPutEventsTo(ev.Forwarder, nil)

	dest := awslogsdestinations.NewLambdaDestination(ev.Forwarder, &awslogsdestinations.LambdaDestinationOptions{AddPermissions: jsii.Bool(true)})
	for _, name := range EventFunctions {
		ev.Filters[name] = awslogs.NewSubscriptionFilter(st, jsii.String(title(name)+"Events"), &awslogs.SubscriptionFilterProps{
			LogGroup:      p.Functions[name].LogGroup(),
			Destination:   dest,
			FilterPattern: awslogs.FilterPattern_Literal(jsii.String(eventbus.FilterPattern())),
		})
	}
	awscdk.NewCfnOutput(st, jsii.String("EventBusArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("The bus of admission and order events: add rules to it (docs/API.md, Events)"),
		Value:       ev.Bus.EventBusArn(),
	})
	return ev
}

// eventLogGroups is the forwarder's VESTIBULE_EVENT_LOG_GROUPS: function=log-group of each of
// EventFunctions, comma-separated (eventbus.ParseLogGroups), so that the forwarder puts on the bus
// only the kinds of event the function of a line's log group emits.
func eventLogGroups(fns map[string]awslambda.Function) *string {
	pairs := make([]*string, len(EventFunctions))
	for i, name := range EventFunctions {
		pairs[i] = awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String(name + "="), fns[name].LogGroup().LogGroupName()})
	}
	return awscdk.Fn_Join(jsii.String(","), &pairs)
}
