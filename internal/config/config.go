// Package config is Vestibule's configuration: the name of every environment
// variable the functions read, and Load, which reads those of the API
// functions, checks them and reports every problem at once (errors.Join). It
// builds nothing: the clients are made by the composition root (internal/app)
// from a Config. infra/ imports the names from here, so the template and the
// code cannot disagree. One name lives elsewhere: the forwarder's bus,
// eventbus.EnvBus, so that the forwarder links nothing but its own package.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("configuration")

// The environment variables the functions read. Names lists them all.
const (
	EnvRedisURL          = "REDIS_URL"            // redis:// or rediss:// (TLS)
	EnvRedisCluster      = "REDIS_CLUSTER"        // true: REDIS_URL names a cluster seed
	EnvRedisCAFile       = "REDIS_CA_FILE"        // PEM CA bundle to trust for rediss://
	EnvTicketSecretARN   = "TICKET_SECRET_ARN"    // Secrets Manager: the ticket secret
	EnvEntryKeySecretARN = "ENTRY_KEY_SECRET_ARN" // Secrets Manager: the entry-token signing keys
	EnvKeyDir            = "VESTIBULE_KEY_DIR"    // local keys, used when no ARNs are set
	EnvIssuer            = "VESTIBULE_ISSUER"     // iss of tickets and entry tokens
	EnvAdminAuth         = "ADMIN_AUTH"           // iam (default) or key
	EnvAdminKey          = "VESTIBULE_ADMIN_KEY"  // the admin bearer key with ADMIN_AUTH=key
	EnvDefaultRoomConfig = "DEFAULT_ROOM_CONFIG"  // JSON room settings over room.DefaultConfig()
	EnvLogLevel          = "LOG_LEVEL"            // debug, info, warn, error
	EnvLogSample         = "LOG_SAMPLE"           // the fraction of successful polls (status reads, forward-auth checks) logged; default 0.01
	EnvBookingEventBus   = "BOOKING_EVENT_BUS"    // EventBridge bus of order events; empty: JSON lines on stdout
	EnvOriginSecretARN   = "ORIGIN_SECRET_ARN"    // Secrets Manager: the value CloudFront sends in OriginHeader
	EnvStack             = "VESTIBULE_STACK"      // the CloudFormation stack: a dimension of the custom metrics
	EnvSettingsBucket    = "SETTINGS_BUCKET"      // S3 bucket[/prefix] of the durable room settings (package durable)
	EnvKeysObject        = "KEYS_OBJECT"          // S3 bucket/key of the key material (package keysync); wins over the ARNs
	EnvHeadRecordSeconds = "HEAD_RECORD_SECONDS"  // seconds between two records of a room's admission head in SETTINGS_BUCKET; default 10
	EnvNoticeChannels    = "NOTICE_CHANNELS"      // the notices the deployment sends: push, email, both (comma-separated) or none
	EnvNoticePushHosts   = "NOTICE_PUSH_HOSTS"    // the push services a push endpoint may be on (comma-separated); default notice.DefaultPushHosts
	EnvRegionFence       = "REGION_FENCE"         // the region the functions write for in a two-region deployment (docs/ENGINE.md, "Regions"); empty: none
)

// EnvLambdaFunctionName is set by the Lambda runtime itself (never by the
// template: it is a reserved name). Load reads it only to know it runs in
// Lambda, where the only writable folder is /tmp.
const EnvLambdaFunctionName = "AWS_LAMBDA_FUNCTION_NAME"

// EnvGateKVSARN is the gatekeys function's own variable, beside
// EnvEntryKeySecretARN: the ARN of the CloudFront KeyValueStore it writes the
// edge gate's keys to. Load does not read it, nor Names list it.
const EnvGateKVSARN = "GATE_KVS_ARN"

// The notify function's own variables (functions/notify, docs/API.md
// "Configuration"): it runs outside the VPC, holds the notice secret and
// calls the API; Load does not read them, nor Names list them.
const (
	EnvNoticeSecretARN = "NOTICE_SECRET_ARN" // Secrets Manager: the notice secret (its AWSCURRENT and AWSPREVIOUS)
	EnvNoticeFrom      = "NOTICE_FROM"       // the SES sender of email notices; empty: no email
	EnvNoticePageURL   = "NOTICE_PAGE_URL"   // the waiting page a notice links to
	EnvNoticeAPIURL    = "NOTICE_API_URL"    // the API whose admin routes it takes and acks notices with
)

