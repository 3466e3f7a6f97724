package room

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/text"
)

var roomID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidRoomID reports whether s is a room id: 1 to 64 of [A-Za-z0-9_-]. The
// limit keeps ids safe inside keys ({ and } would break the hash tag), URLs and logs.
func ValidRoomID(s string) bool { return roomID.MatchString(s) }

// Setting is one row of the settings table: one room setting, with its name
// (the same everywhere it is spelled), its default and what values it takes.
// The table drives DefaultConfig, Config.Validate and the settings' encoding in
// Redis: a new setting is one field on Config and one row.
type Setting struct {
	// Name is the setting's JSON key in Config and its field in the room's
	// Redis settings hash (vst:{room}:cfg), which the Lua scripts read.
	Name string
	// Doc says what the setting is, in one line.
	Doc string
	// Numeric reports a whole number, valid in the inclusive range Min..Max.
	Numeric  bool
	Min, Max int64
	// Choices are the values a setting with a fixed set of them takes (mode); nil otherwise.
	Choices []string
	// MaxLen is the most characters a text setting or part takes (originUrl;
	// a title or message in each language); 0: no such limit.
	MaxLen int64
	// Pattern is a regular expression, the same in Go and JavaScript, that a
	// part's whole value matches (page.accentColor); "" for none.
	Pattern string
	// Parts are the rows of a structured setting's parts (page: title,
	// message, logoUrl, accentColor), each with its own limits; their Default
	// is "" and they have no encoding of their own.
	Parts []Setting
	// Default is the setting's value in DefaultConfig, of its Config field's
	// type: int64 for a number, Mode, string (originUrl: "", there is no default
	// origin), *time.Time (opensAt: nil, no opening time), *Page (page: nil,
	// the waiting page's own texts), bool (gate: false) or []string
	// (oidcRedirectUris: nil).
	Default any

	reset  func(*Config)         // sets the default
	encode func(Config) string   // the value as the Redis hash stores it
	decode func(*Config, string) // from the Redis hash's string
	check  func(Config) string   // why the value is invalid; "" when it is valid
	// field names the part of a structured setting that check refuses
	// ("page.title"); nil: the setting's Name.
	field func(Config) string
}

// setting makes a table row for the Config field that field points to: enc
// and dec convert it to and from its Redis string, check says why a value is
// invalid ("" when valid).
func setting[T any](name, doc string, field func(*Config) *T, def T, enc func(T) string, dec func(string) T, check func(T) string) Setting {
	return Setting{
		Name: name, Doc: doc, Default: def,
		reset:  func(c *Config) { *field(c) = def },
		encode: func(c Config) string { return enc(*field(&c)) },
		decode: func(c *Config, s string) { *field(c) = dec(s) },
		check:  func(c Config) string { return check(*field(&c)) },
	}
}

// number makes the row of a whole-number setting valid in min..max.
func number(name, doc string, field func(*Config) *int64, def, min, max int64) Setting {
	s := setting(name, doc, field, def,
		func(v int64) string { return strconv.FormatInt(v, 10) },
		func(s string) int64 { return decimal(s) },
		func(v int64) string {
			if v < min || v > max {
				return fmt.Sprintf("%d is outside %d..%d", v, min, max)
			}
			return ""
		})
	s.Numeric, s.Min, s.Max = true, min, max
	return s
}

// modes are the valid values of mode, in the order error messages list them.
var modes = []Mode{ModeQueue, ModeAuto, ModePassthrough, ModePaused, ModeClosed}

// maxOriginLen is the longest originUrl accepted.
const maxOriginLen = 2048

