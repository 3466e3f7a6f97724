package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// The kinds of Authorizer, as Kind reports them.
const (
	KindAdminKey = "admin key"
	KindSigV4    = "AWS SigV4"
)

// SigningService is the service name admin calls are signed for: API
// Gateway's execute-api.
const SigningService = "execute-api"

// ApiURLOutput is the output of the CloudFormation stack (infra/stack) that
// holds the HTTP API's URL, the host admin calls are signed for.
const ApiURLOutput = "ApiUrl"

// BearerKey authorises with the local stack's admin key
// (Authorization: Bearer KEY).
type BearerKey string

// Authorize sets the Authorization header.
func (k BearerKey) Authorize(_ context.Context, req *http.Request, _ []byte) error {
	req.Header.Set("Authorization", "Bearer "+string(k))
	return nil
}

// Kind is KindAdminKey.
func (BearerKey) Kind() string { return KindAdminKey }

// SigV4 signs each request with AWS Signature Version 4 for execute-api,
// with credentials from the standard chain (profiles, SSO, environment,
// instance roles), as API Gateway's IAM authorisation wants.
type SigV4 struct {
	Credentials aws.CredentialsProvider
	Region      string
	Signer      *v4.Signer       // nil: a default signer
	Now         func() time.Time // nil: time.Now
}

// Kind is KindSigV4.
func (SigV4) Kind() string { return KindSigV4 }

// Authorize signs req, whose body is body, with the payload's SHA-256.
func (s SigV4) Authorize(ctx context.Context, req *http.Request, body []byte) error {
	if s.Credentials == nil {
		return noCredentials(errors.New("no credential provider"))
	}
	creds, err := s.Credentials.Retrieve(ctx)
	if err != nil {
		return noCredentials(err)
	}
	sum := sha256.Sum256(body)
	signer, now := s.Signer, s.Now
	if signer == nil {
		signer = v4.NewSigner()
	}
	if now == nil {
		now = time.Now
	}
	if err := signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), SigningService, s.Region, now()); err != nil {
		return &Error{Message: "signing the request: " + err.Error(), Err: err}
	}
	return nil
}

func noCredentials(err error) error {
	return &Error{Message: "no AWS credentials: " + err.Error(), Err: err,
		Hint: "sign in with `aws sso login --profile NAME` and pass --profile NAME (or set AWS_PROFILE), " +
			"or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; for a local stack (make dev) pass --admin-key instead"}
}

// Target says which deployment to talk to and how to authenticate.
type Target struct {
	Endpoint string // the API's base URL; "" with Stack
	AdminKey string // local stack's admin key; "" signs with SigV4
	Stack    string // CloudFormation stack name whose ApiUrl output is the endpoint
	Profile  string // AWS shared-config profile; "" the default chain
	Region   string // AWS region; "" from the profile or environment (or the endpoint's host)
}

// executeAPIHost matches API Gateway's default host names, whose third
// label is the region.
var executeAPIHost = regexp.MustCompile(`^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$`)

