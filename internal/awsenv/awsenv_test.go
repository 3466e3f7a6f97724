package awsenv

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestConfigFromTheEnvironment(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_DEFAULT_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "session")
	t.Setenv("AWS_ENDPOINT_URL", "")
	cfg, err := Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" {
		t.Errorf("region %q, want AWS_REGION's eu-west-1 over AWS_DEFAULT_REGION", cfg.Region)
	}
	c, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || c.AccessKeyID != "AKIDTEST" || c.SecretAccessKey != "secret" || c.SessionToken != "session" {
		t.Errorf("credentials %+v, %v: want the environment's", c, err)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("base endpoint %q with no AWS_ENDPOINT_URL", *cfg.BaseEndpoint)
	}

	t.Setenv("AWS_REGION", "")
	if cfg, err := Config(); err != nil || cfg.Region != "us-east-1" {
		t.Errorf("without AWS_REGION: %q, %v; want AWS_DEFAULT_REGION's", cfg.Region, err)
	}
	t.Setenv("AWS_DEFAULT_REGION", "")
	if _, err := Config(); !errors.Is(err, ErrNoRegion) {
		t.Errorf("without a region: %v, want ErrNoRegion", err)
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := Config(); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("without a secret key: %v, want ErrNoCredentials", err)
	}
}

func TestEndpointOverrides(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_ENDPOINT_URL", "http://general")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://s3-only")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://sm-only")
	cfg, err := Config()
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(cfg.BaseEndpoint) != "http://general" {
		t.Errorf("base endpoint %q, want AWS_ENDPOINT_URL", aws.ToString(cfg.BaseEndpoint))
	}
	for service, want := range map[string]string{"S3": "http://s3-only", "Secrets Manager": "http://sm-only", "EventBridge": "http://general"} {
		if got := aws.ToString(Endpoint(service, cfg.BaseEndpoint)); got != want {
			t.Errorf("%s: endpoint %q, want %q", service, got, want)
		}
	}
	if Endpoint("EventBridge", nil) != nil {
		t.Error("no override and no base: want nil (the SDK's own endpoint)")
	}
}
