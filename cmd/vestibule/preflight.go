package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
)

// vestibule preflight: what the account must give the synthesized stack before `cdk deploy`
// (make deploy runs it after cfn-lint): Lambda concurrency for what the template reserves, API
// Gateway's account throttle against the stage's, with expectedVisitors the other quotas of the
// crowd (preflight_quotas.go), the region's offer of every service the template uses, and the
// cdk-nag rules the template suppresses, each with its reason. A failed check stops the deploy; a warning is printed.

// Lambda keeps at least this much of an account's concurrency unreserved: a reservation that
// leaves less makes the deploy roll back.
const minUnreserved = 100

// onSaleConcurrency is the account concurrency an on-sale needs (docs/DEPLOY.md, "Quotas").
const onSaleConcurrency = 1000

// lambdaRPSPerConcurrency: Lambda answers at most 10 requests a second for each unit of a
// function's concurrency, however short its calls (docs/DEPLOY.md, "Quotas: how many can wait").
const lambdaRPSPerConcurrency = 10

// stackZones is how many Availability Zones the stack's VPC takes: the region's first two by
// name (Fn::GetAZs), as infra/stack's network sets MaxAzs.
const stackZones = 2

// unsupportedZones are the zone IDs where AWS's documentation says a service the stack needs
// does not run: VPC-connected Lambda functions, and ElastiCache Serverless. A zone's name maps
// to a different ID in each account, so only the account's own mapping tells whether the
// stack's zones are among them.
var unsupportedZones = map[string][]string{
	"Lambda in a VPC":        {"use1-az3", "usw1-az2", "apne1-az3"},
	"ElastiCache Serverless": {"use1-az3", "usw1-az2", "apne1-az3"},
}

// API Gateway's account-level throttle, requests a second per region (Service Quotas).
const (
	apiGatewayService    = "apigateway"
	apiGatewayThrottleID = "L-8A5B8E43"
)

// LambdaAccount is the part of the Lambda API preflight uses.
type LambdaAccount interface {
	GetAccountSettings(ctx context.Context, in *lambda.GetAccountSettingsInput, optFns ...func(*lambda.Options)) (*lambda.GetAccountSettingsOutput, error)
}

// QuotaReader is the part of the Service Quotas API preflight uses.
type QuotaReader interface {
	GetServiceQuota(ctx context.Context, in *servicequotas.GetServiceQuotaInput, optFns ...func(*servicequotas.Options)) (*servicequotas.GetServiceQuotaOutput, error)
}

// RegionServices is the part of the Systems Manager API preflight uses: AWS's public parameters
// under /aws/service/global-infrastructure name the services each region offers.
type RegionServices interface {
	GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, optFns ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error)
}

// infrastructureRegion is where the global-infrastructure parameters are read: they are served
// in some regions only, and us-east-1 answers for every region.
const infrastructureRegion = "us-east-1"

// regionalServices maps a template's resource type prefix to the service id of the
// global-infrastructure parameters (CloudFront and IAM are global: not listed).
var regionalServices = map[string]string{
	"AWS::Lambda::":         "lambda",
	"AWS::ApiGatewayV2::":   "apigateway",
	"AWS::ElastiCache::":    "elasticache",
	"AWS::S3::":             "s3",
	"AWS::SecretsManager::": "secretsmanager",
	"AWS::Events::":         "events",
	"AWS::Logs::":           "logs",
	"AWS::SNS::":            "sns",
	"AWS::CloudWatch::":     "cloudwatch",
	"AWS::EC2::":            "ec2",
	"AWS::WAFv2::":          "waf",
}

// errPreflight is returned when a check failed; the report says which.
var errPreflight = errors.New("preflight: a check failed; see above")

// preflight runs `vestibule preflight --template FILE`.
func (c *command) preflight(ctx context.Context, pos []string) error {
	if len(pos) > 0 {
		return usageError("preflight takes no arguments: --template FILE names the synthesized template")
	}
	if c.template == "" {
		return usageError("preflight needs --template FILE (make deploy passes cdk.out.deploy/<stack>.template.json)")
	}
	tmpl, err := os.ReadFile(c.template)
	if err != nil {
		return err
	}
	cfg, err := operator.LoadAWS(ctx, c.g.target.Profile, c.g.target.Region)
	if err != nil {
		return err
	}
	if cfg.Region == "" {
		return errors.New("no AWS region: pass --region, or set AWS_REGION")
	}
	infra := ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.Region = infrastructureRegion })
	zones := ec2Zones{cfg: cfg, endpoint: "https://ec2." + cfg.Region + ".amazonaws.com/"}
	if err := runPreflight(ctx, tmpl, account{lambda.NewFromConfig(cfg), servicequotas.NewFromConfig(cfg), infra, zones, cfg.Region}, c.stdout); err != nil {
		return err
	}
	if c.region.standbyStack == "" {
		return nil
	}
	// A two-region deployment: the standby must be able to take over
	// (region status: its cache a member of an available Global Datastore,
	// its API answering).
	return c.regionStatus(ctx, nil)
}

