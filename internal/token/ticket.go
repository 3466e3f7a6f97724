package token

import (
	"fmt"
	"math"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Ticket token markers: the header typ tells kinds apart before any claim is
// read, and the typ claim is signed with everything else.
const (
	ticketHeaderType = "vst-ticket+jwt"
	ticketClaimType  = "vestibule-ticket"
)

var ticketShape = newShape(jwt.SigningMethodHS256.Alg(), ticketHeaderType, ticketClaimType, false,
	ticketClaimsRequired, ticketClaimsAllowed)

// holder is what both kinds of token say about their holder: the kind (typ,
// signed with the rest), the issuer, and the visitor's place.
type holder struct {
	claimsBase
	Type    string `json:"typ"`
	Issuer  string `json:"iss"`
	Visitor string `json:"sub"`
	Room    string `json:"room"`
	Seq     int64  `json:"seq"`
}

// checkHolder refuses a holder the engine never makes.
func checkHolder(room, visitor string, seq int64) error {
	switch {
	case room == "":
		return fmt.Errorf("%w: empty room", ErrInvalid)
	case visitor == "":
		return fmt.Errorf("%w: empty visitor", ErrInvalid)
	case seq < 1:
		return fmt.Errorf("%w: seq below 1", ErrInvalid)
	}
	return nil
}

// ticketClaims is a ticket's payload. Seq is an int64 field so that decoding
// never passes through float64 (sequences reach 2^52): "1.0", "1e3" and
// strings are refused by encoding/json.
type ticketClaims struct {
	holder
	Draw     float64          `json:"draw,omitempty"`
	IssuedAt *jwt.NumericDate `json:"iat"`
	Expiry   *jwt.NumericDate `json:"exp"`
}

// Tickets issues and verifies tickets: HS256 under a secret only our functions
// hold. A Tickets is safe for concurrent use.
type Tickets struct {
	secret []byte
	issuer string
}

// NewTickets returns Tickets signing with secret (at least MinSecretLen bytes,
// or Issue fails and Verify refuses everything) and naming issuer as iss.
func NewTickets(secret []byte, issuer string) *Tickets {
	return &Tickets{secret: append([]byte(nil), secret...), issuer: issuer}
}

// checkTicket refuses tickets the engine never makes; Issue and Verify share it.
func checkTicket(tk room.Ticket) error {
	if err := checkHolder(tk.Room, tk.Visitor, tk.Seq); err != nil {
		return err
	}
	switch {
	case math.IsNaN(tk.Draw) || tk.Draw < 0 || tk.Draw >= 1:
		return fmt.Errorf("%w: draw outside [0,1)", ErrInvalid)
	}
	return nil
}

// Issue signs tk, valid from now for ttl (times are whole seconds, so ttl must
// be at least one). Invalid tickets are refused with ErrInvalid.
func (t *Tickets) Issue(tk room.Ticket, now time.Time, ttl time.Duration) (string, error) {
	if len(t.secret) < MinSecretLen {
		return "", fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrKeyMaterial, MinSecretLen)
	}
	if t.issuer == "" {
		return "", fmt.Errorf("%w: empty issuer", ErrInvalid)
	}
	if err := checkTicket(tk); err != nil {
		return "", err
	}
	iat, exp := numericDate(now), numericDate(now.Add(ttl))
	if !exp.After(iat.Time) {
		return "", fmt.Errorf("%w: ttl under a second", ErrInvalid)
	}
	c := ticketClaims{
		holder: holder{Type: ticketClaimType, Issuer: t.issuer, Visitor: tk.Visitor, Room: tk.Room, Seq: tk.Seq},
		Draw:   tk.Draw, IssuedAt: iat, Expiry: exp,
	}
	header := map[string]any{"alg": jwt.SigningMethodHS256.Alg(), "typ": ticketHeaderType}
	return sign(jwt.SigningMethodHS256, header, c, t.secret)
}

// Verify checks s as a ticket for roomID at now and returns what it says.
// Checks, in order: shape (size, header, claim names), HS256 signature,
// claims (ErrInvalid), room (ErrWrongRoom), time (ErrExpired, ErrNotYetValid).
func (t *Tickets) Verify(s string, roomID string, now time.Time) (room.Ticket, error) {
	if len(t.secret) < MinSecretLen {
		return room.Ticket{}, fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrInvalid, MinSecretLen)
	}
	if _, err := ticketShape.inspect(s); err != nil {
		return room.Ticket{}, err
	}
	var c ticketClaims
	if _, err := ticketShape.parser.ParseWithClaims(s, &c, func(*jwt.Token) (any, error) {
		return t.secret, nil
	}); err != nil {
		return room.Ticket{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Issuer != t.issuer || c.Issuer == "" {
		return room.Ticket{}, fmt.Errorf("%w: issuer", ErrInvalid)
	}
	tk := room.Ticket{Room: c.Room, Visitor: c.Visitor, Seq: c.Seq, Draw: c.Draw}
	if tk.Draw == 0 {
		tk.Draw = 0 // "draw": -0 reads as -0; a ticket has one spelling of no draw
	}
	if err := checkTicket(tk); err != nil {
		return room.Ticket{}, err
	}
	iat, err := claimTime(c.IssuedAt, "iat")
	if err != nil {
		return room.Ticket{}, err
	}
	exp, err := claimTime(c.Expiry, "exp")
	if err != nil {
		return room.Ticket{}, err
	}
	if !exp.After(iat) {
		return room.Ticket{}, fmt.Errorf("%w: exp not after iat", ErrInvalid)
	}
	if tk.Room != roomID {
		return room.Ticket{}, ErrWrongRoom
	}
	if err := checkTimes(now, iat, iat, exp); err != nil {
		return room.Ticket{}, err
	}
	return tk, nil
}
