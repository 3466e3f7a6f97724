package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// ErrBadSetting is returned for a deploy-time setting (CDK context) that cannot be used.
var ErrBadSetting = errors.New("bad deploy-time setting")

// CacheFlavour chooses the ElastiCache deployment.
type CacheFlavour string

const (
	// CacheServerless is ElastiCache Serverless for Valkey: no capacity planning, TLS always on,
	// billed per GB-hour stored and per ECPU. The default.
	CacheServerless CacheFlavour = "serverless"
	// CacheNodes is a node-based replication group: cluster mode, Multi-AZ with automatic failover,
	// TLS required. Cheaper under a steady high load, a fixed bill while idle.
	CacheNodes CacheFlavour = "nodes"
)

// DefaultRoomDefaults is what a new room gets unless the context `roomDefaults` overrides it: the
// engine's own defaults (room.DefaultConfig), plus an origin URL to replace.
func DefaultRoomDefaults() room.Config {
	c := room.DefaultConfig()
	c.OriginURL = "https://booking.example.com/"
	return c
}

// Settings are the deploy-time choices of a Vestibule stack. Every field has a usable default
// (DefaultSettings); the CDK context can change each one (FromContext).
type Settings struct {
	// AssetDir holds <function>/bootstrap for every function, as `make build` leaves it in dist/.
	AssetDir string
	// StaticDir is uploaded to the bucket; when it does not exist the stack deploys no page
	// (and warns), so the infrastructure can be synthesized before the page is written.
	StaticDir string
	Cache     CacheFlavour
	// CacheNodeType and CacheShards only matter for CacheNodes.
	CacheNodeType string
	CacheShards   int
	// WAF adds a CLOUDFRONT-scoped web ACL with a rate-based rule; it requires the stack's region
	// to be us-east-1, where CloudFront web ACLs live.
	WAF bool
	// WAFRateLimit is the most requests one IP may make in any 5-minute window.
	WAFRateLimit     int
	LogRetentionDays int
	LogLevel         string
	// LogSample is the functions' LOG_SAMPLE: the fraction of successful polls and status
	// reads that log their request line (config.ParseLogSample).
	LogSample    float64
	Issuer       string
	RoomDefaults room.Config // the functions' DEFAULT_ROOM_CONFIG, checked by room.Config.Validate
	// APIRateLimit and APIBurstLimit throttle the HTTP API stage (requests per second).
	APIRateLimit  float64
	APIBurstLimit float64
	// AlarmEmail, when set, is subscribed to the alarm topic.
	AlarmEmail string
	// ExpectedVisitors, when above 0, is the crowd the stack is sized for (visitors.go): the
	// stage's throttle and the CacheECPU alarm from the quotas it needs (quota.For), unless
	// apiRateLimit, apiBurstLimit or cacheEcpuAlarm are given; preflight checks the account
	// against the same quotas.
	ExpectedVisitors int
	// AdmitReservedConcurrency, when above 0, reserves that much of the account's Lambda
	// concurrency for admit. 0 (the default) reserves none: the account must keep 100 unreserved,
	// so on a new account with a total of 10 a reservation makes the deploy roll back.
	AdmitReservedConcurrency int

	// Stage names a copy of the stack: "" is the stack "Vestibule", "staging" the stack
	// "Vestibule-staging". Every name that must be unique in the account carries the stack
	// name and the region, so stages and regions do not collide (StackName).
	Stage string
	// PriceClass is the CloudFront price class: "100" (North America, Europe, Israel; the
	// default), "200" (adds most of Asia, the Middle East and Africa) or "All".
	PriceClass string
	// OriginSecretVersion pins CloudFront's origin header to one version id of the origin
	// secret; "" uses the version that is AWSCURRENT when CloudFormation updates the
	// distribution. Deploying a new id is the second step of a rotation (docs/DEPLOY.md).
	OriginSecretVersion string
	// CacheECPUAlarm is the ElastiCache Serverless load, in ECPUs per second over five
	// minutes, above which the CacheECPU alarm fires (serverless cache only).
	CacheECPUAlarm int
	// ProtectOrigin, when set, is the domain of a booking site's origin to put behind the edge gate:
	// the stack adds a distribution in front of it with the gate's function (gate.go). ProtectRoom
	// is the room that guards it; ProtectOpenPaths pass without a session. ProtectRoutes, instead
	// of ProtectRoom, put rooms on paths of the site (gate.Config.Routes).
	ProtectOrigin    string
	ProtectRoom      string
	ProtectOpenPaths []string
	ProtectRoutes    []gate.Route

	// Domain and CertificateArn put the waiting room on a domain of the team's (an ACM certificate
	// in us-east-1); ProtectDomain and ProtectCertificateArn the gate's distribution (domains.go).
	Domain, CertificateArn               string
	ProtectDomain, ProtectCertificateArn string
	// APIDomain and APICertificateArn (in the stack's region) give the API a domain of its own
	// and turn its execute-api endpoint off; APIClientCertificateArn (us-east-1) and APITruststore
	// (s3://bucket/key) add origin mTLS, so only CloudFront gets past the TLS handshake.
	APIDomain, APICertificateArn           string
	APIClientCertificateArn, APITruststore string

	// Notices of a visitor's turn (notify.go, docs/DEPLOY.md "Notices"): on by default (web push);
	// NoticeSender, an address SES may send from, adds email; NoticeIdentity is the SES identity the
	// stack creates for it (a domain, or an address), by default the sender's address.
	Notices bool
	// RegionFence sets REGION_FENCE to the stack's region on every function: a stack of a
	// two-region deployment (docs/DEPLOY.md, "Two regions"), whose rooms a failover moves.
	RegionFence    bool
	NoticeSender   string
	NoticeIdentity string
	// Regions make the stack one of a two-region deployment (regions.go); zero: one region.
	Regions Regions
	// OIDC adds an authenticate-oidc rule to a site's ALB listener (oidc.go); zero: none.
	OIDC OIDCSettings
}

