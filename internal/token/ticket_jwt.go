package token

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Tickets of format 1 were HS256 JWTs under the raw ticket secret. Issue
// writes format 2 (ticket.go) since; format 1 is still verified so that a
// room mid-on-sale keeps every place across the upgrade, and the API hands a
// format 2 ticket back at the first use (Verified.Stale). Tickets live
// TicketTTL (24 h), so a release made a day after every deployment issues
// format 2 can delete this file, ticketShape and the legacy tests.
//
// The checks are the ones format 1 always had: size, exact header, flat
// payload with known names, each once, HS256 pinned, typ, iss, room, times.

// Ticket token markers: the header typ tells kinds apart before any claim is
// read, and the typ claim is signed with everything else.
const (
	ticketHeaderType = "vst-ticket+jwt"
	ticketClaimType  = "vestibule-ticket"
)

var ticketShape = newShape(jwt.SigningMethodHS256.Alg(), ticketHeaderType, ticketClaimType, false,
	ticketClaimsRequired, ticketClaimsAllowed)

// ticketClaims is a format 1 ticket's payload. Seq is an int64 field so that
// decoding never passes through float64 (sequences reach 2^52): "1.0", "1e3"
// and strings are refused by encoding/json.
type ticketClaims struct {
	holder
	Draw     float64          `json:"draw,omitempty"`
	IssuedAt *jwt.NumericDate `json:"iat"`
	Expiry   *jwt.NumericDate `json:"exp"`
}

// verifyJWT checks s as a format 1 ticket for roomID at now. Checks, in
// order: shape (size, header, claim names), HS256 signature under one of the
// secrets, claims (ErrInvalid), room (ErrWrongRoom), time (ErrExpired,
// ErrNotYetValid).
func (t *Tickets) verifyJWT(s string, roomID string, now time.Time) (Verified, error) {
	if _, err := ticketShape.inspect(s); err != nil {
		return Verified{}, err
	}
	var c ticketClaims
	var err error
	for _, k := range t.keys {
		c = ticketClaims{}
		if _, err = ticketShape.parser.ParseWithClaims(s, &c, func(*jwt.Token) (any, error) {
			return k.secret, nil
		}); err == nil {
			break
		}
	}
	if err != nil {
		return Verified{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Issuer != t.issuer || c.Issuer == "" {
		return Verified{}, fmt.Errorf("%w: issuer", ErrInvalid)
	}
	tk := room.Ticket{Room: c.Room, Visitor: c.Visitor, Seq: c.Seq, Draw: c.Draw}
	if tk.Draw == 0 {
		tk.Draw = 0 // "draw": -0 reads as -0; a ticket has one spelling of no draw
	}
	if err := checkHolder(tk.Room, tk.Visitor, tk.Seq); err != nil {
		return Verified{}, err
	}
	if err := checkDraw(tk.Draw); err != nil {
		return Verified{}, err
	}
	iat, err := claimTime(c.IssuedAt, "iat")
	if err != nil {
		return Verified{}, err
	}
	exp, err := claimTime(c.Expiry, "exp")
	if err != nil {
		return Verified{}, err
	}
	if !exp.After(iat) {
		return Verified{}, fmt.Errorf("%w: exp not after iat", ErrInvalid)
	}
	if tk.Room != roomID {
		return Verified{}, ErrWrongRoom
	}
	if err := checkTimes(now, iat, iat, exp); err != nil {
		return Verified{}, err
	}
	return Verified{Ticket: tk, IssuedAt: iat, Expiry: exp, Stale: true}, nil
}

// peekJWTTicket reads a format 1 ticket's place without verifying anything.
func peekJWTTicket(s string) (room.Ticket, bool) {
	var c ticketClaims
	if _, _, err := jwt.NewParser().ParseUnverified(s, &c); err != nil {
		return room.Ticket{}, false
	}
	return room.Ticket{Room: c.Room, Visitor: c.Visitor, Seq: c.Seq, Draw: c.Draw}, true
}
