package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/routes"
)

// SettingsPrefixes are the key prefixes package durable writes in the settings bucket (the
// stack sets SETTINGS_BUCKET to the bare bucket name, so no further prefix): each room's
// settings under SettingsRoomsPrefix, its admission head under SettingsHeadsPrefix. Every
// function may read those objects (any of them may restore a room lost with Redis); only the
// admin function writes settings (PUT /api/admin/rooms/{room}) and only admit writes heads
// (its ticks record them), so a flaw in status, consume or booking cannot rewrite a room's
// originUrl.
var SettingsPrefixes = []string{SettingsRoomsPrefix, SettingsHeadsPrefix}

// The settings bucket's two prefixes.
const (
	SettingsRoomsPrefix = "rooms/"
	SettingsHeadsPrefix = "heads/"
)

// SettingsListPrefix is the one prefix the functions list (durable.S3 lists the rooms).
const SettingsListPrefix = SettingsRoomsPrefix

// newSettingsBucket creates the bucket of the durable room settings (docs/DEPLOY.md, "Durable
// room settings (S3)") and the way to it from the isolated subnets: the S3 gateway endpoint,
// which is free and the only route out of those subnets to S3.
//
// The bucket has no fixed name and is retained when the stack is deleted: the settings outlive a
// `cdk destroy`, and a redeploy creates a new bucket rather than failing on the old name.
//
// The functions' security group gets egress to 0.0.0.0/0 on 443. A rule naming the S3 prefix list
// would be narrower on paper, but its id differs per region and CloudFormation exposes it on
// neither the gateway endpoint nor any other resource, so it would need a lookup (synthesis no
// longer offline) or a custom resource calling ec2:DescribePrefixLists on "Resource": "*". The
// wide rule reaches no more: the isolated subnets route only the VPC's own range and, through the
// gateway endpoint, S3; and the endpoint's policy lets the functions reach only this bucket's
// objects and the keys object, so 443 to "anywhere" means those.
func newSettingsBucket(st awscdk.Stack, vpc awsec2.Vpc, isolated *awsec2.SubnetSelection, fnSG awsec2.SecurityGroup) (awss3.Bucket, awsec2.GatewayVpcEndpoint) {
	bucket := awss3.NewBucket(st, jsii.String("SettingsBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		// Versioned, so a bad PUT of a room's settings can be undone from the version before it.
		// Heads are written every 10 s while a room admits, so their old versions go after a
		// day; old settings after 90 days.
		Versioned: jsii.Bool(true),
		LifecycleRules: &[]*awss3.LifecycleRule{
			{Id: jsii.String("old-heads"), Prefix: jsii.String(SettingsHeadsPrefix), NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(1))},
			{Id: jsii.String("old-settings"), Prefix: jsii.String(SettingsRoomsPrefix), NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(90))},
		},
	})
	gateway := vpc.AddGatewayEndpoint(jsii.String("S3"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_S3(),
		Subnets: &[]*awsec2.SubnetSelection{isolated},
	})
	// The endpoint carries requests to this bucket only (and reads of the keys object, which
	// Keys.allowThroughGateway adds), so the open egress rule below cannot carry data to any
	// other bucket.
	for _, s := range append(settingsStatements(bucket, SettingsPrefixes...), settingsDelete(bucket)) {
		s.AddAnyPrincipal()
		gateway.AddToPolicy(s)
	}
	fnSG.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)),
		jsii.String("functions to S3 through the gateway endpoint (the only route out of the isolated subnets)"), jsii.Bool(false))
	// (The group's description still says "the cache and the Secrets Manager endpoint only",
	// though the endpoint is gone: changing a security group's description replaces the group.)
	return bucket, gateway
}

// settingsStatements are the permissions package durable needs on the settings bucket:
// s3:GetObject on the objects under SettingsPrefixes, s3:ListBucket on the bucket for
// SettingsListPrefix only (without it a missing object answers 403, not 404), and s3:PutObject
// under the prefixes given in writes.
func settingsStatements(bucket awss3.IBucket, writes ...string) []awsiam.PolicyStatement {
	objects := func(prefixes []string) *[]*string {
		out := make([]*string, len(prefixes))
		for i, p := range prefixes {
			out[i] = bucket.ArnForObjects(jsii.String(p + "*"))
		}
		return &out
	}
	sts := []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:GetObject"),
			Resources: objects(SettingsPrefixes),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:ListBucket"),
			Resources: &[]*string{bucket.BucketArn()},
			Conditions: &map[string]any{
				"StringEquals": map[string]any{"s3:prefix": SettingsListPrefix},
			},
		}),
	}
	if len(writes) > 0 {
		sts = append(sts, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:PutObject"),
			Resources: objects(writes),
		}))
	}
	return sts
}

// settingsWrites are the prefixes a function writes: admin the settings, admit the heads.
func settingsWrites(function string) []string {
	switch function {
	case routes.Admin:
		return []string{SettingsRoomsPrefix}
	case Admit:
		return []string{SettingsHeadsPrefix}
	}
	return nil
}

// grantSettings lets fn read the room settings and heads, and write under writes.
func grantSettings(fn awsiam.IGrantable, bucket awss3.IBucket, writes ...string) {
	for _, s := range settingsStatements(bucket, writes...) {
		fn.GrantPrincipal().AddToPrincipalPolicy(s)
	}
}

// grantSettingsDelete lets fn (admin: DELETE /api/admin/rooms/{room}) delete a room's settings
// and head (durable.S3.Delete). The bucket is versioned, so a deletion leaves the versions
// behind a delete marker for an operator to undo.
func grantSettingsDelete(fn awsiam.IGrantable, bucket awss3.IBucket) {
	fn.GrantPrincipal().AddToPrincipalPolicy(settingsDelete(bucket))
}

// settingsDelete is s3:DeleteObject on a room's settings and head.
func settingsDelete(bucket awss3.IBucket) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("s3:DeleteObject"),
		Resources: &[]*string{
			bucket.ArnForObjects(jsii.String(SettingsRoomsPrefix + "*")),
			bucket.ArnForObjects(jsii.String(SettingsHeadsPrefix + "*")),
		},
	})
}
