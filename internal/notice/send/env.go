package send

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/notice"
)

// Env is the notify function's configuration (config.NoticeNames).
type Env struct {
	SecretARN string   // NOTICE_SECRET_ARN
	From      string   // NOTICE_FROM: the SES sender; "" sends no email
	Page      string   // NOTICE_PAGE_URL: the waiting page
	API       string   // NOTICE_API_URL
	PushHosts []string // NOTICE_PUSH_HOSTS; nil: notice.DefaultPushHosts
}

// ReadEnv reads and checks the function's variables, every problem at once.
func ReadEnv(getenv func(string) string) (Env, error) {
	e := Env{SecretARN: strings.TrimSpace(getenv(config.EnvNoticeSecretARN)), From: strings.TrimSpace(getenv(config.EnvNoticeFrom)),
		Page: strings.TrimSpace(getenv(config.EnvNoticePageURL)), API: strings.TrimSpace(getenv(config.EnvNoticeAPIURL))}
	for _, h := range strings.Split(getenv(config.EnvNoticePushHosts), ",") {
		if h = strings.TrimSpace(strings.ToLower(h)); h != "" {
			e.PushHosts = append(e.PushHosts, h)
		}
	}
	var errs []error
	if e.SecretARN == "" {
		errs = append(errs, fmt.Errorf("%s is required: the notice secret", config.EnvNoticeSecretARN))
	}
	for name, v := range map[string]string{config.EnvNoticePageURL: e.Page, config.EnvNoticeAPIURL: e.API} {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s=%q is not an http(s) URL", name, v))
		}
	}
	return e, errors.Join(errs...)
}

// SecretsGetter is the part of the Secrets Manager client Keys uses.
type SecretsGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Keys reads the notice secret's AWSCURRENT and, once rotated, AWSPREVIOUS
// value and derives the keys of each: an address sealed, or a subscription
// made, before a rotation still opens and is signed for.
func Keys(ctx context.Context, sm SecretsGetter, arn string) ([]*notice.Keys, error) {
	var out []*notice.Keys
	for _, stage := range []string{"AWSCURRENT", "AWSPREVIOUS"} {
		v, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn, VersionStage: &stage})
		var notFound *smtypes.ResourceNotFoundException
		switch {
		case stage == "AWSPREVIOUS" && errors.As(err, &notFound):
			return out, nil // never rotated
		case err != nil:
			return nil, fmt.Errorf("notice secret %s: %w", stage, err)
		case v.SecretString == nil:
			return nil, fmt.Errorf("notice secret %s: no SecretString", stage)
		}
		k, err := notice.FromSecret([]byte(*v.SecretString))
		if err != nil {
			return nil, fmt.Errorf("notice secret %s: %w", stage, err)
		}
		out = append(out, k)
	}
	return out, nil
}