// account is what preflight asks of the AWS account, in the region deployed to.
type account struct {
	lambda  LambdaAccount
	quotas  QuotaReader
	regions RegionServices
	zones   ZoneReader
	region  string
}

// nagMetadata is the cdk_nag metadata of a template or a resource: the rules it suppresses.
type nagMetadata struct {
	CdkNag struct {
		Rules []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		} `json:"rules_to_suppress"`
	} `json:"cdk_nag"`
}

// templateMetadata is the template's own metadata: cdk-nag's, and the crowd it was sized for.
type templateMetadata struct {
	nagMetadata
	Quotas quotasMetadata `json:"VestibuleQuotas"`
}

// template is the part of a synthesized template preflight reads.
type template struct {
	Metadata  templateMetadata `json:"Metadata"`
	Resources map[string]struct {
		Type       string         `json:"Type"`
		Properties map[string]any `json:"Properties"`
		Metadata   nagMetadata    `json:"Metadata"`
	} `json:"Resources"`
}

// runPreflight checks the account against the template and prints one line per check.
func runPreflight(ctx context.Context, raw []byte, acc account, out io.Writer) error {
	var t template
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("the template is not JSON: %w", err)
	}
	if len(t.Resources) == 0 {
		return errors.New("the template has no resources: is it a synthesized Vestibule stack?")
	}
	r := &checkReport{Printer: printer.New(out)}
	reserved, stageRate := t.asks()
	checkConcurrency(ctx, acc.lambda, reserved, stageRate, r)
	checkThrottle(ctx, acc.quotas, stageRate, r)
	checkCrowd(ctx, acc.quotas, t.Metadata.Quotas.ExpectedVisitors, stageRate, r)
	checkRegion(ctx, acc, t.services(), r)
	checkZones(ctx, acc.zones, t.has("AWS::ElastiCache::ServerlessCache"), r)
	reportNag(t, r)
	if r.failed {
		return errPreflight
	}
	return r.Err()
}

// checkReport prints one line per check and remembers whether one failed.
type checkReport struct {
	*printer.Printer
	failed bool
}

// line prints a check's result: level is "ok", "warn" or "FAIL".
func (r *checkReport) line(level, check, detail string) {
	if level == "FAIL" {
		r.failed = true
	}
	r.Printf("%-4s  %-22s %s\n", level, check, detail)
}

// asks is what the template asks of the account: the Lambda concurrency its
// functions reserve and the stage's throttle, requests a second.
func (t *template) asks() (reserved, stageRate float64) {
	for _, r := range t.Resources {
		switch r.Type {
		case "AWS::Lambda::Function":
			if v, ok := r.Properties["ReservedConcurrentExecutions"].(float64); ok {
				reserved += v
			}
		case "AWS::ApiGatewayV2::Stage":
			if rs, ok := r.Properties["DefaultRouteSettings"].(map[string]any); ok {
				if v, ok := rs["ThrottlingRateLimit"].(float64); ok {
					stageRate = max(stageRate, v)
				}
			}
		}
	}
	return reserved, stageRate
}

// has reports whether the template has a resource of the type.
func (t *template) has(typ string) bool {
	for _, r := range t.Resources {
		if r.Type == typ {
			return true
		}
	}
	return false
}

// services are the ids of the regional services the template uses.
func (t *template) services() map[string]bool {
	need := map[string]bool{}
	for _, r := range t.Resources {
		for prefix, svc := range regionalServices {
			if strings.HasPrefix(r.Type, prefix) {
				need[svc] = true
			}
		}
	}
	return need
}

// checkConcurrency checks the account's Lambda concurrency against what the template reserves
// and what its stage lets through: Lambda answers at most lambdaRPSPerConcurrency requests a
// second per unit, so stageRate requests a second need a tenth as many unreserved.
func checkConcurrency(ctx context.Context, lam LambdaAccount, reserved, stageRate float64, r *checkReport) {
	acct, err := lam.GetAccountSettings(ctx, &lambda.GetAccountSettingsInput{})
	if err != nil {
		// Not a failure: a deploy role may lack the permission and the deploy still work.
		r.line("warn", "lambda concurrency", "cannot read the account's settings (lambda:GetAccountSettings): "+err.Error())
		return
	}
	l := acct.AccountLimit
	if l == nil {
		r.line("FAIL", "lambda concurrency", "the account's settings carry no limit")
		return
	}
	total, unreserved := float64(l.ConcurrentExecutions), float64(aws.ToInt32(l.UnreservedConcurrentExecutions))
	left := unreserved - reserved
	switch {
	case reserved > 0 && left < minUnreserved:
		r.line("FAIL", "lambda concurrency", fmt.Sprintf("the template reserves %.0f, leaving %.0f of %.0f unreserved: Lambda keeps at least %d, "+
			"so the deploy would roll back (deploy without admitReservedConcurrency, or raise the quota)", reserved, left, total, minUnreserved))
	case stageRate > left*lambdaRPSPerConcurrency:
		r.line("warn", "lambda concurrency", fmt.Sprintf("%.0f unreserved serve at most %.0f requests a second (%d a unit), the stage lets "+
			"through %.0f: enough to deploy, too few for an on-sale; ask for %.0f through Service Quotas (Lambda, Concurrent executions)",
			left, left*lambdaRPSPerConcurrency, lambdaRPSPerConcurrency, stageRate,
			max(onSaleConcurrency, math.Ceil(stageRate/lambdaRPSPerConcurrency)+reserved+minUnreserved)))
	case total < onSaleConcurrency:
		r.line("warn", "lambda concurrency", fmt.Sprintf("%.0f concurrent executions: enough to deploy, too few for an on-sale; "+
			"ask for %d through Service Quotas (Lambda, Concurrent executions)", total, onSaleConcurrency))
	default:
		r.line("ok", "lambda concurrency", fmt.Sprintf("%.0f, %.0f unreserved; the template reserves %.0f; %.0f requests a second "+
			"at most, the stage lets through %.0f", total, unreserved, reserved, left*lambdaRPSPerConcurrency, stageRate))
	}
}

