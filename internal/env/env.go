// Package env reads Vestibule's configuration from the environment and builds
// the clients every function shares: the Redis client (with timeouts short
// enough that an outage is a 503 in well under a second), the token keys (AWS
// Secrets Manager when deployed, a local folder in development) and the
// logger. Every main calls it once at start-up and stops with a clear message
// on a bad setting; nothing here runs inside a request.
package env

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("configuration")

// Redis client timeouts. A Lambda must answer 503 quickly when Redis is down
// or unreachable, so every wait is bounded, and nothing is retried: a retried
// script that did run (the reply was lost) would run twice, and a consume would
// then report its own success as a replay.
const (
	RedisDialTimeout = 400 * time.Millisecond
	RedisIOTimeout   = 400 * time.Millisecond
	RedisPoolTimeout = 400 * time.Millisecond
)

// Config is everything the functions read from the environment.
type Config struct {
	RedisURL     string // REDIS_URL: redis:// or rediss:// (TLS)
	RedisCluster bool   // REDIS_CLUSTER=true: REDIS_URL names a cluster seed
	RedisCAFile  string // REDIS_CA_FILE: PEM CA bundle to trust for rediss://

	TicketSecretARN string // TICKET_SECRET_ARN
	EntryKeyARN     string // ENTRY_KEY_SECRET_ARN
	KeyDir          string // VESTIBULE_KEY_DIR, used when no ARNs are set
	Issuer          string // VESTIBULE_ISSUER

	AdminAuth api.AdminAuth // ADMIN_AUTH: iam (default) or key
	AdminKey  string        // VESTIBULE_ADMIN_KEY, required with ADMIN_AUTH=key

	DefaultRoom room.Config // DEFAULT_ROOM_CONFIG (JSON) over room.DefaultConfig()
	LogLevel    slog.Level  // LOG_LEVEL: debug, info, warn, error
}

// Defaults.
const (
	DefaultKeyDir = ".vestibule/keys"
	DefaultIssuer = "vestibule"
	// MinAdminKeyLen keeps guessable admin keys out.
	MinAdminKeyLen = 16
)

// Load reads and checks the configuration. getenv is os.Getenv in a main.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		RedisURL:        strings.TrimSpace(getenv("REDIS_URL")),
		RedisCAFile:     getenv("REDIS_CA_FILE"),
		TicketSecretARN: getenv("TICKET_SECRET_ARN"),
		EntryKeyARN:     getenv("ENTRY_KEY_SECRET_ARN"),
		KeyDir:          or(getenv("VESTIBULE_KEY_DIR"), DefaultKeyDir),
		Issuer:          or(getenv("VESTIBULE_ISSUER"), DefaultIssuer),
		AdminAuth:       api.AdminAuth(or(strings.ToLower(getenv("ADMIN_AUTH")), string(api.AdminIAM))),
		AdminKey:        getenv("VESTIBULE_ADMIN_KEY"),
		DefaultRoom:     room.DefaultConfig(),
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...))
	}

	if c.RedisURL == "" {
		bad("REDIS_URL is required (redis://host:port or rediss://host:port)")
	} else if !strings.HasPrefix(c.RedisURL, "redis://") && !strings.HasPrefix(c.RedisURL, "rediss://") {
		bad("REDIS_URL must start with redis:// or rediss://")
	}
	if v := getenv("REDIS_CLUSTER"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("REDIS_CLUSTER=%q is not true or false", v)
		}
		c.RedisCluster = b
	}
	if c.RedisCAFile != "" && !strings.HasPrefix(c.RedisURL, "rediss://") {
		bad("REDIS_CA_FILE needs a rediss:// REDIS_URL")
	}
	if (c.TicketSecretARN == "") != (c.EntryKeyARN == "") {
		bad("set both TICKET_SECRET_ARN and ENTRY_KEY_SECRET_ARN, or neither (local keys)")
	}
	switch c.AdminAuth {
	case api.AdminIAM:
	case api.AdminKey:
		if len(c.AdminKey) < MinAdminKeyLen {
			bad("ADMIN_AUTH=key needs VESTIBULE_ADMIN_KEY of at least %d characters", MinAdminKeyLen)
		}
	default:
		bad("ADMIN_AUTH=%q is not iam or key", c.AdminAuth)
	}
	if v := getenv("DEFAULT_ROOM_CONFIG"); v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.DefaultRoom); err != nil {
			bad("DEFAULT_ROOM_CONFIG is not a room config JSON object: %v", err)
		}
	}
	if v := getenv("LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad("LOG_LEVEL=%q is not debug, info, warn or error", v)
		}
	}
	return c, errors.Join(errs...)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Redis builds the Redis client the configuration names.
func (c Config) Redis() (redis.UniversalClient, error) {
	return NewRedis(c.RedisURL, c.RedisCluster, c.RedisCAFile)
}

