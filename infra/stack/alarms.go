package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/metrics"
)

// APIThrottled is the custom metric (namespace metrics.Namespace, dimension Stack) that a
// metric filter on the access log counts: requests API Gateway answered 429 itself, without
// calling a function, because the stage's rate or burst limit was reached. The HTTP API's own
// metrics only count them among all 4xx.
const APIThrottled = "ApiThrottled"

// Alarms are the alarms that say a waiting room is not working, the topic they notify, and the
// dashboard of the metrics they watch.
type Alarms struct {
	Topic     awssns.Topic
	Dashboard awscloudwatch.Dashboard
	st        awscdk.Stack
	action    awscloudwatch.IAlarmAction
}

// alarmsProps are what the alarms watch.
type alarmsProps struct {
	Settings   Settings
	Functions  map[string]awslambda.Function
	API        awsapigatewayv2.HttpApi
	AccessLogs awslogs.LogGroup // the API's, where API Gateway's own throttling shows
	// DeadLetters is the events' forwarder's dead-letter queue (events.go).
	DeadLetters awssqs.Queue
	// ServerlessCacheName is the serverless cache's name; "" with cache=nodes (no cache alarms).
	ServerlessCacheName string
	// Notify is the notices' function (notify.go); nil when the stack sends none.
	Notify *Notify
}

// minute is the period of every metric but the dead letters'.
func minute() awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(1)) }

// sumPerMinute are the metric options of a count.
func sumPerMinute() *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Sum")}
}

// newAlarms creates the topic, the alarms and the dashboard.
func newAlarms(st awscdk.Stack, p *alarmsProps) *Alarms {
	a := &Alarms{st: st, Topic: newAlarmTopic(st, p.Settings)}
	a.action = awscloudwatchactions.NewSnsAction(a.Topic)
	d := &dashboardMetrics{}
	a.functionAlarms(p.Functions, d)
	a.admitNotRunning(p.Functions[Admit], d)
	a.forwarderDeadLetters(p.DeadLetters)
	if p.Notify != nil {
		a.notifyFailing(p.Notify, d)
	}
	a.redisErrors(d)
	a.apiAlarms(p, d)
	if p.ServerlessCacheName != "" {
		a.cacheAlarms(p.ServerlessCacheName, p.Settings, d)
	}
	a.Dashboard = newDashboard(st, p.API, d)
	return a
}

// newAlarmTopic creates the SNS topic the alarms notify, subscribes Settings.AlarmEmail, and
// outputs its ARN.
func newAlarmTopic(st awscdk.Stack, set Settings) awssns.Topic {
	topic := awssns.NewTopic(st, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("Vestibule alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	// With enforceSSL the topic gets a policy of its own (a Deny of plain HTTP), and a topic
	// policy replaces SNS's default one, which is what let the account's services publish: without
	// this Allow, CloudWatch's notifications would be refused and no alarm would ever arrive.
	// aws:SourceAccount keeps it to the alarms of this account (the confused-deputy guard).
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Effect:     awsiam.Effect_ALLOW,
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{topic.TopicArn()},
		Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": st.Account()}},
	}))
	if set.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(set.AlarmEmail), nil))
	}
	awscdk.NewCfnOutput(st, jsii.String("AlarmsTopicArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("Subscribe to this SNS topic to hear about the alarms"),
		Value:       topic.TopicArn(),
	})
	return topic
}

// alarm creates the alarm id on m, notifying the topic when it fires and when it is OK again.
func (a *Alarms) alarm(id string, m awscloudwatch.IMetric, props awscloudwatch.AlarmProps) {
	props.Metric = m
	al := awscloudwatch.NewAlarm(a.st, jsii.String(id), &props)
	al.AddAlarmAction(a.action)
	al.AddOkAction(a.action)
}

// atLeast are the props of an alarm on threshold or more for periods minutes, no data being fine.
func atLeast(description string, threshold, periods float64) awscloudwatch.AlarmProps {
	return awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String(description),
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(periods),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	}
}