// NoticeNames are the notify function's own variables.
func NoticeNames() []string {
	return []string{EnvNoticeSecretARN, EnvNoticeFrom, EnvNoticePageURL, EnvNoticeAPIURL, EnvNoticePushHosts}
}

// OriginHeader is the header CloudFront adds to every request it sends to the
// API (an origin custom header); its value is the origin secret. The public
// routes refuse a request without it when ORIGIN_SECRET_ARN is set.
const OriginHeader = "X-Vestibule-Origin"

// Names is every variable Load reads that a deployment sets, in the order
// above. The stack declares every one of them on every function (empty where
// unused), because `sam local` only overrides variables a template declares.
func Names() []string {
	return []string{EnvRedisURL, EnvRedisCluster, EnvRedisCAFile, EnvTicketSecretARN, EnvEntryKeySecretARN,
		EnvKeyDir, EnvIssuer, EnvAdminAuth, EnvAdminKey, EnvDefaultRoomConfig, EnvLogLevel, EnvLogSample,
		EnvBookingEventBus, EnvOriginSecretARN, EnvStack, EnvSettingsBucket, EnvKeysObject, EnvHeadRecordSeconds,
		EnvNoticeChannels, EnvNoticePushHosts, EnvRegionFence}
}

// RuntimeNames are the variables Load reads that the Lambda runtime sets;
// a template must not declare them.
func RuntimeNames() []string { return []string{EnvLambdaFunctionName} }

// AdminAuth is how admin routes are authenticated.
type AdminAuth string

// The admin authentication modes.
const (
	// AdminIAM trusts API Gateway's IAM authorizer: the request must carry
	// requestContext.authorizer.iam, which only API Gateway can set.
	AdminIAM AdminAuth = "iam"
	// AdminKey requires Authorization: Bearer <admin key> (local stack, tests).
	AdminKey AdminAuth = "key"
)

// Config is everything the functions read from the environment.
type Config struct {
	RedisURL     string
	RedisCluster bool
	RedisCAFile  string

	TicketSecretARN string
	EntryKeyARN     string
	KeyDir          string
	Issuer          string

	AdminAuth AdminAuth
	AdminKey  string // required with AdminKey auth

	DefaultRoom room.Config // the base of a new room's settings
	LogLevel    slog.Level
	// LogSample is the fraction, from 0 to 1, of the successful requests of the
	// hot routes (a poll, a status read) whose request line is logged; every
	// other request, and every answer of 400 or more, is always logged. Load
	// sets DefaultLogSample; the zero value logs none of them.
	LogSample float64

	// RegionFence is the region the engine writes for (REGION_FENCE): set in
	// a two-region deployment, so a failover fences the old region's late
	// writes out (roomdb.WithRegion); empty in one region.
	RegionFence string

	// BookingEventBus is the EventBridge bus the booking kit puts order events
	// on with PutEvents; empty: they are written to stdout as JSON lines (a
	// CloudWatch Logs subscription forwards them; docs/BOOKING.md).
	BookingEventBus string
	// OriginSecretARN names the secret whose current and previous values the
	// public routes accept in OriginHeader; empty: no header is required
	// (make dev, tests, sam local).
	OriginSecretARN string
	// Stack is the CloudFormation stack name, the Stack dimension of the
	// custom metrics; empty: no dimension (local programs).
	Stack string
	// SettingsBucket is "bucket" or "bucket/prefix": where each room's settings
	// and admission head are kept durably; "" keeps them in Redis only.
	SettingsBucket string
	// KeysObject is "bucket/key": the key material the keysync function copies
	// from the secrets (tokens, entry keys, origin values). Set, the functions
	// read their keys there and never call Secrets Manager; the secret ARNs
	// must then be empty.
	KeysObject string
	// HeadRecordEvery is how often a room's admission head is recorded in
	// SettingsBucket while it admits: the admissions a total loss of Redis
	// can grant a second time are those of at most this long (package
	// durable, DefaultHeadEvery, which states the S3 cost). 1 to 60 s.
	HeadRecordEvery time.Duration
	// NoticePush and NoticeEmail are the notices of a visitor's turn the
	// deployment sends (docs/ENGINE.md, "Notices"): each only with the
	// notice keys in the keys object (or make dev's), email only where an
	// SES sender is set up. NoticePushHosts are the push services a
	// subscription's endpoint may be on; nil: notice.DefaultPushHosts.
	NoticePush, NoticeEmail bool
	NoticePushHosts         []string
}

