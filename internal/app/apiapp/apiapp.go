// Package apiapp builds the HTTP API on the core of package app: the token
// keys (the stack's keys object in S3 when deployed, Secrets Manager when the
// secret ARNs are given, a local folder otherwise), the ticket,
// entry-token and origin-credential services, and the api.Handler over them.
// It is the one place api.Options is filled in; the six API Lambdas, the
// local stack, the simulator and the bench all build their handler here.
package apiapp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/api/bookingapi"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/awsenv"
	"github.com/vestibule-dev/vestibule/internal/awsenv/secrets"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/keysync"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Options are the handler's settings that do not come from the environment;
// the zero value is production's.
type Options struct {
	Clock        func() time.Time // nil: time.Now
	TickInterval time.Duration    // how often admission ticks (pollAfterMs uses it); 0: 1 s
	Logger       *slog.Logger     // nil: discard
	Jitter       func() float64   // nil: random in [0.9, 1.1]
	// Booking serves the booking routes (nil: they answer 404); Orders
	// publishes their order events (nil: they wait in the outbox for the sweep).
	Booking bookingapi.Engine
	Orders  booking.Publisher
	// Edge requires CloudFront's origin header on the public routes; nil: not required.
	Edge *api.EdgeGuard
	// InsecureLoopback lets the edge gate's cookie go without Secure on a
	// loopback host (the local stack's plain HTTP); never set in AWS.
	InsecureLoopback bool
}

// LoadKeys loads the token keys: from the keys object (KEYS_OBJECT) or from
// Secrets Manager when the config names them, otherwise from its key folder
// (created with fresh keys on the first run).
func LoadKeys(ctx context.Context, c config.Config) (*token.Keys, error) {
	switch {
	case c.KeysObject != "":
		keys, _, err := LoadSecrets(ctx, c)
		return keys, err
	case c.TicketSecretARN == "":
		k, err := token.LoadLocal(c.KeyDir)
		if err != nil {
			return nil, fmt.Errorf("local keys in %s: %w", c.KeyDir, err)
		}
		return k, nil
	}
	sm, err := secretsClient(ctx)
	if err != nil {
		return nil, err
	}
	return token.LoadSecretsManager(ctx, sm, c.TicketSecretARN, c.EntryKeyARN)
}

// LoadSecrets loads what a function needs at start-up: the token keys and the
// guard of the public routes (nil: no origin header required). With
// KEYS_OBJECT both come from that one S3 object (FromObject), which is how
// the stack runs them: no Secrets Manager call, so no interface endpoint.
// Otherwise the keys come from LoadKeys and the guard from ORIGIN_SECRET_ARN.
func LoadSecrets(ctx context.Context, c config.Config) (*token.Keys, *api.EdgeGuard, error) {
	if c.KeysObject != "" {
		obj, err := keysync.ParseObject(c.KeysObject)
		if err != nil {
			return nil, nil, err
		}
		awsCfg, err := awsenv.Config()
		if err != nil {
			return nil, nil, fmt.Errorf("aws config: %w", err)
		}
		return FromObject(ctx, app.NewS3(awsCfg), obj)
	}
	keys, err := LoadKeys(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if c.OriginSecretARN == "" {
		return keys, nil, nil
	}
	sm, err := secretsClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	edge, err := NewEdgeGuard(ctx, sm, c)
	if err != nil {
		return nil, nil, err
	}
	return keys, edge, nil
}

// FromObject reads the key material object once and returns the keys and,
// when the material holds origin values, the guard of the public routes. The
// guard re-reads the object when CloudFront sends a value it does not know (at
// most once a minute, api.EdgeReloadInterval), so a running function follows a
// rotation of the origin secret once keysync has copied it.
func FromObject(ctx context.Context, g keysync.Getter, obj keysync.Object) (*token.Keys, *api.EdgeGuard, error) {
	m, err := keysync.Get(ctx, g, obj)
	if err != nil {
		return nil, nil, err
	}
	keys, err := m.Keys()
	if err != nil {
		return nil, nil, err
	}
	if len(m.Origin) == 0 {
		return keys, nil, nil
	}
	reload := func(ctx context.Context) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		m, err := keysync.Get(ctx, g, obj)
		if err != nil {
			return nil, err
		}
		if len(m.Origin) == 0 {
			// Never drop the guard of a running function: keep what it has.
			return nil, fmt.Errorf("%w: %s holds no origin value", token.ErrKeyMaterial, obj)
		}
		return m.Origin, nil
	}
	return keys, api.NewEdgeGuard(m.Origin, reload, nil), nil
}

