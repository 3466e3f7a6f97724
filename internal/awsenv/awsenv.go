// Package awsenv builds the AWS SDK's configuration of a Lambda function from
// its environment, the way Lambda hands it over: AWS_REGION, and the function
// role's credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, valid for the life of the execution environment.
//
// The SDK's config.LoadDefaultConfig finds credentials anywhere (profiles,
// SSO, web identity, container and instance metadata) and links the clients
// of every one of those sources, about 1.8 MB of each bootstrap. A function
// only ever needs the environment, so the functions use Config instead; the
// operator CLI, which runs on people's machines, keeps LoadDefaultConfig.
//
// Endpoint overrides follow the SDK's variables: AWS_ENDPOINT_URL_<SERVICE>
// (the service id in capitals, spaces as underscores: S3, SECRETS_MANAGER,
// EVENTBRIDGE) before AWS_ENDPOINT_URL. The tests point the functions at
// local servers with them.
package awsenv

import (
	"errors"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// ErrNoCredentials is returned when the environment holds no credentials.
var ErrNoCredentials = errors.New("no AWS credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which Lambda sets from the function's role)")

// ErrNoRegion is returned when the environment names no region.
var ErrNoRegion = errors.New("no AWS region in the environment (AWS_REGION, which Lambda sets)")

// Config returns the SDK configuration from the environment: the region, the
// static credentials and the general endpoint override, if any. The clients'
// own defaults (retries, HTTP client) are the SDK's.
func Config() (aws.Config, error) {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, ErrNoRegion
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return aws.Config{}, ErrNoCredentials
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN")),
	}
	if u := os.Getenv("AWS_ENDPOINT_URL"); u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	return cfg, nil
}

// Endpoint returns the endpoint override of one service (its SDK service id,
// e.g. "S3", "Secrets Manager", "EventBridge"): AWS_ENDPOINT_URL_<ID>, else
// base (the general override Config put in aws.Config.BaseEndpoint, or nil).
// Use it in the client's options: o.BaseEndpoint = awsenv.Endpoint("S3", o.BaseEndpoint).
func Endpoint(service string, base *string) *string {
	name := "AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(service, " ", "_"))
	if u := os.Getenv(name); u != "" {
		return aws.String(u)
	}
	return base
}
