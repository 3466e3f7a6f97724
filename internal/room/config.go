package room

import (
	"fmt"
	"net/url"
	"regexp"
)

var roomID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidRoomID reports whether s is a room id: 1 to 64 of [A-Za-z0-9_-]. The
// limit keeps ids safe inside keys ({ and } would break the hash tag), URLs and logs.
func ValidRoomID(s string) bool { return roomID.MatchString(s) }

// DefaultConfig is a room's settings when nothing else is said.
func DefaultConfig() Config {
	return Config{
		MaxActive:           100,
		AdmitPerMinute:      600,
		SessionTTLSeconds:   600,
		ClaimTTLSeconds:     120,
		HeartbeatTTLSeconds: 120,
		Mode:                ModeQueue,
		// Generous: many visitors may share one address (mobile carriers, offices, venues).
		ClientEnqueuePerMinute: 60,
	}
}

// Limits of the settings, inclusive.
var limits = []struct {
	name     string
	get      func(Config) int64
	min, max int64
}{
	{"maxActive", func(c Config) int64 { return c.MaxActive }, 1, 1_000_000},
	{"admitPerMinute", func(c Config) int64 { return c.AdmitPerMinute }, 1, 1_000_000},
	{"sessionTTLSeconds", func(c Config) int64 { return c.SessionTTLSeconds }, 10, 86_400},
	{"claimTTLSeconds", func(c Config) int64 { return c.ClaimTTLSeconds }, 5, 3_600},
	{"heartbeatTTLSeconds", func(c Config) int64 { return c.HeartbeatTTLSeconds }, 10, 3_600},
	{"clientEnqueuePerMinute", func(c Config) int64 { return c.ClientEnqueuePerMinute }, 0, 100_000},
}

// FieldError says which setting is wrong and why. It wraps ErrInvalidConfig.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "room: invalid " + e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *FieldError) Unwrap() error { return ErrInvalidConfig }

// Validate checks every setting; a bad value is an error, never a stored config.
func (c Config) Validate() error {
	for _, l := range limits {
		if v := l.get(c); v < l.min || v > l.max {
			return &FieldError{l.name, fmt.Sprintf("%d is outside %d..%d", v, l.min, l.max)}
		}
	}
	switch c.Mode {
	case ModeQueue, ModeAuto, ModePassthrough, ModePaused, ModeClosed:
	default:
		return &FieldError{"mode", fmt.Sprintf("%q is not one of queue, auto, passthrough, paused, closed", c.Mode)}
	}
	if len(c.OriginURL) > 2048 {
		return &FieldError{"originUrl", "longer than 2048 characters"}
	}
	u, err := url.Parse(c.OriginURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return &FieldError{"originUrl", "must be an absolute http(s) URL"}
	}
	if c.OpensAt != nil && (c.OpensAt.Year() < 2000 || c.OpensAt.Year() > 9999) {
		return &FieldError{"opensAt", "must be an RFC 3339 time between the years 2000 and 9999"}
	}
	return nil
}