func secretsClient(ctx context.Context) (*secretsmanager.Client, error) {
	awsCfg, err := awsenv.Config()
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return secrets.NewClient(awsCfg), nil
}

// MinOriginSecretLen refuses an origin secret short enough to guess.
const MinOriginSecretLen = token.MinOriginSecretLen

// OriginSecretValues reads the values of the origin secret the public routes
// accept: its AWSCURRENT version and, once it has been rotated, its
// AWSPREVIOUS one (CloudFront keeps sending the old value until the stack is
// deployed with the new one; see docs/DEPLOY.md, "Secrets and rotation").
func OriginSecretValues(ctx context.Context, sm token.SecretsGetter, arn string) ([]string, error) {
	get := func(stage string) (string, error) {
		out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn, VersionStage: &stage})
		if err != nil {
			return "", err
		}
		if out == nil || out.SecretString == nil || len(*out.SecretString) < MinOriginSecretLen {
			return "", fmt.Errorf("origin secret %s: no SecretString of at least %d characters", stage, MinOriginSecretLen)
		}
		return *out.SecretString, nil
	}
	current, err := get("AWSCURRENT")
	if err != nil {
		return nil, fmt.Errorf("origin secret: %w", err)
	}
	previous, err := get("AWSPREVIOUS")
	var notFound *smtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return []string{current}, nil // never rotated
	case err != nil:
		return nil, fmt.Errorf("origin secret: %w", err)
	}
	return []string{current, previous}, nil
}

// NewEdgeGuard loads the origin secret and returns the guard of the public
// routes, which reloads it when CloudFront starts sending a value it does not
// know (after a rotation). It returns nil when the config names no secret.
func NewEdgeGuard(ctx context.Context, sm token.SecretsGetter, c config.Config) (*api.EdgeGuard, error) {
	if c.OriginSecretARN == "" {
		return nil, nil
	}
	values, err := OriginSecretValues(ctx, sm, c.OriginSecretARN)
	if err != nil {
		return nil, err
	}
	reload := func(ctx context.Context) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return OriginSecretValues(ctx, sm, c.OriginSecretARN)
	}
	return api.NewEdgeGuard(values, reload, nil), nil
}

// NewHandler builds the handler of every route (api.All) over a queue and
// keys, as the config says: the local stack's, the simulator's, the bench's.
func NewHandler(q api.Queue, keys *token.Keys, c config.Config, o Options) *api.Handler {
	return NewPartHandler(api.All(), q, keys, c, o)
}