// Connect builds a Client for the target: with an admin key it needs no AWS
// at all; otherwise it loads the AWS configuration (and, with Stack, reads
// the endpoint from the stack's outputs) and signs every call.
func Connect(ctx context.Context, t Target) (*Client, error) {
	if t.Endpoint != "" && t.Stack != "" {
		return nil, &Error{Message: "--endpoint and --stack both name the deployment", Hint: "pass only one of them"}
	}
	if t.Endpoint == "" && t.Stack == "" {
		return nil, &Error{Message: "no deployment named",
			Hint: "pass --stack NAME (a deployed stack, e.g. Vestibule) or --endpoint URL (with --admin-key for a local stack: make dev prints both)"}
	}
	if t.AdminKey != "" {
		if t.Stack != "" {
			return nil, &Error{Message: "--admin-key is for a local stack, but --stack names an AWS one", Hint: "leave out --admin-key: calls to AWS are signed with your AWS credentials"}
		}
		c := &Client{Endpoint: t.Endpoint, Auth: BearerKey(t.AdminKey)}
		_, err := c.URL("")
		return c, err
	}
	cfg, err := LoadAWS(ctx, t.Profile, t.Region)
	if err != nil {
		return nil, err
	}
	endpoint := t.Endpoint
	if t.Stack != "" {
		if cfg.Region == "" {
			return nil, noRegion()
		}
		endpoint, err = StackEndpoint(ctx, cloudformation.NewFromConfig(cfg), t.Stack)
		if err != nil {
			return nil, err
		}
	}
	c := &Client{Endpoint: endpoint}
	if _, err := c.URL(""); err != nil {
		return nil, err
	}
	region := cfg.Region
	if u, err := url.Parse(endpoint); err == nil {
		if m := executeAPIHost.FindStringSubmatch(u.Hostname()); m != nil && t.Region == "" {
			region = m[1] // the API's own region beats the profile's
		}
	}
	if region == "" && LocalEndpoint(endpoint) {
		return nil, &Error{Message: fmt.Sprintf("%s is a local stack: it wants its admin key", endpoint),
			Hint: "pass --admin-key KEY (or set VESTIBULE_ADMIN_KEY): make dev prints it, and keeps it in .vestibule/admin-key"}
	}
	if region == "" {
		return nil, noRegion()
	}
	c.Auth = SigV4{Credentials: cfg.Credentials, Region: region}
	return c, nil
}

// LocalEndpoint reports whether an endpoint is on this machine (localhost,
// 127.0.0.0/8, ::1): a local stack's, which takes the admin key.
func LocalEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func noRegion() error {
	return &Error{Message: "no AWS region", Hint: "pass --region (the stack's region), or set AWS_REGION, or give the profile a region"}
}

// LoadAWS loads the standard AWS configuration with the profile and the
// region given ("" for the environment's and the shared files').
func LoadAWS(ctx context.Context, profile, region string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(profile))
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, &Error{Message: "loading the AWS configuration: " + err.Error(), Err: err,
			Hint: "check --profile (or AWS_PROFILE) names a profile in ~/.aws/config"}
	}
	return cfg, nil
}

// StackOutputs is the part of the CloudFormation API ReadStackOutputs uses.
type StackOutputs interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// StackEndpoint reads the API's URL from the stack's ApiUrl output.
func StackEndpoint(ctx context.Context, cf StackOutputs, stack string) (string, error) {
	outputs, err := ReadStackOutputs(ctx, cf, stack)
	if err != nil {
		return "", err
	}
	if u := outputs[ApiURLOutput]; u != "" {
		return u, nil
	}
	return "", &Error{Message: fmt.Sprintf("the stack %q has no %s output", stack, ApiURLOutput),
		Hint: "is it a Vestibule stack, and has its deployment finished? Or pass --endpoint URL"}
}

// ReadStackOutputs reads a stack's outputs, by key; an error says what to
// check when the stack is missing, refused or unreachable.
func ReadStackOutputs(ctx context.Context, cf StackOutputs, stack string) (map[string]string, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "does not exist"):
			return nil, &Error{Message: fmt.Sprintf("there is no stack %q in this account and region", stack), Err: err,
				Hint: "check --stack, --region and --profile (`aws cloudformation list-stacks` shows the stacks)"}
		case strings.Contains(msg, "AccessDenied") || strings.Contains(msg, "not authorized"):
			return nil, &Error{Message: fmt.Sprintf("AWS refused to describe the stack %q", stack), Err: err,
				Hint: "your AWS identity needs cloudformation:DescribeStacks on the stack, or pass --endpoint (the stack's ApiUrl output) instead"}
		case strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "no EC2 IMDS") || strings.Contains(msg, "get identity"):
			return nil, noCredentials(err)
		}
		return nil, &Error{Message: fmt.Sprintf("describing the stack %q: %v", stack, err), Err: err,
			Hint: "check your network, --region and --profile"}
	}
	outputs := map[string]string{}
	for _, s := range out.Stacks {
		for _, o := range s.Outputs {
			outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		}
	}
	return outputs, nil
}