// Defaults.
const (
	DefaultKeyDir = ".vestibule/keys"
	// LambdaKeyDir is the default key folder inside Lambda, where everything
	// but /tmp is read-only (sam local without secrets, for instance).
	LambdaKeyDir  = "/tmp/vestibule/keys"
	DefaultIssuer = "vestibule"
	// MinAdminKeyLen keeps guessable admin keys out.
	MinAdminKeyLen = 16
	// DefaultLogSample logs one successful poll in a hundred: a waiting
	// visitor polls every few seconds, and logging every poll in full was
	// most of the log bill (docs/BENCHMARKS.md, "Log bytes per call").
	DefaultLogSample = 0.01
	// DefaultHeadRecordEvery is HEAD_RECORD_SECONDS when unset (durable.DefaultHeadEvery).
	DefaultHeadRecordEvery = 10 * time.Second
)

// Load reads and checks the configuration. getenv is os.Getenv in a main.
func Load(getenv func(string) string) (Config, error) {
	c := read(getenv)
	var p problems
	p.checkRedis(&c, getenv)
	p.checkKeys(c)
	p.checkAdmin(c)
	p.readOptional(&c, getenv)
	if strings.HasPrefix(c.SettingsBucket, "/") || strings.Contains(c.SettingsBucket, "//") {
		p.bad("%s=%q is not a bucket name with an optional /prefix", EnvSettingsBucket, c.SettingsBucket)
	}
	return c, errors.Join(p...)
}

// read is the configuration as the environment gives it, with the defaults
// of what it leaves unset; Load's checks follow.
func read(getenv func(string) string) Config {
	keyDir := DefaultKeyDir
	if getenv(EnvLambdaFunctionName) != "" {
		keyDir = LambdaKeyDir
	}
	return Config{
		RedisURL:        strings.TrimSpace(getenv(EnvRedisURL)),
		RedisCAFile:     getenv(EnvRedisCAFile),
		TicketSecretARN: getenv(EnvTicketSecretARN),
		EntryKeyARN:     getenv(EnvEntryKeySecretARN),
		KeyDir:          or(getenv(EnvKeyDir), keyDir),
		Issuer:          or(getenv(EnvIssuer), DefaultIssuer),
		AdminAuth:       AdminAuth(or(strings.ToLower(getenv(EnvAdminAuth)), string(AdminIAM))),
		AdminKey:        getenv(EnvAdminKey),
		DefaultRoom:     room.DefaultConfig(),
		LogSample:       DefaultLogSample,
		HeadRecordEvery: DefaultHeadRecordEvery,
		BookingEventBus: strings.TrimSpace(getenv(EnvBookingEventBus)),
		OriginSecretARN: strings.TrimSpace(getenv(EnvOriginSecretARN)),
		Stack:           strings.TrimSpace(getenv(EnvStack)),
		SettingsBucket:  strings.TrimSpace(getenv(EnvSettingsBucket)),
		KeysObject:      strings.TrimSpace(getenv(EnvKeysObject)),
	}
}

// problems are the configuration errors Load found, every one wrapping ErrConfig.
type problems []error

func (p *problems) bad(format string, a ...any) {
	*p = append(*p, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...))
}

// checkRedis checks the Redis URL and its TLS CA, and reads REDIS_CLUSTER.
func (p *problems) checkRedis(c *Config, getenv func(string) string) {
	if c.RedisURL == "" {
		p.bad("%s is required (redis://host:port or rediss://host:port)", EnvRedisURL)
	} else if !strings.HasPrefix(c.RedisURL, "redis://") && !strings.HasPrefix(c.RedisURL, "rediss://") {
		p.bad("%s must start with redis:// or rediss://", EnvRedisURL)
	}
	if v := getenv(EnvRedisCluster); v != "" {
		b, err := ParseBool(v)
		if err != nil {
			p.bad("%s=%q is not true or false", EnvRedisCluster, v)
		}
		c.RedisCluster = b
	}
	if c.RedisCAFile != "" && !strings.HasPrefix(c.RedisURL, "rediss://") {
		p.bad("%s needs a rediss:// %s", EnvRedisCAFile, EnvRedisURL)
	}
}

