// Package apiapp builds the HTTP API on the core of package app: the token
// keys (Secrets Manager when deployed, a local folder otherwise), the ticket,
// entry-token and origin-credential services, and the api.Handler over them.
// It is the one place api.Options is filled in; the five API Lambdas, the
// local stack, the simulator and the bench all build their handler here.
package apiapp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/config"
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
}

// LoadKeys loads the token keys: from Secrets Manager when the config names
// the secrets, otherwise from its key folder (created with fresh keys on the
// first run).
func LoadKeys(ctx context.Context, c config.Config) (*token.Keys, error) {
	if c.TicketSecretARN == "" {
		k, err := token.LoadLocal(c.KeyDir)
		if err != nil {
			return nil, fmt.Errorf("local keys in %s: %w", c.KeyDir, err)
		}
		return k, nil
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return token.LoadSecretsManager(ctx, secretsmanager.NewFromConfig(awsCfg), c.TicketSecretARN, c.EntryKeyARN)
}

// NewHandler builds the API handler over a queue and keys, as the config says.
func NewHandler(q room.Queue, keys *token.Keys, c config.Config, o Options) *api.Handler {
	return api.New(api.Options{
		Queue:        q,
		Tickets:      token.NewTickets(keys.TicketSecret, c.Issuer),
		Entries:      token.NewEntries(keys.Entry, c.Issuer),
		Origins:      token.NewOrigins(keys.TicketSecret),
		Challenges:   challenge.New(keys.TicketSecret),
		AdminAuth:    c.AdminAuth,
		AdminKey:     c.AdminKey,
		DefaultRoom:  c.DefaultRoom,
		TickInterval: o.TickInterval,
		Clock:        o.Clock,
		Logger:       o.Logger,
		Jitter:       o.Jitter,
	})
}

// Main is the start-up of an API function: the core from the environment, the
// keys, the handler; or one line naming the function and every problem, and
// exit 1. Only mains call it.
func Main(name string) *api.Handler {
	core := app.Main(name)
	keys, err := LoadKeys(context.Background(), core.Config)
	if err != nil {
		app.Fail(name, err)
	}
	return NewHandler(core.Queue, keys, core.Config, Options{Logger: core.Logger})
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
	}
	return c, keys, nil
}