// NewRedis builds a client of a single node or, with cluster, of a Redis
// Cluster reached through the seed in url (ElastiCache Serverless is cluster
// mode). rediss:// turns on TLS; caFile adds a CA to trust (self-signed test
// servers); by default the system roots verify the server.
func NewRedis(url string, cluster bool, caFile string) (redis.UniversalClient, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%w: REDIS_URL: %v", ErrConfig, err)
	}
	if caFile != "" {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("%w: REDIS_CA_FILE needs rediss://", ErrConfig)
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: REDIS_CA_FILE: %v", ErrConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: REDIS_CA_FILE %s holds no PEM certificate", ErrConfig, caFile)
		}
		opt.TLSConfig.RootCAs = pool
	}
	if opt.TLSConfig != nil {
		opt.TLSConfig.MinVersion = tls.VersionTLS12
	}
	if !cluster {
		tune(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries, &opt.DialerRetries)
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), nil
	}
	if opt.DB != 0 {
		return nil, fmt.Errorf("%w: a cluster has only database 0", ErrConfig)
	}
	co := &redis.ClusterOptions{
		Addrs:     []string{opt.Addr},
		Username:  opt.Username,
		Password:  opt.Password,
		TLSConfig: opt.TLSConfig,
	}
	tune(&co.DialTimeout, &co.ReadTimeout, &co.WriteTimeout, &co.PoolTimeout, &co.MaxRetries, &co.DialerRetries)
	co.ContextTimeoutEnabled = true
	// A dead primary answers "connection refused", never MOVED, so without a
	// short reload the client keeps asking it for up to a minute after its
	// replica was promoted (seen in the chaos suite's failover test).
	co.ClusterStateReloadInterval = time.Second
	return redis.NewClusterClient(co), nil
}

func tune(dial, read, write, pool *time.Duration, retries, dialRetries *int) {
	*dial, *read, *write, *pool = RedisDialTimeout, RedisIOTimeout, RedisIOTimeout, RedisPoolTimeout
	*retries = -1    // go-redis: -1 disables retries (0 means the default, 3)
	*dialRetries = 1 // one dial attempt (the default is 5)
}

// Keys loads the token keys: from Secrets Manager when the ARNs are set,
// otherwise from KeyDir (created with fresh keys on the first run).
func (c Config) Keys(ctx context.Context) (*token.Keys, error) {
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

// Logger returns the JSON logger at the configured level.
func (c Config) Logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: c.LogLevel}))
}

// Deps are the clients a function builds once, outside its handler.
type Deps struct {
	Config Config
	Redis  redis.UniversalClient
	Engine *room.Engine
	Keys   *token.Keys
	Logger *slog.Logger
}

// Setup builds the Redis client, the engine and (withKeys) the token keys.
// The admit function needs no keys, so it never reads the secrets.
func Setup(ctx context.Context, c Config, withKeys bool) (*Deps, error) {
	rdb, err := c.Redis()
	if err != nil {
		return nil, err
	}
	d := &Deps{Config: c, Redis: rdb, Engine: room.New(rdb, room.WithMinPollInterval(api.MinPollInterval)), Logger: c.Logger(os.Stdout)}
	if withKeys {
		if d.Keys, err = c.Keys(ctx); err != nil {
			rdb.Close()
			return nil, err
		}
	}
	return d, nil
}

// API returns the HTTP API handler over the dependencies (which need keys).
func (d *Deps) API() *api.Handler {
	return api.New(api.Options{
		Queue:       d.Engine,
		Tickets:     token.NewTickets(d.Keys.TicketSecret, d.Config.Issuer),
		Entries:     token.NewEntries(d.Keys.Entry, d.Config.Issuer),
		Origins:     token.NewOrigins(d.Keys.TicketSecret),
		AdminAuth:   d.Config.AdminAuth,
		AdminKey:    d.Config.AdminKey,
		DefaultRoom: d.Config.DefaultRoom,
		Logger:      d.Logger,
	})
}

// Main is the start-up of an API function: load the configuration and build
// the handler, or print why not and exit 1. Only mains call it.
func Main(name string) *api.Handler {
	d := mustSetup(name, true)
	return d.API()
}

// MainEngine is Main for functions that need Redis but no tokens (admit).
func MainEngine(name string) *Deps {
	return mustSetup(name, false)
}

func mustSetup(name string, withKeys bool) *Deps {
	c, err := Load(os.Getenv)
	if err == nil {
		var d *Deps
		if d, err = Setup(context.Background(), c, withKeys); err == nil {
			return d
		}
	}
	// One line that names the function and every problem; the Lambda init
	// fails with it and CloudWatch shows it.
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(os.Stderr, "%s: start-up failed: %s\n", name, msg)
	os.Exit(1)
	return nil
}
