// Package app is Vestibule's composition root: from a config.Config it builds
// the Redis client, the room engine and the logger, the same way for every
// program (the seven Lambdas, the local stack, the simulator, the bench). The
// HTTP API on top of them (tokens, keys, handler) is built by app/apiapp, so
// a program that only ticks (admit) links neither the token library nor the
// Secrets Manager client.
package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/awsenv"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
)

// Redis client timeouts. A Lambda must answer 503 quickly when Redis is down
// or unreachable, so every wait is bounded, and nothing is retried: a retried
// script that did run (the reply was lost) would run twice, and a consume would
// then report its own success as a replay.
const (
	RedisDialTimeout = 400 * time.Millisecond
	RedisIOTimeout   = 400 * time.Millisecond
	RedisPoolTimeout = 400 * time.Millisecond
)

// Core is what every program builds first.
type Core struct {
	Config  config.Config
	Redis   redis.UniversalClient
	Engine  *roomdb.Engine
	Booking *bookingdb.Engine // the booking kit's engine, over the same Redis
	// Queue is the engine behind durable.Queue: what the API and the admit loop
	// use (room settings kept in SETTINGS_BUCKET when it is set, restored after
	// a total loss; request-driven ticks of quiet rooms).
	Queue  *durable.Queue
	Logger *slog.Logger
}

// Options change what New builds; the zero value is production's.
type Options struct {
	Clock  room.Clock            // nil: time.Now
	Redis  redis.UniversalClient // nil: a client of the config's REDIS_URL
	Logger *slog.Logger          // nil: JSON on stdout at the config's level
	Store  durable.Store         // nil: S3 of the config's SETTINGS_BUCKET, or none when it is unset
	// Events receives the admission events (roomevents.Emit): ticks that
	// changed something, consumes, completes. nil: none. The functions
	// (Main) write them to stdout, where the stack's log subscription finds them.
	Events eventbus.Publisher
}

// New builds the core from a configuration. It also sets the Stack
// dimension of the custom metrics (metrics.SetStack) from the configuration.
func New(c config.Config, o Options) (*Core, error) {
	metrics.SetStack(c.Stack)
	rdb := o.Redis
	if rdb == nil {
		var err error
		if rdb, err = NewRedis(c.RedisURL, c.RedisCluster, c.RedisCAFile); err != nil {
			return nil, err
		}
	}
	log := o.Logger
	if log == nil {
		log = NewLogger(c, os.Stdout)
	}
	store := o.Store
	if store == nil && c.SettingsBucket != "" {
		awsCfg, err := awsenv.Config()
		if err != nil {
			return nil, fmt.Errorf("aws config for %s: %w", config.EnvSettingsBucket, err)
		}
		store = durable.NewS3(NewS3(awsCfg), c.SettingsBucket)
	}
	var bopts []bookingdb.Option
	if o.Clock != nil {
		bopts = append(bopts, bookingdb.WithClock(o.Clock))
	}
	bopts = append(bopts, bookingdb.WithDefinitions(durable.Events(store))) // event definitions beside the rooms' settings
	bopts = append(bopts, bookingdb.WithLogger(log))                        // how an event came back from a total loss
	eng := NewEngine(rdb, o.Clock, roomdb.WithRegion(c.RegionFence))
	var under room.Engine = eng
	if o.Events != nil {
		under = roomevents.Emit(eng, o.Events, o.Clock, log)
	}
	q := durable.New(under, durable.Options{Store: store, Logger: log, Clock: o.Clock, HeadEvery: c.HeadRecordEvery})
	return &Core{Config: c, Redis: rdb, Engine: eng, Booking: bookingdb.New(rdb, bopts...), Queue: q, Logger: log}, nil
}

// Close closes the Redis client.
func (c *Core) Close() error { return c.Redis.Close() }

// NewEngine is the one place the engine's options are chosen: every program
// gets the same minimum poll interval (pollpolicy.MinInterval). clock nil is
// time.Now; more are options of the program's own (the region it writes for,
// a simulator's smaller eviction batch).
func NewEngine(rdb roomdb.Scripter, clock room.Clock, more ...roomdb.Option) *roomdb.Engine {
	opts := append([]roomdb.Option{roomdb.WithMinPollInterval(pollpolicy.MinInterval)}, more...)
	if clock != nil {
		opts = append(opts, roomdb.WithClock(clock))
	}
	return roomdb.New(rdb, opts...)
}

// NewLogger returns the JSON logger at the configured level.
func NewLogger(c config.Config, w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: c.LogLevel}))
}

// NewRedis builds a client of a single node or, with cluster, of a Redis
// Cluster reached through the seed in url (ElastiCache Serverless is cluster
// mode). rediss:// turns on TLS; caFile adds a CA to trust (self-signed test
// servers); by default the system roots verify the server.
func NewRedis(url string, cluster bool, caFile string) (redis.UniversalClient, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", config.ErrConfig, config.EnvRedisURL, err)
	}
	if caFile != "" {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("%w: %s needs rediss://", config.ErrConfig, config.EnvRedisCAFile)
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", config.ErrConfig, config.EnvRedisCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %s %s holds no PEM certificate", config.ErrConfig, config.EnvRedisCAFile, caFile)
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
		return nil, fmt.Errorf("%w: a cluster has only database 0", config.ErrConfig)
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
	cc := redis.NewClusterClient(co)
	cc.AddHook(sendOnce{RedisIOTimeout})
	return cc, nil
}

// sendOnce bounds each call of the cluster client, command or pipeline, by the
// I/O timeout. The cluster client retries a timed-out call by itself, up to
// MaxRedirects times whatever MaxRetries says, and a script whose reply was
// only late would then run twice (TestClusterClientSendsAScriptOnce). With the
// call's deadline at the timeout, the retry's back-off finds it passed and
// nothing is sent again; MOVED and ASK, answered at once, are still followed.
type sendOnce struct{ budget time.Duration }

func (sendOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h sendOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, h.budget)
		defer cancel()
		return next(ctx, cmd)
	}
}

func (h sendOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, h.budget)
		defer cancel()
		return next(ctx, cmds)
	}
}

func tune(dial, read, write, pool *time.Duration, retries, dialRetries *int) {
	*dial, *read, *write, *pool = RedisDialTimeout, RedisIOTimeout, RedisIOTimeout, RedisPoolTimeout
	*retries = -1    // go-redis: -1 disables retries (0 means the default, 3)
	*dialRetries = 1 // one dial attempt (the default is 5)
}

// Main is a function's start-up: load the configuration from the environment
// and build the core, or print one line naming the function and every problem
// and exit 1 (the Lambda init fails with it and CloudWatch shows it). Only
// mains call it.
func Main(name string) *Core {
	c, err := config.Load(os.Getenv)
	if err != nil {
		Fail(name, err)
	}
	core, err := New(c, Options{Events: eventbus.NewLog(os.Stdout)})
	if err != nil {
		Fail(name, err)
	}
	return core
}

// Fail prints why a program could not start, on one line, and exits 1.
func Fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "%s: start-up failed: %s\n", name, strings.ReplaceAll(err.Error(), "\n", "; "))
	os.Exit(1)
}

// NewS3 is the S3 client of a function, from awsenv.Config, honouring
// AWS_ENDPOINT_URL_S3.
func NewS3(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = awsenv.Endpoint("S3", o.BaseEndpoint) })
}
