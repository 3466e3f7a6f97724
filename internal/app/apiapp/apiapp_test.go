package apiapp_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// memorySecrets stands in for Secrets Manager: versions by ARN and stage.
type memorySecrets struct {
	versions map[string]string // "arn/stage" → value
	calls    int
}

func (m *memorySecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	m.calls++
	v, ok := m.versions[*in.SecretId+"/"+*in.VersionStage]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: in.VersionStage}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: &v}, nil
}

const (
	arn  = "arn:aws:secretsmanager:us-east-1:123456789012:secret:origin"
	cur  = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01"
	prev = "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba987654321098"
)

func TestOriginSecretValues(t *testing.T) {
	ctx := context.Background()
	// GIVEN a secret never rotated THEN its current value alone is accepted
	got, err := apiapp.OriginSecretValues(ctx, &memorySecrets{versions: map[string]string{arn + "/AWSCURRENT": cur}}, arn)
	if err != nil || !slices.Equal(got, []string{cur}) {
		t.Fatalf("got %v, %v", got, err)
	}
	// GIVEN a rotated secret THEN the current and the previous values are
	got, err = apiapp.OriginSecretValues(ctx, &memorySecrets{versions: map[string]string{arn + "/AWSCURRENT": cur, arn + "/AWSPREVIOUS": prev}}, arn)
	if err != nil || !slices.Equal(got, []string{cur, prev}) {
		t.Fatalf("got %v, %v", got, err)
	}
	// GIVEN no secret, or a value short enough to guess THEN it is an error (the cold start fails)
	for _, versions := range []map[string]string{{}, {arn + "/AWSCURRENT": "short"}, {arn + "/AWSCURRENT": cur, arn + "/AWSPREVIOUS": "short"}} {
		if _, err := apiapp.OriginSecretValues(ctx, &memorySecrets{versions: versions}, arn); err == nil {
			t.Errorf("%v: no error", versions)
		}
	}
}

func TestNewEdgeGuard(t *testing.T) {
	ctx := context.Background()
	sm := &memorySecrets{versions: map[string]string{arn + "/AWSCURRENT": cur}}
	// GIVEN no ORIGIN_SECRET_ARN (make dev, sam local) THEN there is no guard and no call
	g, err := apiapp.NewEdgeGuard(ctx, sm, config.Config{})
	if g != nil || err != nil || sm.calls != 0 {
		t.Fatalf("guard %v err %v calls %d", g, err, sm.calls)
	}
	// GIVEN the secret THEN the guard accepts its value
	g, err = apiapp.NewEdgeGuard(ctx, sm, config.Config{OriginSecretARN: arn})
	if err != nil || !g.Verify(ctx, cur) {
		t.Fatalf("guard refuses the current value: %v", err)
	}
	// WHEN the secret is rotated and CloudFront sends the new value
	sm.versions = map[string]string{arn + "/AWSCURRENT": prev, arn + "/AWSPREVIOUS": cur}
	// THEN the running guard reloads and accepts both
	if !g.Verify(ctx, prev) || !g.Verify(ctx, cur) {
		t.Fatal("the guard does not follow a rotation")
	}
	// GIVEN Secrets Manager failing at a cold start THEN it is an error
	_, err = apiapp.NewEdgeGuard(ctx, &memorySecrets{}, config.Config{OriginSecretARN: arn})
	var nf *smtypes.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("err %v", err)
	}
}
