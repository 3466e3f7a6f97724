// Package token issues and verifies Vestibule's two kinds of token: tickets
// (visitor ↔ us, verified on every poll: a fixed binary layout and its
// HMAC-SHA256, ticket.go) and entry tokens (us → the booking origin, ES256
// JWTs with a kid, public keys served as a JWKS). Verification checks the
// kind, the issuer, the room and time with a small leeway; an entry token's aud
// is returned for the API layer to compare with the room's origin URL, which
// only it knows. Tickets issued as HS256 JWTs before the binary format (format
// 1, ticket_jwt.go) still verify during the transition.
//
// For JWTs (entry tokens, booking sessions, format 1 tickets) golang-jwt checks
// the signature with the algorithm pinned (WithValidMethods); before it runs,
// this package inspects the raw token itself, because a
// signature says nothing about how the JSON inside it is read:
//   - tokens longer than MaxTokenLen are refused before any decoding;
//   - the header must hold exactly the fields we write (alg, typ and, for entry
//     tokens, kid), so crit, jku, jwk, x5u and friends are refused, not ignored;
//   - the payload must be one flat JSON object whose names are all known, each
//     at most once. Go's encoding/json keeps the last of duplicated names and
//     matches names case-insensitively, so {"room":"a","ROOM":"b"} would be read
//     differently by different parsers; such tokens are refused as ErrInvalid;
//   - numbers that must be integers (seq) are decoded into int64 fields, never
//     through float64, so sequences up to 2^53 and beyond stay exact.
//
// Keys come from AWS Secrets Manager when deployed (LoadSecretsManager) and from
// a local folder in development (LoadLocal). Entry keys rotate by kid: Keys.Entry[0]
// signs, the others still verify and stay in the JWKS until they are dropped.
package token

import (
	"errors"
	"time"
)

// Errors callers branch on with errors.Is. Every verification failure wraps exactly one of them.
var (
	ErrInvalid     = errors.New("token: invalid")       // malformed, bad signature, wrong alg/typ/iss/aud, unknown kid
	ErrExpired     = errors.New("token: expired")       // exp passed (beyond the leeway)
	ErrNotYetValid = errors.New("token: not yet valid") // nbf/iat in the future (beyond the leeway)
	ErrWrongRoom   = errors.New("token: issued for another room")

	// ErrKeyMaterial is returned while loading or using keys that are unfit:
	// a secret or seed shorter than MinSecretLen, a secret without a string value.
	ErrKeyMaterial = errors.New("token: unusable key material")
)

// Leeway is the clock skew tolerated on time claims.
const Leeway = 5 * time.Second

// MaxTokenLen is the longest token Verify reads; longer ones are refused as
// ErrInvalid before any decoding, and Issue never produces one.
const MaxTokenLen = 4096

// MinSecretLen is the shortest ticket secret or entry-key seed accepted (bytes).
const MinSecretLen = 32

// EntryClaims is what an entry token says.
type EntryClaims struct {
	Room      string
	Visitor   string
	Seq       int64  // the grant; also the jti
	Audience  string // the room's origin URL
	IssuedAt  time.Time
	NotBefore time.Time // zero when issuing means IssuedAt
	Expiry    time.Time // the claim deadline
}