// StackBaseName is the name of the default stack; a stage is appended to it.
const StackBaseName = "Vestibule"

// StackName is the stack name of a stage: "Vestibule" without one, "Vestibule-<stage>" with.
func StackName(stage string) string {
	if stage == "" {
		return StackBaseName
	}
	return StackBaseName + "-" + stage
}

// StackName is the name of the stack these settings describe.
func (s Settings) StackName() string { return StackName(s.Stage) }

// validStage keeps stage names short and plain: they go into every account-wide name,
// whose limits (CloudFront origin access control and function names: 64 characters of
// letters, digits, - and _) they must fit with the region.
var validStage = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// priceClasses maps the priceClass setting to CloudFront's price classes.
var priceClasses = map[string]awscloudfront.PriceClass{
	"100": awscloudfront.PriceClass_PRICE_CLASS_100,
	"200": awscloudfront.PriceClass_PRICE_CLASS_200,
	"All": awscloudfront.PriceClass_PRICE_CLASS_ALL,
}

// PriceClassFor returns CloudFront's price class for the priceClass setting.
func PriceClassFor(s string) (awscloudfront.PriceClass, error) {
	s = strings.TrimPrefix(s, "PriceClass_")
	if strings.EqualFold(s, "all") {
		s = "All"
	}
	pc, ok := priceClasses[s]
	if !ok {
		return "", fmt.Errorf("%w: priceClass=%q, want 100, 200 or All", ErrBadSetting, s)
	}
	return pc, nil
}

