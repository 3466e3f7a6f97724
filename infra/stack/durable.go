package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/routes"
)

// SettingsPrefixes are the key prefixes package durable keeps objects under in the settings
// bucket (the stack sets SETTINGS_BUCKET to the bare bucket name, so no further prefix): each
// room's settings (rooms/<room>.json) and the booking kit's event definitions
// (rooms/<event>.event) under SettingsRoomsPrefix, each room's admission head under
// SettingsHeadsPrefix. Every function may read and list them (any of them may restore a room
// or an event lost with Redis); what each function writes is SettingsWrites.
var SettingsPrefixes = []string{SettingsRoomsPrefix, SettingsHeadsPrefix}

// The settings bucket's two prefixes.
const (
	SettingsRoomsPrefix = "rooms/"
	SettingsHeadsPrefix = "heads/"
)

// SettingsWrite is one key pattern a function writes in the settings bucket (s3:PutObject),
// and the code that writes it.
type SettingsWrite struct {
	Keys string // an IAM resource pattern relative to the bucket, e.g. "heads/*"
	Why  string
}

// The key patterns of the settings bucket.
const (
	roomSettingsKeys = SettingsRoomsPrefix + "*.json"      // durable.S3.PutSettings: rooms/<room>.json
	roomTombKeys     = SettingsRoomsPrefix + "*.dead"      // durable.Queue.Delete: rooms/<room>.dead, a deleted room's tombstone
	roomKeys         = SettingsRoomsPrefix + "*"           // rooms/<event>.event and any rooms/<event>.<kind>
	headKeys         = SettingsHeadsPrefix + "*"           // durable.S3.PutHead: heads/<room>
	roomPlanKeys     = SettingsRoomsPrefix + "*.schedule"  // durable.S3.PutSchedule: rooms/<room>.schedule, a room's scheduled changes
	roomHistoryKeys  = SettingsRoomsPrefix + "*.history/*" // durable.S3.PutHistory: rooms/<room>.history/<hour>
	roomRevokedKeys  = SettingsRoomsPrefix + "*.revoked"   // durable.S3.PutRevocations: rooms/<room>.revoked
)

// SettingsWrites are the keys each function's code writes, and so all its role may write
// (TestFunctionsWriteOnlyWhatTheirRolesAllow runs every route of each function against an S3
// stand-in that enforces the synthesized policy, and fails on a write it refuses or a grant no
// code path uses). A room's settings and tombstone are written by admin only, so a flaw in a
// public function cannot rewrite a room's originUrl or bury a live room: booking writes its
// events' keys under rooms/ but is denied rooms/*.json, rooms/*.dead and the rooms' schedules, histories and revoked
// invitations (SettingsDenies).
// Admit writes settings too, but only a change an admin planned (a scheduled change), which the
// schedule stores as admin wrote it.
var SettingsWrites = map[string][]SettingsWrite{
	routes.Admin: {
		{roomSettingsKeys, "PUT /api/admin/rooms/{room} stores the settings (durable.Queue.PutConfig)"},
		{headKeys, "PUT /api/admin/rooms/{room} records a new room's first head, so a restore finds one"},
		{roomTombKeys, "DELETE /api/admin/rooms/{room} keeps the room's tombstone, so its tickets stay dead " +
			"across a total loss (durable.Queue.Delete)"},
		{roomPlanKeys, "POST /api/admin/rooms/{room}/schedule and .../schedule/cancel store the room's scheduled changes"},
		{roomRevokedKeys, "POST /api/admin/rooms/{room}/invitations/revoke stores the room's revoked invitations, " +
			"so a revocation holds across a total loss"},
	},
	Admit: {
		{headKeys, "every tick records the room's head (durable.Queue.Tick)"},
		{roomSettingsKeys, "a scheduled change applied at its time stores the settings as an admin's PUT does " +
			"(admission.ApplySchedules → durable.Queue.PutConfig)"},
		{roomPlanKeys, "a scheduled change applied or refused is stored out of the room's schedule"},
		{roomHistoryKeys, "each completed hour of a room's per-minute history is archived (durable.Queue.ArchiveHistory)"},
	},
	routes.Enqueue: {
		{headKeys, "a join's request-driven tick that admits records the head (durable.Queue.nudge)"},
	},
	routes.Poll: {
		{headKeys, "a poll's request-driven tick that admits records the head (durable.Queue.nudge)"},
	},
	routes.Booking: {
		{roomKeys, "PUT /api/admin/events/{event} stores the definition, rooms/<event>.event " +
			"(bookingdb.WithDefinitions); the kit's other records of an event are rooms/<event>.<kind>"},
	},
}

// SettingsDenies are the keys a function may never write though a pattern of SettingsWrites
// covers them: booking's rooms/* holds the rooms' settings and tombstones too.
var SettingsDenies = map[string][]string{routes.Booking: {roomSettingsKeys, roomTombKeys, roomPlanKeys, roomHistoryKeys, roomRevokedKeys}}

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
	for _, s := range append(settingsStatements(bucket, roomKeys, headKeys), settingsDelete(bucket)) {
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
// s3:GetObject on the objects under SettingsPrefixes, s3:ListBucket on the bucket, and
// s3:PutObject on the key patterns of writes. ListBucket has no prefix condition: S3 answers a
// GetObject of a missing key with 404 only to a caller that may list the bucket, and with 403
// otherwise, which durable reads as an outage rather than "no such room" or "no head yet". The
// bucket holds nothing but what every function may read anyway (SettingsPrefixes).
func settingsStatements(bucket awss3.IBucket, writes ...string) []awsiam.PolicyStatement {
	objects := func(patterns []string) *[]*string {
		out := make([]*string, len(patterns))
		for i, p := range patterns {
			out[i] = bucket.ArnForObjects(jsii.String(p))
		}
		return &out
	}
	reads := make([]string, len(SettingsPrefixes))
	for i, p := range SettingsPrefixes {
		reads[i] = p + "*"
	}
	sts := []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:GetObject"),
			Resources: objects(reads),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:ListBucket"),
			Resources: &[]*string{bucket.BucketArn()},
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

// settingsWrites are the key patterns a function writes (SettingsWrites).
func settingsWrites(function string) []string {
	var out []string
	for _, w := range SettingsWrites[function] {
		out = append(out, w.Keys)
	}
	return out
}

// grantSettings lets fn read the room settings and heads, write the keys of writes, and
// never write those SettingsDenies names for it.
func grantSettings(fn awsiam.IGrantable, function string, bucket awss3.IBucket) {
	for _, s := range settingsStatements(bucket, settingsWrites(function)...) {
		fn.GrantPrincipal().AddToPrincipalPolicy(s)
	}
	if deny := SettingsDenies[function]; len(deny) > 0 {
		res := make([]*string, len(deny))
		for i, k := range deny {
			res[i] = bucket.ArnForObjects(jsii.String(k))
		}
		fn.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect: awsiam.Effect_DENY, Actions: jsii.Strings("s3:PutObject"), Resources: &res,
		}))
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