// checkThrottle checks API Gateway's account throttle against the stage's.
func checkThrottle(ctx context.Context, quotas QuotaReader, stageRate float64, r *checkReport) {
	q, err := quotas.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{
		ServiceCode: aws.String(apiGatewayService), QuotaCode: aws.String(apiGatewayThrottleID),
	})
	switch {
	case err != nil:
		r.line("warn", "api gateway throttle", "cannot read the quota ("+apiGatewayThrottleID+"): "+err.Error())
	case q.Quota == nil || q.Quota.Value == nil:
		r.line("warn", "api gateway throttle", "the quota has no value")
	case stageRate > *q.Quota.Value:
		r.line("warn", "api gateway throttle", fmt.Sprintf("the account allows %.0f requests a second, the stage %.0f: the account's limit "+
			"throttles first (shared by every API of the account in the region); raise it or lower apiRateLimit", *q.Quota.Value, stageRate))
	default:
		r.line("ok", "api gateway throttle", fmt.Sprintf("the account allows %.0f requests a second, the stage %.0f", *q.Quota.Value, stageRate))
	}
}

// checkRegion checks that the region offers every service the template uses (need).
func checkRegion(ctx context.Context, acc account, need map[string]bool, r *checkReport) {
	offered, err := regionOffers(ctx, acc.regions, acc.region)
	if err != nil {
		r.line("warn", "region", "cannot read the services "+acc.region+" offers (ssm:GetParametersByPath on AWS's public parameters): "+err.Error())
		return
	}
	var missing []string
	for svc := range need {
		if !offered[svc] {
			missing = append(missing, svc)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		r.line("FAIL", "region", fmt.Sprintf("%s does not offer %s, which the template uses: deploy to another region", acc.region, strings.Join(missing, ", ")))
		return
	}
	r.line("ok", "region", fmt.Sprintf("%s offers the %d services the template uses (ElastiCache Serverless and arm64 Lambda: see docs/DEPLOY.md)", acc.region, len(need)))
}

// nagRule is a cdk-nag rule the template suppresses, with the reason given.
type nagRule struct {
	reason    string
	resources int // 0: the whole stack
}

// reportNag prints the cdk-nag findings the template accepts, each with its reason.
// (stack-wide suppressions are the template's metadata, the others a resource's)
func reportNag(t template, r *checkReport) {
	rules := map[string]*nagRule{}
	add := func(m nagMetadata, resource bool) {
		for _, s := range m.CdkNag.Rules {
			key := s.ID + "\x00" + s.Reason
			if rules[key] == nil {
				rules[key] = &nagRule{reason: s.Reason}
			}
			if resource {
				rules[key].resources++
			}
		}
	}
	add(t.Metadata.nagMetadata, false)
	for _, res := range t.Resources {
		add(res.Metadata, true)
	}
	keys := make([]string, 0, len(rules))
	for k := range rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		r.line("warn", "cdk-nag", "the template suppresses no cdk-nag rule: was it synthesized from this repository?")
	}
	for _, k := range keys {
		id, _, _ := strings.Cut(k, "\x00")
		where := "stack-wide"
		if n := rules[k].resources; n > 0 {
			where = fmt.Sprintf("on %d resources", n)
		}
		r.line("ok", "cdk-nag "+strings.TrimPrefix(id, "AwsSolutions-"), "accepted "+where+": "+rules[k].reason)
	}
}

// regionOffers reads the service ids AWS lists for region, every page.
func regionOffers(ctx context.Context, c RegionServices, region string) (map[string]bool, error) {
	if region == "" {
		return nil, errors.New("no region")
	}
	path := "/aws/service/global-infrastructure/regions/" + region + "/services"
	offered := map[string]bool{}
	in := &ssm.GetParametersByPathInput{Path: aws.String(path)}
	for {
		out, err := c.GetParametersByPath(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, p := range out.Parameters {
			offered[strings.TrimPrefix(aws.ToString(p.Name), path+"/")] = true
		}
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(offered) == 0 {
		return nil, fmt.Errorf("AWS lists no service for %q: is it a region?", region)
	}
	return offered, nil
}
