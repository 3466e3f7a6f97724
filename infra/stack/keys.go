package stack

import (
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/config"
)

// Where the functions' keys live (docs/SECURITY.md, "Where the keys live"). The three Secrets
// Manager secrets stay the source of truth (generated at deploy time, rotated with the AWS CLI,
// the origin secret resolved into CloudFront's origin header), but the functions in the VPC no
// longer call Secrets Manager: that needs an interface endpoint, billed by the hour in every
// zone ($14.60 a month for two). The keysync Lambda, outside the VPC, copies the secrets' current
// and previous values into one object of a keys bucket, SSE-KMS under a key of this stack; the
// functions read it at cold start through the free S3 gateway endpoint (S3 calls KMS itself, so
// no KMS endpoint either).

// KeySyncFunction is the Lambda (functions/keysync) that copies the secrets into the keys object.
const KeySyncFunction = "keysync"

// KeysObjectKey is the keys object's key in the keys bucket (KEYS_OBJECT is bucket/KeysObjectKey).
const KeysObjectKey = "vestibule/keys.json"

// Keys is what newKeys made, for the wiring in New and for tests.
type Keys struct {
	Bucket awss3.Bucket
	Key    awskms.Key
	Sync   awslambda.Function
	// Resource is the custom resource that runs the sync on deploy; whatever must not start
	// before the object holds the current values depends on it.
	Resource awscdk.CustomResource
	// Object is the KEYS_OBJECT value of the functions.
	Object *string
}

// newKeys creates the KMS key, the keys bucket, the keysync function and its custom resource.
//
// The key is a customer managed key ($1 a month) rather than the account's free aws/s3 key:
// aws/s3's policy lets every principal of the account decrypt through S3, so whoever holds
// s3:GetObject on the bucket (AWS's ReadOnlyAccess grants it on every bucket) could read the
// keys; with this key a reader also needs kms:Decrypt on it, which only the API functions'
// roles get, and disabling the key cuts every read at once. Its policy is the CDK's default
// (the account administers it through IAM); automatic rotation of the key material is off,
// since each rotation adds $1 a month (the first two) and the secrets it protects rotate
// by their own procedure.
//
// The bucket is not versioned: the object holds the previous values itself, and a version
// history would keep every rotated-out secret forever. It goes with the stack: the custom
// resource deletes the object first, so no copy of a secret outlives the stack.
func newKeys(st awscdk.Stack, set Settings, retention awslogs.RetentionDays, arns map[string]awssecretsmanager.Secret) *Keys {
	k := &Keys{}
	k.Key = awskms.NewKey(st, jsii.String("KeysKey"), &awskms.KeyProps{
		Description:       jsii.String("Vestibule: encrypts the keys object (SSE-KMS) the functions read at cold start"),
		EnableKeyRotation: jsii.Bool(false),
		PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	k.Bucket = awss3.NewBucket(st, jsii.String("KeysBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_KMS,
		EncryptionKey:     k.Key,
		BucketKeyEnabled:  jsii.Bool(false), // every read is a kms:Decrypt in CloudTrail, by the reader's role
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(false),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	k.Object = jsii.String(*k.Bucket.BucketName() + "/" + KeysObjectKey)

	// The sync: outside the VPC, where Secrets Manager answers without an endpoint.
	logs := awslogs.NewLogGroup(st, jsii.String("KeySyncLogs"), &awslogs.LogGroupProps{
		Retention:     retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	k.Sync = awslambda.NewFunction(st, jsii.String("KeySyncFunction"), &awslambda.FunctionProps{
		Description:  jsii.String("Vestibule: copies the signing and origin secrets into the keys object (SSE-KMS)"),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(set.AssetDir, KeySyncFunction)), nil),
		MemorySize:   jsii.Number(128),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(30)),
		Environment: &map[string]*string{
			config.EnvTicketSecretARN:   arns[config.EnvTicketSecretARN].SecretArn(),
			config.EnvEntryKeySecretARN: arns[config.EnvEntryKeySecretARN].SecretArn(),
			config.EnvOriginSecretARN:   arns[config.EnvOriginSecretARN].SecretArn(),
			config.EnvKeysObject:        k.Object,
		},
		LogGroup: logs,
	})
	for _, s := range arns {
		s.GrantRead(k.Sync, nil)
	}
	k.Sync.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject", "s3:DeleteObject"),
		Resources: &[]*string{k.Bucket.ArnForObjects(jsii.String(KeysObjectKey))},
	}))
	k.Sync.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("kms:GenerateDataKey"),
		Resources:  &[]*string{k.Key.KeyArn()},
		Conditions: viaS3(st),
	}))
	k.Resource = awscdk.NewCustomResource(st, jsii.String("KeySync"), &awscdk.CustomResourceProps{
		ServiceToken: k.Sync.FunctionArn(),
		ResourceType: jsii.String("Custom::VestibuleKeySync"),
		Properties: &map[string]any{
			"KeysObject":      k.Object,
			"TicketSecretArn": arns[config.EnvTicketSecretARN].SecretArn(),
			"EntrySecretArn":  arns[config.EnvEntryKeySecretARN].SecretArn(),
			"OriginSecretArn": arns[config.EnvOriginSecretARN].SecretArn(),
			// A deploy that pins a new origin-secret version (the second step of its rotation)
			// copies it before the distributions start sending it (they depend on this resource).
			"OriginSecretVersion": set.OriginSecretVersion,
		},
	})
	awscdk.NewCfnOutput(st, jsii.String("KeySyncFunctionName"), &awscdk.CfnOutputProps{
		Description: jsii.String("After rotating a secret: aws lambda invoke --function-name <this> /dev/stdout (docs/OPERATING.md)"),
		Value:       k.Sync.FunctionName(),
	})
	return k
}

