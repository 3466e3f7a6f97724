package stack

import (
	"reflect"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// cdk-nag (AwsSolutions pack). TestNagAwsSolutions runs it on every variant of the stack and
// fails on any finding not suppressed here; each suppression says why the rule does not apply
// or what the stack does instead. They are metadata on the resources (cdk_nag), read by cdk-nag
// only: nothing is deployed differently.

// nagSuppression is one rule's suppression, for the findings appliesTo names (every finding of
// the rule when empty; a string, or a cdknag.RegexAppliesTo).
func nagSuppression(id, reason string, appliesTo ...any) *cdknag.NagPackSuppression {
	s := &cdknag.NagPackSuppression{Id: jsii.String(id), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		s.AppliesTo = &appliesTo
	}
	return s
}

func nagRegex(re string) *cdknag.RegexAppliesTo {
	return &cdknag.RegexAppliesTo{Regex: jsii.String(re)}
}

// nagTargets are the resources the suppressions name: each suppression is on the resources
// it is about, so a new resource that breaks a rule fails TestNagAwsSolutions until it gets a
// reason of its own.
type nagTargets struct {
	Secrets *Secrets
	Network *Network
}

// suppress adds the suppressions to each construct and its children.
func suppress(cs []constructs.IConstruct, sups ...*cdknag.NagPackSuppression) {
	for _, c := range cs {
		if c != nil && !reflect.ValueOf(c).IsNil() {
			cdknag.NagSuppressions_AddResourceSuppressions(c, &sups, jsii.Bool(true))
		}
	}
}

// cdkHelpers are the constructs the CDK adds on its own to upload the page (BucketDeployment):
// its handler function and that function's role, by logical id.
func cdkHelpers(st awscdk.Stack, typ string) []constructs.IConstruct {
	var out []constructs.IConstruct
	for _, c := range *st.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if !*awscdk.CfnResource_IsCfnResource(c) {
			continue
		}
		r, ok := c.(awscdk.CfnResource)
		if ok && *r.CfnResourceType() == typ && strings.HasPrefix(*st.GetLogicalId(r), "CustomCDKBucketDeployment") {
			out = append(out, c)
		}
	}
	return out
}