// settings is the table: one row per room setting, in the order Validate
// checks them (the first invalid one is the error).
var settings = []Setting{
	number("maxActive", "grants + sessions at once (I1)",
		func(c *Config) *int64 { return &c.MaxActive }, 100, 1, 1_000_000),
	number("admitPerMinute", "admission rate; quota per tick carries the fraction",
		func(c *Config) *int64 { return &c.AdmitPerMinute }, 600, 1, 1_000_000),
	// The pace follows the origin's load between this and admitPerMinute
	// (docs/ENGINE.md, "Steering"); above admitPerMinute, the pace is that.
	number("admitPerMinuteMin", "the least admission rate while the pace follows the origin's load (Vestibule-Load); 0: the pace is admitPerMinute",
		func(c *Config) *int64 { return &c.AdmitPerMinuteMin }, 0, 0, 1_000_000),
	// The auto mode's safety net (docs/ENGINE.md, "Steering").
	number("queueAbovePerMinute", "auto: arrivals a minute above which the room queues (0: it queues only once full or out of rate)",
		func(c *Config) *int64 { return &c.QueueAbovePerMinute }, 0, 0, 100_000_000),
	func() Setting {
		s := number("queueBelowPerMinute", "auto: the room stops queueing once arrivals a minute stayed below this for calmSeconds and nobody waits (0: nobody waiting is enough)",
			func(c *Config) *int64 { return &c.QueueBelowPerMinute }, 0, 0, 100_000_000)
		inRange := s.check
		s.check = func(c Config) string {
			if reason := inRange(c); reason != "" {
				return reason
			}
			if c.QueueAbovePerMinute > 0 && c.QueueBelowPerMinute > c.QueueAbovePerMinute {
				return fmt.Sprintf("%d is above queueAbovePerMinute (%d)", c.QueueBelowPerMinute, c.QueueAbovePerMinute)
			}
			return ""
		}
		return s
	}(),
	number("calmSeconds", "auto: how long arrivals stay below queueBelowPerMinute, with nobody waiting, before the room stops queueing",
		func(c *Config) *int64 { return &c.CalmSeconds }, 180, 0, 3_600),
	number("sessionTTLSeconds", "a consumed grant's session ends after this unless completed",
		func(c *Config) *int64 { return &c.SessionTTLSeconds }, 600, 10, 86_400),
	// With it, sessionTTLSeconds is an idle timeout: the edge gate renews an
	// active visitor's session (roomdb.Engine.Renew, /.vestibule/renew) up to this.
	func() Setting {
		s := number("maxSessionSeconds", "the longest a gated session is renewed to while the visitor is active, from its start; sessionTTLSeconds is then the idle timeout (0: no renewal)",
			func(c *Config) *int64 { return &c.MaxSessionSeconds }, 0, 0, 604_800)
		inRange := s.check
		s.check = func(c Config) string {
			if reason := inRange(c); reason != "" {
				return reason
			}
			if c.MaxSessionSeconds != 0 && c.MaxSessionSeconds < c.SessionTTLSeconds {
				return fmt.Sprintf("%d is below sessionTTLSeconds (%d): 0, or at least sessionTTLSeconds", c.MaxSessionSeconds, c.SessionTTLSeconds)
			}
			return ""
		}
		return s
	}(),
	// A gated session ends this long after entry or its last renewal, up to
	// its longest life (SessionLimits); 0 keeps sessionTTLSeconds the window.
	func() Setting {
		s := number("sessionIdleSeconds", "a gated session with no navigation for this long ends (the edge gate renews it on navigations, up to maxSessionSeconds, or sessionTTLSeconds without it); 0: sessionTTLSeconds is the idle window",
			func(c *Config) *int64 { return &c.SessionIdleSeconds }, 0, 0, 86_400)
		inRange := s.check
		s.check = func(c Config) string {
			if reason := inRange(c); reason != "" {
				return reason
			}
			_, longest := c.SessionLimits()
			switch {
			case c.SessionIdleSeconds != 0 && c.SessionIdleSeconds < minIdleSeconds:
				return fmt.Sprintf("%d is below %d: 0, or at least %d", c.SessionIdleSeconds, minIdleSeconds, minIdleSeconds)
			case c.SessionIdleSeconds > longest:
				return fmt.Sprintf("%d is above the session's longest life (%d: maxSessionSeconds, or sessionTTLSeconds without it)", c.SessionIdleSeconds, longest)
			}
			return ""
		}
		return s
	}(),
	number("claimTTLSeconds", "a grant not consumed in this time is reclaimed",
		func(c *Config) *int64 { return &c.ClaimTTLSeconds }, 120, 5, 3_600),
	number("heartbeatTTLSeconds", "the grace beyond the told poll: a waiting visitor who misses the poll the server asked for by more than this is evicted (and may come back before the head passes)",
		func(c *Config) *int64 { return &c.HeartbeatTTLSeconds }, 120, 10, 3_600),
	// Off by default: thousands of visitors may share one address (carrier-grade
	// NAT, offices, venues), and a per-address limit would turn them away while
	// visitors on their own addresses go ahead. Rooms defend against mass joins
	// with the join challenge, or AWS WAF, instead (docs/SECURITY.md).
	number("clientEnqueuePerMinute", "fresh joins per client a minute, a client being its network (clientIPv4Prefix, clientIPv6Prefix); 0: no limit",
		func(c *Config) *int64 { return &c.ClientEnqueuePerMinute }, 0, 0, 100_000),
	// A subscriber of IPv6 is given a /64 (or more) and may use any of its
	// addresses: counted by address, one device would have 2^64 limits.
	number("clientIPv4Prefix", "the IPv4 network the per-client join limit counts as one client (32: one address; 0: the default)",
		func(c *Config) *int64 { return &c.ClientIPv4Prefix }, 32, 0, 32),
	number("clientIPv6Prefix", "the IPv6 network the per-client join limit counts as one client (64: one subscriber's /64; 0: the default)",
		func(c *Config) *int64 { return &c.ClientIPv6Prefix }, 64, 0, 128),
	number("joinShards", "arrival shards an open room's joins spread over (0: every join on the room's own shard); for bursts beyond one shard (docs/ENGINE.md, \"Arrival shards\")",
		func(c *Config) *int64 { return &c.JoinShards }, 0, 0, MaxJoinShards),
	number("joinChallengeBits", "proof-of-work bits every fresh join must show (0: none; 18 is about half a second of a laptop, a second or two of a phone)",
		func(c *Config) *int64 { return &c.JoinChallengeBits }, 0, 0, 24),
	func() Setting {
		names := make([]string, len(modes))
		for i, m := range modes {
			names[i] = string(m)
		}
		s := setting("mode", "how the room admits visitors (see Mode)",
			func(c *Config) *Mode { return &c.Mode }, ModeQueue,
			func(m Mode) string { return string(m) },
			func(s string) Mode { return Mode(s) },
			func(m Mode) string {
				if slices.Contains(modes, m) {
					return ""
				}
				return fmt.Sprintf("%q is not one of %s", m, strings.Join(names, ", "))
			})
		s.Choices = names
		return s
	}(),
	func() Setting {
		s := setting("originUrl", "where admitted visitors go; the entry token's audience",
			func(c *Config) *string { return &c.OriginURL }, "",
			func(s string) string { return s },
			func(s string) string { return s },
			checkOrigin)
		s.MaxLen = maxOriginLen
		return s
	}(),
	// Redis keeps it in milliseconds, 0 for none.
	setting("opensAt", "before it, arrivals join the pre-queue; order drawn at opening",
		func(c *Config) **time.Time { return &c.OpensAt }, nil,
		func(t *time.Time) string {
			if t == nil {
				return "0"
			}
			return strconv.FormatInt(t.UnixMilli(), 10)
		},
		func(s string) *time.Time {
			if ms := decimal(s); ms > 0 {
				t := time.UnixMilli(ms).UTC()
				return &t
			}
			return nil
		},
		func(t *time.Time) string {
			// The year in UTC, as it is stored and served: 9999-12-31T23:59:59-14:00
			// is in the year 10000 there, which no RFC 3339 time can say.
			if t != nil && (t.UTC().Year() < 2000 || t.UTC().Year() > 9999) {
				return "must be an RFC 3339 time between the years 2000 and 9999"
			}
			return ""
		}),
	// Redis keeps it as JSON text, "" for none (page.go).
	func() Setting {
		s := setting("page", "how the waiting page presents the room: title, message, logo, accent colour",
			func(c *Config) **Page { return &c.Page }, nil, encodePage, decodePage,
			func(p *Page) string { _, reason := p.check(); return reason })
		s.field = func(c Config) string { f, _ := c.Page.check(); return f }
		s.Parts = []Setting{
			{Name: "title", Doc: "the event's title, one text or one per language", MaxLen: maxTitleLen, Default: ""},
			{Name: "message", Doc: "a message under the page's lead, one text or one per language", MaxLen: maxMessageLen, Default: ""},
			{Name: "logoUrl", Doc: "an https:// image", MaxLen: maxLogoLen, Default: ""},
			{Name: "accentColor", Doc: "the accent colour, #rrggbb", Pattern: accentColor.String(), Default: ""},
		}
		return s
	}(),
	// Redis keeps it as "1" or "0"; a room stored before the setting existed has
	// none, which reads as off.
	func() Setting {
		s := setting("gate", "the room guards a site behind the edge gate: the entry token goes to its /.vestibule/enter",
			func(c *Config) *bool { return &c.Gate }, false,
			func(b bool) string {
				if b {
					return "1"
				}
				return "0"
			},
			func(s string) bool { return s == "1" },
			// The gate's cookie is Secure: a gated site must be https, or http
			// only on this machine, which originUrl's own rule already asks of
			// every room.
			func(bool) string { return "" })
		return s
	}(),
	// Longer than the page's window: a visitor told by a notice may have to
	// find the tab or open the email. Counted against maxActive like any grant.
	func() Setting {
		s := number("notifiedClaimTTLSeconds", "the claim window of a visitor who asked for a notice of their turn (a push or an email), longer than claimTTLSeconds; 0: the room offers no notices",
			func(c *Config) *int64 { return &c.NotifiedClaimTTLSeconds }, 0, 0, MaxNotifiedClaimTTL)
		inRange := s.check
		s.check = func(c Config) string {
			if reason := inRange(c); reason != "" {
				return reason
			}
			if c.NotifiedClaimTTLSeconds != 0 && c.NotifiedClaimTTLSeconds <= c.ClaimTTLSeconds {
				return fmt.Sprintf("%d is not above claimTTLSeconds (%d): 0, or longer than it", c.NotifiedClaimTTLSeconds, c.ClaimTTLSeconds)
			}
			return ""
		}
		return s
	}(),
	// Redis keeps it as "1" or "0"; a room stored before the setting existed has
	// none, which reads as off.
	setting("inviteOnly", "only holders of an invitation may join (docs/API.md, \"Invitations\"); a join without one is refused",
		func(c *Config) *bool { return &c.InviteOnly }, false, encodeBool, decodeBool,
		func(bool) string { return "" }),
	// Redis keeps it as JSON text, "" for none (oidc.go).
	func() Setting {
		s := setting("oidcRedirectUris", "the room as an OpenID Connect provider: the exact redirect URIs a relying party may name (none: no authorization request is accepted)",
			func(c *Config) *[]string { return &c.OIDCRedirectURIs }, nil, encodeRedirectURIs, decodeRedirectURIs, checkRedirectURIs)
		s.MaxLen = MaxOIDCRedirectURILen
		return s
	}(),
}