// viaS3 limits a KMS grant to requests S3 makes on the caller's behalf in the stack's region.
func viaS3(st awscdk.Stack) *map[string]any {
	return &map[string]any{"StringEquals": map[string]any{"kms:ViaService": "s3." + *st.Region() + ".amazonaws.com"}}
}

// grantKeys lets an API function read the keys object: s3:GetObject on it, kms:Decrypt on the key
// through S3 only.
func (k *Keys) grantKeys(fn awsiam.IGrantable) {
	fn.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: &[]*string{k.Bucket.ArnForObjects(jsii.String(KeysObjectKey))},
	}))
	fn.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("kms:Decrypt"),
		Resources:  &[]*string{k.Key.KeyArn()},
		Conditions: viaS3(k.Bucket.Stack()),
	}))
}

// lockDown adds the bucket policy that makes the grants the only way in, whatever else an
// identity policy of the account allows: nobody but readers may get the keys object, nobody but
// the sync may write or delete it. (The account's administrators can still change this policy;
// CloudTrail records it.)
func (k *Keys) lockDown(readers []awsiam.IRole) {
	readerArns := []any{k.Sync.Role().RoleArn()}
	for _, r := range readers {
		readerArns = append(readerArns, r.RoleArn())
	}
	object := &[]*string{k.Bucket.ArnForObjects(jsii.String("*"))}
	k.Bucket.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyTheFunctionsReadTheKeys"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("s3:GetObject", "s3:GetObjectVersion"),
		Resources:  object,
		Conditions: &map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": readerArns}},
	}))
	k.Bucket.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyTheSyncWritesTheKeys"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("s3:PutObject", "s3:DeleteObject"),
		Resources:  object,
		Conditions: &map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": k.Sync.Role().RoleArn()}},
	}))
}

// allowThroughGateway lets the keys object's reads through the VPC's S3 gateway endpoint, whose
// policy otherwise admits only the settings bucket.
func (k *Keys) allowThroughGateway(gateway awsec2.GatewayVpcEndpoint) {
	s := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: &[]*string{k.Bucket.ArnForObjects(jsii.String(KeysObjectKey))},
	})
	s.AddAnyPrincipal()
	gateway.AddToPolicy(s)
}