// functionAlarms alarms on every function's errors and throttles.
func (a *Alarms) functionAlarms(fns map[string]awslambda.Function, d *dashboardMetrics) {
	for _, f := range Functions {
		fn := fns[f.Name]
		errs := fn.MetricErrors(sumPerMinute())
		thr := fn.MetricThrottles(sumPerMinute())
		// A handler answers client faults and Redis outages with a response, so a Lambda error is a
		// crash or a timeout: one is worth a look. For admit it means ticks failed.
		a.alarm(title(f.Name)+"Errors", errs, atLeast(fmt.Sprintf("Vestibule %s: invocations failed", f.Name), 1, 1))
		// admit, with a reserved concurrency of 1 (admitReservedConcurrency), may see a throttle
		// when EventBridge fires early while the previous minute is finishing; a throttled minute is
		// made up by the next one, so for admit only a throttle minute after minute is a problem.
		periods := 1.0
		if f.Reserved > 0 || f.Name == Admit {
			periods = 3
		}
		a.alarm(title(f.Name)+"Throttles", thr,
			atLeast(fmt.Sprintf("Vestibule %s: invocations throttled (concurrency limit)", f.Name), 1, periods))
		d.errors = append(d.errors, errs)
		d.throttles = append(d.throttles, thr)
		d.duration = append(d.duration, fn.MetricDuration(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("p99")}))
	}
}

// admitNotRunning alarms on no admission at all, the failure nobody sees: visitors just wait. The
// schedule fires every minute, so three minutes without an invocation (or without data) means it
// stopped.
func (a *Alarms) admitNotRunning(admit awslambda.Function, d *dashboardMetrics) {
	d.admit = admit.MetricInvocations(sumPerMinute())
	a.alarm("AdmitNotRunning", d.admit, awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("Vestibule admit: not invoked for 3 minutes, nobody is being admitted"),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(3),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
	})
}

// notifyFailing alarms on the notify function's failures: a run that could not take a room's
// notices (the API unreachable, a role that may not call it) is an error, and the visitors who
// asked are not told. A send that fails is no error (it is tried again within the claim window),
// so one error is worth a look.
func (a *Alarms) notifyFailing(n *Notify, d *dashboardMetrics) {
	errs := n.Function.MetricErrors(sumPerMinute())
	a.alarm("NotifyErrors", errs, atLeast("Vestibule notify: runs failed, notices of visitors' turns are not going out", 1, 1))
	d.errors = append(d.errors, errs)
}

// forwarderDeadLetters alarms on events the forwarder could not put on the bus, after Lambda's
// retries: downstream consumers miss them until someone sends the batch again (docs/DEPLOY.md,
// "Events").
func (a *Alarms) forwarderDeadLetters(dlq awssqs.Queue) {
	deadLetters := dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
	})
	a.alarm("ForwarderDeadLetters", deadLetters,
		atLeast("Vestibule forwarder: event batches not put on the bus are waiting in the dead-letter queue", 1, 1))
}

// stackMetric is the custom metric name of this stack (metrics.StackDimension), summed a minute.
func (a *Alarms) stackMetric(name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(metrics.Namespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{metrics.StackDimension: a.st.StackName()},
		Statistic:     jsii.String("Sum"),
		Period:        minute(),
	})
}

// redisErrors alarms on the functions' failed Redis calls. The functions put their stack name in
// the metric's Stack dimension (VESTIBULE_STACK), so each stack in an account and region watches
// its own Redis errors.
func (a *Alarms) redisErrors(d *dashboardMetrics) {
	d.redis = a.stackMetric(metrics.RedisErrors)
	a.alarm("RedisErrors", d.redis, atLeast("Vestibule: Redis calls failing (visitors get 503) two minutes running", 5, 2))
}