// minIdleSeconds is the shortest sessionIdleSeconds: the gate renews a
// session half way to its end, so a shorter window would send a navigation
// through /.vestibule/renew every few seconds.
const minIdleSeconds = 10

// SessionLimits are a gated session's idle window (the time it lasts after
// entry or a renewal without another) and its longest life from its start, in
// seconds: sessionIdleSeconds, or sessionTTLSeconds when it is 0; and
// maxSessionSeconds, or sessionTTLSeconds when it is 0. A session renews while
// idle < longest; in a room with neither set both are sessionTTLSeconds, and
// nothing renews. consume.lua and renew.lua compute the same.
func (c Config) SessionLimits() (idle, longest int64) {
	idle, longest = c.SessionTTLSeconds, c.SessionTTLSeconds
	if c.SessionIdleSeconds > 0 {
		idle = c.SessionIdleSeconds
	}
	if c.MaxSessionSeconds > 0 {
		longest = c.MaxSessionSeconds
	}
	return idle, longest
}

// encodeBool and decodeBool are a flag's stored form: "1" or "0", anything
// else (a room stored before the flag existed: none) off.
func encodeBool(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func decodeBool(s string) bool { return s == "1" }

// checkOrigin says why s is not an originUrl, "" when it is one.
func checkOrigin(s string) string {
	if len(s) > maxOriginLen {
		return fmt.Sprintf("longer than %d characters", maxOriginLen)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "must be an absolute http(s) URL"
	}
	if reason := checkURL(s, u); reason != "" {
		return reason
	}
	if u.Scheme == "http" && !Loopback(u.Hostname()) {
		// An entry token in a URL over plain HTTP can be read on the way.
		return "must be https:// (plain http:// only for a loopback host, in development)"
	}
	return ""
}

// ClientNetwork is what the per-client join limit counts a client address as:
// its network under the room's clientIPv4Prefix or clientIPv6Prefix (an IPv4
// address mapped into IPv6 counts as IPv4), as a prefix ("2001:db8:1:2::/64").
// Text that is not an address is its own client.
func ClientNetwork(addr string, c Config) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap().WithZone("")
	bits, def := c.ClientIPv6Prefix, int64(64)
	if a.Is4() {
		bits, def = c.ClientIPv4Prefix, 32
	}
	if bits <= 0 || bits > int64(a.BitLen()) {
		bits = def
	}
	p, err := a.Prefix(int(bits))
	if err != nil {
		return addr
	}
	return p.String()
}

