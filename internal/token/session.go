package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Booking-session token markers, as for tickets: the header typ tells the
// kinds apart before any claim is read, and the typ claim is signed.
const (
	sessionHeaderType = "vst-booking+jwt"
	sessionClaimType  = "vestibule-booking-session"
)

var (
	sessionClaimsRequired = []string{"typ", "iss", "room", "seq", "end", "iat"}
	sessionShape          = newShape(jwt.SigningMethodHS256.Alg(), sessionHeaderType, sessionClaimType, false,
		sessionClaimsRequired, sessionClaimsRequired)
)

// BookingSession is a consumed entry session of a room, as the booking
// routes see it: the room, the grant's sequence and when the session ends
// (whole milliseconds, the score of the room's active set).
type BookingSession struct {
	Room string
	Seq  int64
	Ends time.Time
}

// ID is the session's name in the booking engine: "room:seq".
func (s BookingSession) ID() string { return s.Room + ":" + strconv.FormatInt(s.Seq, 10) }

// sessionClaims is a booking session token's payload. end is in
// milliseconds (the room engine's unit), so the hold can compare it exactly
// with the session's score in Redis.
type sessionClaims struct {
	claimsBase
	Type     string           `json:"typ"`
	Issuer   string           `json:"iss"`
	Room     string           `json:"room"`
	Seq      int64            `json:"seq"`
	End      int64            `json:"end"`
	IssuedAt *jwt.NumericDate `json:"iat"`
}

// BookingSessions issues and verifies booking session tokens: what consume
// hands the origin for its page, and what the visitor's holds present
// (Authorization: Bearer). HS256 under a key derived from the ticket secret
// with a label of its own, so a ticket never verifies as one (and the header
// and claim typ differ too). They need no storage: the hold checks in Redis
// that the session is still active. A BookingSessions is safe for concurrent use.
type BookingSessions struct {
	key    []byte
	issuer string
}

// NewBookingSessions returns the booking-session service over the ticket
// secret (at least MinSecretLen bytes, or Issue fails and Verify refuses
// everything), naming issuer as iss.
func NewBookingSessions(ticketSecret []byte, issuer string) *BookingSessions {
	b := &BookingSessions{issuer: issuer}
	if len(ticketSecret) >= MinSecretLen {
		m := hmac.New(sha256.New, ticketSecret)
		m.Write([]byte("vestibule-booking-session\x00"))
		b.key = m.Sum(nil)
	}
	return b
}

// checkSession refuses sessions the room engine never makes.
func checkSession(s BookingSession) error {
	switch {
	case s.Room == "" || len(s.Room) > 64:
		return fmt.Errorf("%w: room", ErrInvalid)
	case s.Seq < 1:
		return fmt.Errorf("%w: seq below 1", ErrInvalid)
	case s.Ends.Before(minTime) || s.Ends.After(maxTime):
		return fmt.Errorf("%w: session end out of range", ErrInvalid)
	}
	return nil
}

// Issue signs s at now. The token is valid until the session ends.
func (b *BookingSessions) Issue(s BookingSession, now time.Time) (string, error) {
	if b.key == nil {
		return "", fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrKeyMaterial, MinSecretLen)
	}
	if b.issuer == "" {
		return "", fmt.Errorf("%w: empty issuer", ErrInvalid)
	}
	if err := checkSession(s); err != nil {
		return "", err
	}
	iat := numericDate(now)
	if !s.Ends.After(iat.Time) {
		return "", fmt.Errorf("%w: session already ended", ErrInvalid)
	}
	c := sessionClaims{Type: sessionClaimType, Issuer: b.issuer, Room: s.Room, Seq: s.Seq,
		End: s.Ends.UnixMilli(), IssuedAt: iat}
	header := map[string]any{"alg": jwt.SigningMethodHS256.Alg(), "typ": sessionHeaderType}
	return sign(jwt.SigningMethodHS256, header, c, b.key)
}

// Verify checks s as a booking session token at now and returns the session.
// Checks: shape, HS256 signature, claims (ErrInvalid), then time: ErrExpired
// once the session's end passed (beyond Leeway), ErrNotYetValid for a token
// issued in the future. Whether the session is still active (not completed,
// not reclaimed) only the room's Redis knows: the hold checks it.
func (b *BookingSessions) Verify(s string, now time.Time) (BookingSession, error) {
	if b.key == nil {
		return BookingSession{}, fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrInvalid, MinSecretLen)
	}
	if _, err := sessionShape.inspect(s); err != nil {
		return BookingSession{}, err
	}
	var c sessionClaims
	if _, err := sessionShape.parser.ParseWithClaims(s, &c, func(*jwt.Token) (any, error) {
		return b.key, nil
	}); err != nil {
		return BookingSession{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Issuer != b.issuer || c.Issuer == "" {
		return BookingSession{}, fmt.Errorf("%w: issuer", ErrInvalid)
	}
	out := BookingSession{Room: c.Room, Seq: c.Seq, Ends: time.UnixMilli(c.End).UTC()}
	if err := checkSession(out); err != nil {
		return BookingSession{}, err
	}
	iat, err := claimTime(c.IssuedAt, "iat")
	if err != nil {
		return BookingSession{}, err
	}
	if !out.Ends.After(iat) {
		return BookingSession{}, fmt.Errorf("%w: end not after iat", ErrInvalid)
	}
	if err := checkTimes(now, iat, iat, out.Ends); err != nil {
		return BookingSession{}, err
	}
	return out, nil
}