// NewPartHandler builds the handler of part's routes over a queue and keys,
// as the config says. The edge gate's cookie keys are derived once, here,
// from the entry seeds (token.Keys.GateKeys); keys without seeds leave the
// gate's routes off.
func NewPartHandler(part api.Part, q api.Queue, keys *token.Keys, c config.Config, o Options) *api.Handler {
	var gateOpts *api.GateOptions
	if ring, err := keys.GateKeys(); err == nil {
		gateOpts = &api.GateOptions{Keys: ring, InsecureLoopback: o.InsecureLoopback}
	}
	entries := token.NewEntries(keys.Entry, c.Issuer)
	provider, err := token.NewOIDC(keys.TicketSecret, entries)
	if err != nil {
		provider = nil // no ticket secret to seal with: the provider's routes answer 404
	}
	return api.NewPart(api.Options{
		Notices:      NoticeOptions(keys, c),
		Gate:         gateOpts,
		OIDC:         provider,
		Queue:        q,
		Tickets:      token.NewTickets(keys.TicketSecret, c.Issuer),
		Entries:      entries,
		Origins:      token.NewOrigins(keys.TicketSecret),
		Challenges:   challenge.New(keys.TicketSecret),
		Sessions:     token.NewBookingSessions(keys.TicketSecret, c.Issuer),
		Booking:      o.Booking,
		Orders:       o.Orders,
		AdminAuth:    c.AdminAuth,
		AdminKey:     c.AdminKey,
		Edge:         o.Edge,
		DefaultRoom:  c.DefaultRoom,
		TickInterval: o.TickInterval,
		Clock:        o.Clock,
		Logger:       o.Logger,
		LogSample:    api.SampleLog(c.LogSample),
		Jitter:       o.Jitter,
	}, part)
}

// NoticeOptions are the notices' options of a deployment with keys and
// configuration c: nil when it sends no notices (no channel in
// NOTICE_CHANNELS, or no notice keys). The API functions seal to the public
// half of the notice secret's keys (the keys object's); make dev derives it
// from its local secret. A notice key that cannot be read leaves the notices
// off and the rest of the API up.
func NoticeOptions(keys *token.Keys, c config.Config) *api.NoticeOptions {
	if !c.NoticePush && !c.NoticeEmail {
		return nil
	}
	var pub notice.Public
	switch {
	case keys.Notice != nil:
		p, err := notice.ParsePublic(keys.Notice.Seal, keys.Notice.VAPID)
		if err != nil {
			return nil
		}
		pub = p
	case keys.NoticeSecret != nil:
		k, err := notice.FromSecret(keys.NoticeSecret)
		if err != nil {
			return nil
		}
		pub = k.Public()
	default:
		return nil
	}
	s, err := notice.NewSealer(pub)
	if err != nil {
		return nil
	}
	return &api.NoticeOptions{Sealer: s, Hasher: notice.NewHasher(keys.TicketSecret),
		Policy: notice.Policy{Push: c.NoticePush, Email: c.NoticeEmail, PushHosts: c.NoticePushHosts}}
}

// Main is the start-up of the API function of part: the core from the
// environment, the keys, the handler of part's routes; or one line naming the
// function and every problem, and exit 1. publisher builds the publisher of
// the order events (the booking function's orders.New, which links the
// EventBridge client BOOKING_EVENT_BUS may ask for); nil for a function whose
// routes publish none. Only mains call it.
func Main(part api.Part, publisher func(context.Context, config.Config) (booking.Publisher, error)) *api.Handler {
	core := app.Main(part.Function)
	ctx := context.Background()
	keys, edge, err := LoadSecrets(ctx, core.Config)
	if err != nil {
		app.Fail(part.Function, err)
	}
	o := Options{Logger: core.Logger, Booking: core.Booking, Edge: edge}
	if publisher != nil {
		if o.Orders, err = publisher(ctx, core.Config); err != nil {
			app.Fail(part.Function, err)
		}
	}
	return NewPartHandler(part, core.Queue, keys, core.Config, o)
}

// Ephemeral is a configuration with a random admin key (admin auth by key)
// and fresh in-memory keys, for programs that run the API in-process for a
// while (the simulator, the bench).
func Ephemeral(issuer string) (config.Config, *token.Keys, error) {
	keys, err := token.NewKeys()
	if err != nil {
		return config.Config{}, nil, err
	}
	admin := make([]byte, 16)
	rand.Read(admin) // never fails (crypto/rand, Go ≥ 1.24)
	c := config.Config{
		Issuer: issuer, AdminAuth: config.AdminKey, AdminKey: hex.EncodeToString(admin),
		DefaultRoom: room.DefaultConfig(),
		LogSample:   config.DefaultLogSample, // as deployed: the bench measures the log bytes of a call
	}
	return c, keys, nil
}