// checkKeys checks where the keys come from: both secret ARNs or neither, or
// the keys object instead of the ARNs.
func (p *problems) checkKeys(c Config) {
	if (c.TicketSecretARN == "") != (c.EntryKeyARN == "") {
		p.bad("set both %s and %s, or neither (local keys)", EnvTicketSecretARN, EnvEntryKeySecretARN)
	}
	if c.KeysObject == "" {
		return
	}
	if b, k, ok := strings.Cut(c.KeysObject, "/"); !ok || b == "" || k == "" || strings.HasPrefix(k, "/") {
		p.bad("%s=%q is not bucket/key", EnvKeysObject, c.KeysObject)
	}
	if c.TicketSecretARN != "" || c.OriginSecretARN != "" {
		p.bad("set %s or the secret ARNs (%s, %s, %s), not both", EnvKeysObject, EnvTicketSecretARN, EnvEntryKeySecretARN, EnvOriginSecretARN)
	}
}

// checkAdmin checks the admin authentication mode and, with a key, the key.
func (p *problems) checkAdmin(c Config) {
	switch c.AdminAuth {
	case AdminIAM:
	case AdminKey:
		if len(c.AdminKey) < MinAdminKeyLen {
			p.bad("%s=key needs %s of at least %d characters", EnvAdminAuth, EnvAdminKey, MinAdminKeyLen)
		}
	default:
		p.bad("%s=%q is not iam or key", EnvAdminAuth, c.AdminAuth)
	}
}

// readOptional reads the variables that are parsed over a default: the
// default room settings, the log level and sample, and
// the head record's period.
func (p *problems) readOptional(c *Config, getenv func(string) string) {
	if v := getenv(EnvDefaultRoomConfig); v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.DefaultRoom); err != nil {
			p.bad("%s is not a room config JSON object: %v", EnvDefaultRoomConfig, err)
		}
	}
	if v := getenv(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			p.bad("%s=%q is not debug, info, warn or error", EnvLogLevel, v)
		}
	}
	if v := getenv(EnvLogSample); v != "" {
		f, err := ParseLogSample(v)
		if err != nil {
			p.bad("%s=%q %v", EnvLogSample, v, err)
		}
		c.LogSample = f
	}
	for _, ch := range strings.Split(getenv(EnvNoticeChannels), ",") {
		switch strings.TrimSpace(strings.ToLower(ch)) {
		case "":
		case "push":
			c.NoticePush = true
		case "email":
			c.NoticeEmail = true
		default:
			p.bad("%s=%q names %q: the channels are push and email", EnvNoticeChannels, getenv(EnvNoticeChannels), ch)
		}
	}
	for _, h := range strings.Split(getenv(EnvNoticePushHosts), ",") {
		if h = strings.TrimSpace(strings.ToLower(h)); h != "" {
			c.NoticePushHosts = append(c.NoticePushHosts, h)
		}
	}
	if v := getenv(EnvRegionFence); v != "" {
		if !regionName.MatchString(v) {
			p.bad("%s=%q is not a region's name (such as us-east-1)", EnvRegionFence, v)
		}
		c.RegionFence = v
	}
	if v := getenv(EnvHeadRecordSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 60 {
			p.bad("%s=%q is not a whole number of seconds from 1 to 60", EnvHeadRecordSeconds, v)
		}
		c.HeadRecordEvery = time.Duration(n) * time.Second
	}
}

// regionName is what REGION_FENCE may be (lua.InRegion's rule).
var regionName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// ParseLogSample is the one reading of LOG_SAMPLE (and of the stack's logSample
// setting): a fraction from 0 to 1. On error it returns DefaultLogSample.
func ParseLogSample(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(f >= 0 && f <= 1) { // also refuses NaN
		return DefaultLogSample, errors.New("is not a fraction from 0 to 1 (0.01 logs one successful poll in a hundred, 1 every one, 0 none)")
	}
	return f, nil
}

// ParseBool is the one reading of a boolean setting, from the environment or
// a command line: what strconv.ParseBool accepts.
func ParseBool(s string) (bool, error) { return strconv.ParseBool(strings.TrimSpace(s)) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