// suppressNag adds the stack's suppressions, once every resource is defined, each on the
// resources it is about.
func suppressNag(st awscdk.Stack, v *Vestibule, set Settings, t nagTargets) {
	suppress([]constructs.IConstruct{v.API}, nagSuppression("AwsSolutions-APIG4",
		"The public routes are the visitors': nobody has an identity before joining. Each route checks what it is given "+
			"itself (ticket, entry token, origin credential, booking token; docs/SECURITY.md) and the CloudFront origin "+
			"header; the admin routes are IAM-authorized by API Gateway (TestRoutesAndIAMOnAdmin)."))
	suppressDistributionNag(v, set)
	var roles, vpcRoles []constructs.IConstruct
	for _, fn := range v.Functions {
		roles = append(roles, fn.Role())
		vpcRoles = append(vpcRoles, fn.Role())
	}
	suppress(cdkHelpers(st, "AWS::IAM::Role"), nagSuppression("AwsSolutions-IAM4",
		"The role of the CDK's BucketDeployment handler, which uploads the page at deploy time only, with the CDK's own "+
			"code: AWSLambdaBasicExecutionRole. The stack's own functions have no managed policy and write only their own "+
			"log group (TestEachFunctionWritesOnlyItsOwnLogGroup).",
		"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"))
	suppress(roles, nagSuppression("AwsSolutions-IAM5",
		"Rooms and events are created at run time by the admin API, so the functions reach the objects of any room under "+
			"rooms/ and heads/ of the settings bucket, and nothing else of it: reads for all, writes of what each one's "+
			"code writes (stack.SettingsWrites, TestFunctionsWriteOnlyWhatTheirRolesAllow).",
		nagRegex(`/^Resource::<SettingsBucket[A-Z0-9]+\.Arn>\/(rooms|heads)\/\*(\.json|\.dead|\.schedule|\.revoked|\.history\/\*)?$/`)))
	suppress(vpcRoles, nagSuppression("AwsSolutions-IAM5",
		"The network interfaces of a function in the VPC (ec2:CreateNetworkInterface and the others of "+
			"AWSLambdaVPCAccessExecutionRole), which EC2 grants on \"*\" only; the statement has no other action "+
			"(TestNoWildcardIAM).",
		"Resource::*"))
	suppress(cdkHelpers(st, "AWS::IAM::Policy"), nagSuppression("AwsSolutions-IAM5",
		"The CDK's BucketDeployment provider uploads the page from the CDK's asset bucket to the page bucket, with "+
			"the grants the CDK generates for it; it runs at deploy time only.",
		"Action::s3:Abort*", "Action::s3:DeleteObject*", "Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*",
		nagRegex(`/^Resource::<PageBucket[A-Z0-9]+\.Arn>\/\*$/`),
		nagRegex(`/^Resource::arn:(<AWS::Partition>|aws[a-z-]*):s3:::cdk-[a-z0-9]+-assets-<AWS::AccountId>-(<AWS::Region>|[a-z0-9-]+)\/\*$/`)))
	if c, ok := st.Node().TryFindChild(jsii.String("Cache")).(awscdk.CfnResource); ok && *c.CfnResourceType() == "AWS::ElastiCache::ReplicationGroup" {
		suppress([]constructs.IConstruct{c}, nagSuppression("AwsSolutions-AEC6",
			"The node cache (cache=nodes) is reachable only from the functions' security group in isolated subnets, "+
				"with TLS required; an AUTH token would be one more secret in every function's environment for no "+
				"boundary those do not already draw."))
		if set.Regions.Role == RoleStandby {
			suppress([]constructs.IConstruct{c}, nagSuppression("AwsSolutions-AEC3",
				"A secondary member of a Global Datastore takes encryption in transit and at rest from the datastore, "+
					"and ElastiCache refuses a secondary that sets them; the primary's replication group, which the "+
					"datastore is made of, requires both (TestPrimaryMakesItsCacheTheGlobalDatastore)."),
				nagSuppression("AwsSolutions-AEC5",
					"Valkey's port, as the primary's member (whose engine the rule does not check; a secondary names no "+
						"engine, it takes the datastore's): another port would hide nothing from whoever is inside the cache's "+
						"security group, which only the functions' can reach."))
		}
	}
	suppress(cdkHelpers(st, "AWS::Lambda::Function"), nagSuppression("AwsSolutions-L1",
		"The CDK's BucketDeployment handler, whose runtime the CDK version pins; the stack's own functions run on "+
			"provided.al2023."))
	suppress([]constructs.IConstruct{v.Keys.Key}, nagSuppression("AwsSolutions-KMS5",
		"The key only encrypts the keys object; automatic rotation of its material adds $1 a month for each of the "+
			"first two rotations, and the secrets it protects rotate by their own procedure (docs/DEPLOY.md)."))
	suppress([]constructs.IConstruct{v.Bucket, v.SettingsBucket, v.Keys.Bucket, v.LogsBucket}, nagSuppression("AwsSolutions-S1",
		"Private buckets that only the stack's roles or CloudFront (origin access control) read or write: the page "+
			"(written only at deploy), the settings (versioned, so every write leaves the version before it), the keys "+
			"object (each read a KMS Decrypt in CloudTrail's management events) and CloudFront's own logs. Object writes "+
			"are not audited by the stack: CloudTrail data events, which would log them, are not turned on (docs/SECURITY.md, "+
			"\"Audit in AWS\"). Server access logs would need a log bucket of their own."))
	if v.Notify != nil {
		suppress([]constructs.IConstruct{v.Notify.Function.Role()}, nagSuppression("AwsSolutions-IAM5",
			"Rooms are created at run time: the notify function may call the two admin routes of notices, take and ack, "+
				"of any room, and no other route (TestNoticesOfTheDefaultStack).",
			nagRegex(`/^Resource::arn:(<AWS::Partition>|aws[a-z-]*):execute-api:(<AWS::Region>|[a-z0-9-]+):<AWS::AccountId>:<Api[A-Z0-9]+>\/\$default\/POST\/api\/admin\/rooms\/\*\/notices\/(take|ack)$/`)))
	}
	suppress([]constructs.IConstruct{t.Secrets.Ticket, t.Secrets.EntryKey, t.Secrets.Origin, t.Secrets.Notice}, nagSuppression("AwsSolutions-SMG4",
		"Rotated by hand in documented steps (docs/DEPLOY.md, \"Secrets and rotation\"): the origin secret needs a "+
			"deploy that pins CloudFront's header to the new version, the entry key a sync of the gate's keys, so an "+
			"automatic rotation would refuse visitors."))
	suppress([]constructs.IConstruct{t.Network.Vpc}, nagSuppression("AwsSolutions-VPC7",
		"The VPC has isolated subnets only, with no route out but the S3 gateway endpoint; flow logs would bill per GB "+
			"the busiest path of an on-sale, the functions' traffic to the cache."))
}

// suppressDistributionNag adds the suppressions of the stack's distributions: the
// page's and, with a protected origin, the gate's.
func suppressDistributionNag(v *Vestibule, set Settings) {
	distributions := []constructs.IConstruct{v.Distribution}
	if v.Gate != nil {
		distributions = append(distributions, v.Gate.Distribution)
	}
	suppress(distributions, nagSuppression("AwsSolutions-CFR1",
		"A waiting room serves every country its booking site sells to; a geo restriction is the site's business "+
			"decision, not a default."))
	if !set.WAF {
		suppress(distributions, nagSuppression("AwsSolutions-CFR2",
			"Deployed with waf=false: WAF costs about $6 a month idle and $0.60 per million requests; the API stage's "+
				"throttle and the enqueue limit apply without it. With waf=true every distribution of the stack gets the "+
				"web ACL (docs/DEPLOY.md, \"Traffic comes through CloudFront\")."))
	}
	// Without a domain of its own a distribution has CloudFront's default certificate, whose
	// minimum protocol CloudFront fixes; with one it requires TLSv1.2_2021 (domains.go).
	cfr4 := func(d awscloudfront.Distribution, domain string) {
		if d == nil || domain != "" {
			return
		}
		cdknag.NagSuppressions_AddResourceSuppressions(d, &[]*cdknag.NagPackSuppression{nagSuppression("AwsSolutions-CFR4",
			"On CloudFront's default *.cloudfront.net certificate the minimum protocol cannot be chosen; deploy with "+
				"domain= (protectDomain= for the gate) and a certificate, and the distribution requires TLSv1.2_2021.")}, jsii.Bool(true))
	}
	cfr4(v.Distribution, set.Domain)
	if v.Gate != nil {
		cfr4(v.Gate.Distribution, set.ProtectDomain)
	}
}