// checkURL is what every URL setting refuses beyond its own rules (originUrl,
// page.logoUrl): a control character (package text), credentials, and a
// port no URL can have (0, or above 65535).
func checkURL(s string, u *url.URL) string {
	if !text.Clean(s, false) {
		return "contains a control character"
	}
	if u.User != nil {
		return "must not carry credentials"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "has a port outside 1..65535"
		}
	}
	return ""
}

// Loopback reports whether host (a URL's Hostname) is this machine: localhost
// or a loopback address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// UnmarshalJSON decodes settings over c, refusing a key that is not exactly a
// setting's name: encoding/json alone would take "MAXACTIVE" for maxActive and
// ignore a typo. Settings the JSON leaves out keep their value in c.
func (c *Config) UnmarshalJSON(b []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	for k := range keys {
		if !slices.ContainsFunc(settings, func(s Setting) bool { return s.Name == k }) {
			return fmt.Errorf("json: unknown field %q", k)
		}
	}
	type plain Config // without this method
	return json.Unmarshal(b, (*plain)(c))
}

// Settings returns the settings table, one row per room setting: for tools
// and infrastructure that need the names, defaults and ranges.
func Settings() []Setting { return slices.Clone(settings) }

// DefaultConfig is a room's settings when nothing else is said. It has no
// origin URL, so it is not valid until one is set.
func DefaultConfig() Config {
	var c Config
	for _, s := range settings {
		s.reset(&c)
	}
	return c
}

