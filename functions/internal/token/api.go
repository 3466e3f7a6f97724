// Package token issues and verifies Vestibule's two kinds of token: tickets
// (visitor ↔ us, HS256, verified on every poll) and entry tokens (us → the
// booking origin, ES256 with a kid, public keys served as a JWKS). Verification
// pins the algorithm and checks typ, iss, aud, room and time with a small leeway.
package token

import (
	"errors"
	"time"
)

// Errors callers branch on with errors.Is. Every failure wraps exactly one of them.
var (
	ErrInvalid     = errors.New("token: invalid")           // malformed, bad signature, wrong alg/typ/iss/aud, unknown kid
	ErrExpired     = errors.New("token: expired")           // exp passed (beyond the leeway)
	ErrNotYetValid = errors.New("token: not yet valid")     // nbf/iat in the future (beyond the leeway)
	ErrWrongRoom   = errors.New("token: issued for another room")
)

// Leeway is the clock skew tolerated on time claims.
const Leeway = 5 * time.Second

// EntryClaims is what an entry token says.
type EntryClaims struct {
	Room      string
	Visitor   string
	Seq       int64  // the grant; also the jti
	Audience  string // the room's origin URL
	IssuedAt  time.Time
	NotBefore time.Time
	Expiry    time.Time // the claim deadline
}
