package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
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

// suppressNag adds the stack's suppressions, once every resource is defined.
func suppressNag(st awscdk.Stack, v *Vestibule, set Settings) {
	cdknag.NagSuppressions_AddStackSuppressions(st, &[]*cdknag.NagPackSuppression{
		nagSuppression("AwsSolutions-APIG4",
			"The public routes are the visitors': nobody has an identity before joining. Each route checks what it is given "+
				"itself (ticket, entry token, origin credential, booking token; docs/SECURITY.md) and the CloudFront origin "+
				"header; the admin routes are IAM-authorized by API Gateway (TestRoutesAndIAMOnAdmin)."),
		nagSuppression("AwsSolutions-CFR1",
			"A waiting room serves every country its booking site sells to; a geo restriction is the site's business "+
				"decision, not a default."),
		nagSuppression("AwsSolutions-CFR2",
			"WAF is opt-in (waf=true): about $6 a month idle and $0.60 per million requests, and it guards CloudFront only "+
				"(docs/DEPLOY.md, \"Traffic comes through CloudFront\"); the API stage's throttle and the enqueue limit apply "+
				"without it."),
		nagSuppression("AwsSolutions-IAM4",
			"AWS's Lambda service-role policies: writing the function's own logs, and the network interfaces a function in "+
				"a VPC needs. AWS maintains them for exactly this use.",
			"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
			"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"),
		nagSuppression("AwsSolutions-IAM5",
			"Rooms are created at run time by the admin API, so the functions reach the objects of any room under rooms/ "+
				"and heads/ of the settings bucket, and nothing else of it: reads for all, writes for admin (rooms/) and "+
				"admit (heads/) only (TestSettingsLeastPrivilege).",
			nagRegex(`/^Resource::<SettingsBucket[A-Z0-9]+\.Arn>\/(rooms|heads)\/\*$/`)),
		nagSuppression("AwsSolutions-IAM5",
			"The CDK's BucketDeployment provider uploads the page from the CDK's asset bucket to the page bucket, with "+
				"the grants the CDK generates for it; it runs at deploy time only.",
			"Action::s3:Abort*", "Action::s3:DeleteObject*", "Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*",
			nagRegex(`/^Resource::<PageBucket[A-Z0-9]+\.Arn>\/\*$/`),
			nagRegex(`/^Resource::arn:(<AWS::Partition>|aws[a-z-]*):s3:::cdk-[a-z0-9]+-assets-<AWS::AccountId>-(<AWS::Region>|[a-z0-9-]+)\/\*$/`)),
		nagSuppression("AwsSolutions-AEC6",
			"The node cache (cache=nodes) is reachable only from the functions' security group in isolated subnets, "+
				"with TLS required; an AUTH token would be one more secret in every function's environment for no "+
				"boundary those do not already draw. (ElastiCache Serverless is not checked by this rule.)"),
		nagSuppression("AwsSolutions-L1",
			"The CDK's BucketDeployment handler, whose runtime the CDK version pins; the stack's own functions run on "+
				"provided.al2023."),
		nagSuppression("AwsSolutions-KMS5",
			"The key only encrypts the keys object; automatic rotation of its material adds $1 a month for each of the "+
				"first two rotations, and the secrets it protects rotate by their own procedure (docs/DEPLOY.md)."),
		nagSuppression("AwsSolutions-S1",
			"Private buckets that only the stack's roles or CloudFront (origin access control) read: the page, the settings "+
				"(versioned), the keys object (each read a KMS Decrypt in CloudTrail) and CloudFront's own logs. Server "+
				"access logs would need a log bucket of their own for little more than CloudTrail data events give."),
		nagSuppression("AwsSolutions-SMG4",
			"Rotated by hand in documented steps (docs/DEPLOY.md, \"Secrets and rotation\"): the origin secret needs a "+
				"deploy that pins CloudFront's header to the new version, the entry key a sync of the gate's keys, so an "+
				"automatic rotation would refuse visitors."),
		nagSuppression("AwsSolutions-VPC7",
			"The VPC has isolated subnets only, with no route out but the S3 gateway endpoint; flow logs would bill per GB "+
				"the busiest path of an on-sale, the functions' traffic to the cache."),
	}, nil)

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