// apiAlarms alarms on the API's 5xx and on API Gateway's own throttling.
func (a *Alarms) apiAlarms(p *alarmsProps, d *dashboardMetrics) {
	// 5xx are Lambda crashes, timeouts and the functions' 503s (Redis); a few a minute for two
	// minutes is worth a look.
	d.api5xx = p.API.MetricServerError(sumPerMinute())
	a.alarm("Api5xx", d.api5xx, atLeast("Vestibule API: 5 or more 5xx answers a minute, two minutes running", 5, 2))
	// API Gateway's own throttling (the stage's apiRateLimit/apiBurstLimit) has no metric of
	// its own in an HTTP API: it is a 429 among the 4xx. The access log tells it apart: a 429
	// that reached no integration.
	awslogs.NewMetricFilter(a.st, jsii.String("ApiThrottledFilter"), &awslogs.MetricFilterProps{
		LogGroup:        p.AccessLogs,
		FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(`{ ($.s = "429") && ($.is = "-") }`)),
		MetricNamespace: jsii.String(metrics.Namespace),
		MetricName:      jsii.String(APIThrottled),
		MetricValue:     jsii.String("1"),
		Dimensions:      &map[string]*string{metrics.StackDimension: jsii.String("$.st")},
		Unit:            awscloudwatch.Unit_COUNT,
	})
	d.apiThrottled = a.stackMetric(APIThrottled)
	a.alarm("ApiThrottled", d.apiThrottled,
		atLeast("Vestibule API: API Gateway throttled requests (raise apiRateLimit/apiBurstLimit)", 1, 1))
}

// cacheAlarms alarms on the serverless cache's throttled commands and its ECPUs.
func (a *Alarms) cacheAlarms(cacheName string, set Settings, d *dashboardMetrics) {
	cacheMetric := func(name string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:     jsii.String("AWS/ElastiCache"),
			MetricName:    jsii.String(name),
			DimensionsMap: &map[string]*string{"clusterId": jsii.String(cacheName)},
			Statistic:     jsii.String("Sum"),
			Period:        minute(),
		})
	}
	// Commands ElastiCache Serverless refused because the load grew faster than it
	// scales: each is a visitor's 503.
	throttled := cacheMetric("ThrottledCmds")
	a.alarm("CacheThrottled", throttled,
		atLeast("Vestibule cache: ElastiCache throttled commands (load growing faster than it scales)", 1, 1))
	// ECPUs are what the cache bills per request: a sustained load above the setting is
	// an unusual crowd, a flood, or a bug, and costs money either way.
	ecpu := cacheMetric("ElastiCacheProcessingUnits")
	a.alarm("CacheECPU", ecpu, awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String(fmt.Sprintf("Vestibule cache: over %d ECPU/s for 5 minutes", set.CacheECPUAlarm)),
		Threshold:          jsii.Number(float64(set.CacheECPUAlarm) * 60),
		EvaluationPeriods:  jsii.Number(5),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	d.cache = append(d.cache, throttled, ecpu)
}

// dashboardMetrics are the metrics the alarms watch, for the dashboard's graphs.
type dashboardMetrics struct {
	errors, throttles, duration []awscloudwatch.IMetric // one per function
	admit, redis                awscloudwatch.IMetric
	api5xx, apiThrottled        awscloudwatch.IMetric
	cache                       []awscloudwatch.IMetric // none with cache=nodes
}

// newDashboard creates the dashboard: the API's requests and the metrics the alarms watch.
func newDashboard(st awscdk.Stack, api awsapigatewayv2.HttpApi, d *dashboardMetrics) awscloudwatch.Dashboard {
	graph := func(title string, ms ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &ms, Width: jsii.Number(8),
		})
	}
	perMinute := &awscloudwatch.MetricOptions{Period: minute()}
	requests := graph("API requests, 4xx, 5xx",
		api.MetricCount(perMinute), api.MetricClientError(perMinute), api.MetricServerError(perMinute))
	dash := awscloudwatch.NewDashboard(st, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: AccountWideName(st, "dashboard"),
	})
	dash.AddWidgets(requests, graph("Function errors", d.errors...), graph("Function throttles", d.throttles...))
	dash.AddWidgets(graph("Function duration p99", d.duration...), graph("Admit invocations", d.admit),
		graph("Redis errors", d.redis))
	dash.AddWidgets(graph("API 5xx and throttled", d.api5xx, d.apiThrottled))
	if len(d.cache) > 0 {
		dash.AddWidgets(graph("Cache throttled commands and ECPUs", d.cache...))
	}
	return dash
}