// DefaultSettings is the default stack: serverless Valkey, no WAF, a month of logs.
func DefaultSettings() Settings {
	return Settings{
		AssetDir:         "dist",
		StaticDir:        "static",
		Cache:            CacheServerless,
		CacheNodeType:    "cache.t4g.small",
		CacheShards:      1,
		WAF:              false,
		WAFRateLimit:     3000,
		LogRetentionDays: 30,
		LogLevel:         "info",
		LogSample:        config.DefaultLogSample,
		Issuer:           "vestibule",
		RoomDefaults:     DefaultRoomDefaults(),
		APIRateLimit:     5000,
		APIBurstLimit:    5000,
		PriceClass:       "100",
		CacheECPUAlarm:   100_000,
		Notices:          true,
	}
}

// Context keys, as given on the command line (`cdk synth -c cache=nodes`) or in cdk.json.
const (
	CtxAssetDir       = "distDir"
	CtxStaticDir      = "staticDir"
	CtxCache          = "cache"
	CtxCacheNodeType  = "cacheNodeType"
	CtxCacheShards    = "cacheShards"
	CtxWAF            = "waf"
	CtxWAFRateLimit   = "wafRateLimit"
	CtxLogRetention   = "logRetentionDays"
	CtxLogLevel       = "logLevel"
	CtxLogSample      = "logSample"
	CtxIssuer         = "issuer"
	CtxRoomDefaults   = "roomDefaults"
	CtxAPIRateLimit   = "apiRateLimit"
	CtxAPIBurstLimit  = "apiBurstLimit"
	CtxAlarmEmail     = "alarmEmail"
	CtxStage          = "stage"
	CtxPriceClass     = "priceClass"
	CtxOriginVersion  = "originSecretVersion"
	CtxCacheECPU      = "cacheEcpuAlarm"
	CtxAdmitReserved  = "admitReservedConcurrency"
	CtxVisitors       = "expectedVisitors"
	CtxNotices        = "notices"
	CtxNoticeSender   = "noticeSender"
	CtxNoticeIdentity = "noticeIdentity"
	CtxRegionFence    = "regionFence"
	// The gate's keys (CtxProtectOrigin, CtxProtectRoom, CtxProtectRoutes, CtxProtectOpenPaths) are in gate.go.
)

