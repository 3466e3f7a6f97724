// Package secrets builds the Secrets Manager client of a function the one
// way: from awsenv.Config, with AWS_ENDPOINT_URL_SECRETS_MANAGER honoured
// (the emulator tests point it at a loopback server). It is apart from
// awsenv so that a program that reads no secret (admit) does not link the
// Secrets Manager SDK.
package secrets

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vestibule-dev/vestibule/internal/awsenv"
)

// NewClient is the Secrets Manager client of cfg.
func NewClient(cfg aws.Config) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		o.BaseEndpoint = awsenv.Endpoint("Secrets Manager", o.BaseEndpoint)
	})
}
