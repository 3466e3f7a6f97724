// Package notice tells a visitor who looked away that it is their turn: a
// web push (RFC 8030, with RFC 8291's encryption and RFC 8292's VAPID, by
// github.com/SherClockHolmes/webpush-go) or an email through SES, in the
// visitor's language and with the room's brand (docs/ENGINE.md, "Notices").
//
// The address (a push subscription or an email address) is checked here
// (Address.Check), sealed to the notify function's key (Sealer: HPKE, RFC
// 9180, with AES-256-GCM) by the API function that takes the sign-up, kept
// sealed with the place in Redis, and opened only by the notify function
// (Opener), whose key comes from the notice secret. A notice never carries
// an entry token: its link is the waiting page of the room, where the
// visitor's own browser holds the ticket and claims the turn as always.
package notice

import (
	"crypto/ecdh"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Address is where a visitor asked to be told: exactly one of a push
// subscription and an email address, with the language to tell them in.
type Address struct {
	Push  *Subscription `json:"push,omitempty"`
	Email string        `json:"email,omitempty"`
	Lang  string        `json:"lang,omitempty"`
	// VAPID names the application server key the push subscription was made
	// for (Public.VAPIDID): after a rotation of the notice secret, the
	// sender signs with the key the subscription knows.
	VAPID string `json:"vapid,omitempty"`
}

// Subscription is a browser's PushSubscription (its toJSON()).
type Subscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// ErrAddress is wrapped by every reason an address is refused.
var ErrAddress = errors.New("notice: address refused")

// Limits of an address.
const (
	MaxEndpoint = 2048 // a push endpoint's characters (FCM's are about 180, Apple's about 200)
	MaxEmail    = 254  // an email address's (RFC 5321's path limit)
)

// DefaultPushHosts are the push services an endpoint may be on (a host or
// a parent domain): Google's (Chrome, Edge on Android), Mozilla's (Firefox),
// Apple's (Safari) and Microsoft's (Edge on Windows). The notify function
// posts to the endpoint, so it must be a push service's: any other URL
// would let a sign-up make the function call it.
var DefaultPushHosts = []string{"fcm.googleapis.com", "android.googleapis.com", "push.services.mozilla.com",
	"push.apple.com", "notify.windows.com"}

// Policy says what addresses a deployment takes: its channels and the
// push services it posts to.
type Policy struct {
	Push, Email bool
	// PushHosts are the hosts (or parent domains) a push endpoint may be
	// on; nil: DefaultPushHosts. An entry "http://HOST:PORT" allows one
	// plain-HTTP loopback endpoint (tests' stand-in of a push service).
	PushHosts []string
}

// Check says why a is not an address this policy takes (an error wrapping
// ErrAddress), nil when it is one. The language is one of Languages, or
// becomes "en".
func (p Policy) Check(a *Address) error {
	if !slices.Contains(Languages, a.Lang) {
		a.Lang = "en"
	}
	switch {
	case a.Push != nil && a.Email != "":
		return fmt.Errorf("%w: a push subscription or an email address, not both", ErrAddress)
	case a.Push != nil:
		if !p.Push {
			return fmt.Errorf("%w: this waiting room sends no push notices", ErrAddress)
		}
		a.Email = ""
		return p.CheckPush(a.Push)
	case a.Email != "":
		if !p.Email {
			return fmt.Errorf("%w: this waiting room sends no email", ErrAddress)
		}
		e, err := CheckEmail(a.Email)
		a.Email = e
		return err
	}
	return fmt.Errorf("%w: no push subscription and no email address", ErrAddress)
}

// CheckPush says why s is not a subscription the policy takes (wrapping
// ErrAddress), nil when it is one.
func (p Policy) CheckPush(s *Subscription) error {
	if len(s.Endpoint) > MaxEndpoint {
		return fmt.Errorf("%w: push endpoint longer than %d characters", ErrAddress, MaxEndpoint)
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.User != nil || u.Host == "" || u.Fragment != "" || !p.pushHost(u) {
		return fmt.Errorf("%w: the push endpoint is not a known push service's https:// URL", ErrAddress)
	}
	key, err := decodeKey(s.Keys.P256dh)
	if err != nil {
		return fmt.Errorf("%w: keys.p256dh is not base64url", ErrAddress)
	}
	if _, err := ecdh.P256().NewPublicKey(key); err != nil {
		return fmt.Errorf("%w: keys.p256dh is not a P-256 public key", ErrAddress)
	}
	auth, err := decodeKey(s.Keys.Auth)
	if err != nil || len(auth) != 16 {
		return fmt.Errorf("%w: keys.auth is not 16 bytes of base64url", ErrAddress)
	}
	return nil
}

// pushHost reports whether u is on one of the policy's push services.
func (p Policy) pushHost(u *url.URL) bool {
	hosts := p.PushHosts
	if hosts == nil {
		hosts = DefaultPushHosts
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range hosts {
		if strings.HasPrefix(h, "http://") {
			if u.Scheme == "http" && strings.EqualFold("http://"+u.Host, h) {
				return true
			}
			continue
		}
		if u.Scheme == "https" && (u.Port() == "" || u.Port() == "443") && (host == h || strings.HasSuffix(host, "."+h)) {
			return true
		}
	}
	return false
}

// decodeKey reads a subscription key: base64url, padded or not (browsers
// give it unpadded).
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// CheckEmail returns the address as it is kept (the domain in lower case),
// or why it is not one: a plain address (no name, no angle brackets, no
// comment), printable ASCII, a domain with a dot, at most MaxEmail characters.
func CheckEmail(s string) (string, error) {
	bad := fmt.Errorf("%w: not an email address", ErrAddress)
	if len(s) > MaxEmail || len(s) < 3 {
		return "", bad
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return "", bad
		}
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", bad
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") ||
		strings.HasSuffix(domain, ".") || strings.ContainsAny(domain, "[]") {
		return "", bad
	}
	return local + "@" + strings.ToLower(domain), nil
}

// Hasher names an address for the per-address sign-up limit: a keyed hash,
// so the limiter's key in Redis says nothing of the address.
type Hasher struct{ key []byte }

// NewHasher keys the hash with secret (the ticket secret: every API function
// has it), under a label of its own.
func NewHasher(secret []byte) Hasher {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("vestibule-notice-address"))
	return Hasher{key: m.Sum(nil)}
}

// Of is the address's hash: its email address, or its push endpoint.
func (h Hasher) Of(a Address) string {
	m := hmac.New(sha256.New, h.key)
	if a.Push != nil {
		m.Write([]byte("push\x00" + a.Push.Endpoint))
	} else {
		m.Write([]byte("email\x00" + strings.ToLower(a.Email)))
	}
	return hex.EncodeToString(m.Sum(nil)[:12])
}

// Languages are the languages a notice is written in: the waiting page's
// (static/js/i18n.js LANGUAGES; TestLanguagesAreThePages).
var Languages = []string{"en", "ko", "ja", "zh-Hans", "es", "fr", "de", "pt-BR"}

// info binds a sealed address to its place: opened for another room or
// sequence, it does not open.
func info(room string, seq int64) []byte {
	return []byte("vestibule-notice " + room + " " + strconv.FormatInt(seq, 10))
}

// Offer is what the waiting page learns of a deployment's notices with its
// place (the enqueue route's answer, in a room that offers notices): the
// VAPID key to subscribe with when it sends pushes, and whether it sends email.
type Offer struct {
	Push  string `json:"push,omitempty"`  // the VAPID public key, base64url
	VAPID string `json:"vapid,omitempty"` // its id, which the page sends back with the subscription
	Email bool   `json:"email,omitempty"`
	// KeepSeconds is how long the visitor's turn is kept once told: the
	// room's notifiedClaimTTLSeconds (each answer sets its room's).
	KeepSeconds int64 `json:"keepSeconds,omitempty"`
}

// OfferOf is the offer of a deployment that seals with s under policy p;
// nil when it sends no notices.
func OfferOf(s *Sealer, p Policy) *Offer {
	if s == nil || (!p.Push && !p.Email) {
		return nil
	}
	o := &Offer{Email: p.Email}
	if p.Push {
		o.Push, o.VAPID = s.Public().VAPID, s.Public().VAPIDID
	}
	return o
}

// The admin routes' bodies (docs/API.md, "Notices"): TakeRequest and
// Batch for POST /api/admin/rooms/{room}/notices/take, AckRequest for
// POST /api/admin/rooms/{room}/notices/ack.
type (
	TakeRequest struct {
		Most    int   `json:"most"`    // 1–100
		LeaseMs int64 `json:"leaseMs"` // 1,000–300,000
	}
	AckRequest struct {
		Seq     int64              `json:"seq"`
		Outcome room.NoticeOutcome `json:"outcome"`
		RetryAt *time.Time         `json:"retryAt,omitempty"` // with retry
	}
)