// FromContext reads the settings from the CDK context of node, starting from DefaultSettings.
// Values from `-c key=value` arrive as strings, values from cdk.json as JSON types; both are accepted.
func FromContext(node constructs.Node) (Settings, error) {
	s := DefaultSettings()
	var errs []error
	for _, c := range contextSettings {
		key := c.key
		if v := node.TryGetContext(&key); v != nil {
			if err := c.parse(key, v, &s); err != nil {
				errs = append(errs, err)
			}
		}
		if c.check != nil {
			if err := c.check(s); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, sizeFromContext(node, &s)...)
	errs = append(errs, gateFromContext(node, &s)...)
	errs = append(errs, domainsFromContext(node, &s)...)
	errs = append(errs, oidcFromContext(node, &s)...)
	errs = append(errs, regionsFromContext(node, &s)...)
	return s, errors.Join(errs...)
}

// contextSetting is how FromContext reads one context key: parse sets the key's value v on s
// (or says why it cannot), check then checks the result, whether the key was given or not.
type contextSetting struct {
	key   string
	parse func(key string, v any, s *Settings) error
	check func(s Settings) error
}

// contextSettings are the context keys of this file, in the order FromContext reads them (the
// gate's are read by gateFromContext, the domains' by domainsFromContext).
var contextSettings = []contextSetting{
	{key: CtxAssetDir, parse: text(func(s *Settings) *string { return &s.AssetDir })},
	{key: CtxStaticDir, parse: text(func(s *Settings) *string { return &s.StaticDir })},
	{key: CtxCache, parse: parseCache},
	{key: CtxCacheNodeType, parse: text(func(s *Settings) *string { return &s.CacheNodeType })},
	{key: CtxCacheShards, parse: whole(func(s *Settings) *int { return &s.CacheShards })},
	{key: CtxWAF, parse: parseWAF},
	{key: CtxWAFRateLimit, parse: whole(func(s *Settings) *int { return &s.WAFRateLimit })},
	{key: CtxLogRetention, parse: whole(func(s *Settings) *int { return &s.LogRetentionDays }), check: func(s Settings) error {
		_, err := RetentionFor(s.LogRetentionDays)
		return err
	}},
	{key: CtxLogLevel, parse: text(func(s *Settings) *string { return &s.LogLevel })},
	{key: CtxLogSample, parse: parseLogSample},
	{key: CtxIssuer, parse: text(func(s *Settings) *string { return &s.Issuer })},
	{key: CtxAPIRateLimit, parse: positive(func(s *Settings) *float64 { return &s.APIRateLimit })},
	{key: CtxAPIBurstLimit, parse: positive(func(s *Settings) *float64 { return &s.APIBurstLimit })},
	{key: CtxAlarmEmail, parse: text(func(s *Settings) *string { return &s.AlarmEmail })},
	{key: CtxStage, parse: text(func(s *Settings) *string { return &s.Stage }), check: func(s Settings) error {
		if s.Stage != "" && !validStage.MatchString(s.Stage) {
			return fmt.Errorf("%w: stage=%q: lowercase letters, digits and -, starting with a letter, at most 20", ErrBadSetting, s.Stage)
		}
		return nil
	}},
	{key: CtxPriceClass, parse: text(func(s *Settings) *string { return &s.PriceClass }), check: func(s Settings) error {
		_, err := PriceClassFor(s.PriceClass)
		return err
	}},
	{key: CtxOriginVersion, parse: text(func(s *Settings) *string { return &s.OriginSecretVersion }), check: func(s Settings) error {
		if strings.ContainsAny(s.OriginSecretVersion, ":{} ") {
			return fmt.Errorf("%w: originSecretVersion=%q is not a Secrets Manager version id", ErrBadSetting, s.OriginSecretVersion)
		}
		return nil
	}},
	{key: CtxCacheECPU, parse: whole(func(s *Settings) *int { return &s.CacheECPUAlarm })},
	{key: CtxAdmitReserved, parse: parseAdmitReserved},
	{key: CtxRoomDefaults, parse: parseRoomDefaultsContext},
	{key: CtxVisitors, parse: whole(func(s *Settings) *int { return &s.ExpectedVisitors })},
	{key: CtxNotices, parse: func(key string, v any, s *Settings) error {
		b, err := strconv.ParseBool(fmt.Sprint(v))
		if err != nil {
			return fmt.Errorf("%w: %s=%v is not true or false", ErrBadSetting, key, v)
		}
		s.Notices = b
		return nil
	}},
	{key: CtxNoticeSender, parse: text(func(s *Settings) *string { return &s.NoticeSender })},
	{key: CtxRegionFence, parse: func(key string, v any, s *Settings) error {
		b, err := strconv.ParseBool(fmt.Sprint(v))
		if err != nil {
			return fmt.Errorf("%w: %s=%v is not true or false", ErrBadSetting, key, v)
		}
		s.RegionFence = b
		return nil
	}},
	{key: CtxNoticeIdentity, parse: text(func(s *Settings) *string { return &s.NoticeIdentity }), check: CheckNoticeSettings},
}

// text sets a string setting to the value as written.
func text(field func(*Settings) *string) func(string, any, *Settings) error {
	return func(_ string, v any, s *Settings) error {
		*field(s) = fmt.Sprint(v)
		return nil
	}
}

// positiveNumber is v as a number above zero.
func positiveNumber(key string, v any) (float64, error) {
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%w: %s=%v is not a positive number", ErrBadSetting, key, v)
	}
	return f, nil
}

// positive sets a number setting to a value above zero.
func positive(field func(*Settings) *float64) func(string, any, *Settings) error {
	return func(key string, v any, s *Settings) error {
		f, err := positiveNumber(key, v)
		if err == nil {
			*field(s) = f
		}
		return err
	}
}