// FieldError says which setting is wrong and why. It wraps ErrInvalidConfig.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "room: invalid " + e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *FieldError) Unwrap() error { return ErrInvalidConfig }

// Validate checks every setting; a bad value is an error, never a stored
// config. The error is a *FieldError naming the first bad setting.
func (c Config) Validate() error {
	for _, s := range settings {
		if reason := s.check(c); reason != "" {
			field := s.Name
			if s.field != nil {
				field = s.field(c)
			}
			return &FieldError{Field: field, Reason: reason}
		}
	}
	return nil
}

// Encode is the setting's value in c as the room's Redis settings hash
// stores it (roomdb.EncodeConfig writes them all); "" for a part, which has
// no encoding of its own.
func (s Setting) Encode(c Config) string {
	if s.encode == nil {
		return ""
	}
	return s.encode(c)
}

// Decode sets the setting in c from the hash's string (roomdb.DecodeConfig).
func (s Setting) Decode(c *Config, v string) {
	if s.decode != nil {
		s.decode(c, v)
	}
}

// decimal reads a stored number as the Lua scripts write it: an integer, or
// a float it rounds down (lua.Num's reading of text); 0 for anything else.
func decimal(s string) int64 {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	f, _ := strconv.ParseFloat(s, 64)
	return int64(f)
}
