package token

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Peeked is what a token says about itself before any check. Never trust it:
// it only decides what to verify next.
type Peeked struct {
	Room string
	// Start is when the token began to be valid: nbf, else iat (zero if neither).
	Start time.Time
}

// Peek reads a token's room and start without verifying anything: which room's
// origin credential to present (the demo origin), or the instant to verify a
// token at once its claim window is over (complete, during a session).
func Peek(s string) (Peeked, bool) {
	if len(s) > MaxTokenLen {
		return Peeked{}, false
	}
	var mc jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(s, &mc); err != nil {
		return Peeked{}, false
	}
	var p Peeked
	p.Room, _ = mc["room"].(string)
	for _, get := range []func() (*jwt.NumericDate, error){mc.GetNotBefore, mc.GetIssuedAt} {
		if d, err := get(); err == nil && d != nil {
			p.Start = d.Time
			break
		}
	}
	return p, true
}