// whole sets a whole-number setting to a value above zero.
func whole(field func(*Settings) *int) func(string, any, *Settings) error {
	return func(key string, v any, s *Settings) error {
		f, err := positiveNumber(key, v)
		if err != nil {
			return err
		}
		if f != float64(int(f)) {
			return fmt.Errorf("%w: %s=%v is not a whole number", ErrBadSetting, key, f)
		}
		*field(s) = int(f)
		return nil
	}
}

func parseCache(_ string, v any, s *Settings) error {
	switch c := CacheFlavour(fmt.Sprint(v)); c {
	case "":
	case CacheServerless, CacheNodes:
		s.Cache = c
	default:
		return fmt.Errorf("%w: cache=%q, want %q or %q", ErrBadSetting, string(c), CacheServerless, CacheNodes)
	}
	return nil
}

func parseWAF(_ string, v any, s *Settings) error {
	b, err := strconv.ParseBool(fmt.Sprint(v))
	s.WAF = b
	if err != nil {
		return fmt.Errorf("%w: waf=%v is not true or false", ErrBadSetting, v)
	}
	return nil
}

func parseLogSample(key string, v any, s *Settings) error {
	f, err := config.ParseLogSample(fmt.Sprint(v))
	s.LogSample = f
	if err != nil {
		return fmt.Errorf("%w: %s=%v %v", ErrBadSetting, key, v, err)
	}
	return nil
}

func parseAdmitReserved(key string, v any, s *Settings) error {
	n, err := strconv.Atoi(fmt.Sprint(v))
	if err != nil || n < 0 {
		return fmt.Errorf("%w: %s=%v is not a whole number from 0 up", ErrBadSetting, key, v)
	}
	s.AdmitReservedConcurrency = n
	return nil
}

// parseRoomDefaultsContext overlays roomDefaults on the defaults: a string is JSON from the
// command line; anything else came from cdk.json already decoded.
func parseRoomDefaultsContext(_ string, v any, s *Settings) error {
	raw, isString := v.(string)
	if !isString {
		b, _ := json.Marshal(v)
		raw = string(b)
	}
	rd, err := ParseRoomDefaults(raw, s.RoomDefaults)
	s.RoomDefaults = rd
	return err
}

// ParseRoomDefaults overlays the JSON object raw on base and checks the result with the engine's own
// validation, so a deploy cannot carry defaults every PUT would then refuse. Unknown fields are
// refused so a typo does not silently deploy a default.
func ParseRoomDefaults(raw string, base room.Config) (room.Config, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	rd := base
	if err := dec.Decode(&rd); err != nil {
		return base, fmt.Errorf("%w: roomDefaults: %v", ErrBadSetting, err)
	}
	return rd, ValidateRoomDefaults(rd)
}

// ValidateRoomDefaults checks room defaults as the engine checks every room's settings.
func ValidateRoomDefaults(rd room.Config) error {
	if err := rd.Validate(); err != nil {
		return fmt.Errorf("%w: roomDefaults: %v", ErrBadSetting, err)
	}
	return nil
}

// retention maps the day counts CloudWatch Logs accepts to the CDK enum.
var retention = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS,
	120: awslogs.RetentionDays_FOUR_MONTHS, 150: awslogs.RetentionDays_FIVE_MONTHS,
	180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS,
	731: awslogs.RetentionDays_TWO_YEARS, 1096: awslogs.RetentionDays_THREE_YEARS,
	1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS,
	3288: awslogs.RetentionDays_NINE_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}

// RetentionFor returns the CloudWatch Logs retention for a number of days CloudWatch accepts.
func RetentionFor(days int) (awslogs.RetentionDays, error) {
	r, ok := retention[days]
	if !ok {
		return "", fmt.Errorf("%w: logRetentionDays=%d is not one CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, ...)", ErrBadSetting, days)
	}
	return r, nil
}
