package token

import (
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Entry token markers, as for tickets (see ticket.go).
const (
	entryHeaderType = "vst-entry+jwt"
	entryClaimType  = "vestibule-entry"
)

var entryShape = newShape(jwt.SigningMethodES256.Alg(), entryHeaderType, entryClaimType, true,
	entryClaimsRequired, entryClaimsAllowed)

// entryClaims is an entry token's payload. aud is one string (RFC 7519 allows
// an array too, but we only ever write one origin, and the shape check refuses
// arrays). jti repeats seq as a string for origins that dedupe on jti.
type entryClaims struct {
	holder
	ID        string           `json:"jti"`
	Audience  string           `json:"aud"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	Expiry    *jwt.NumericDate `json:"exp"`
}

// Entries issues and verifies entry tokens: ES256 with a kid. It is safe for
// concurrent use. A token's string is not its identity: ECDSA signatures are
// malleable (r,s and r,n−s both verify), so one-time use must key on Seq (the
// jti), never on the token text.
type Entries struct {
	issuer string
	keys   []*EntryKey // keys[0] signs
	byID   map[string]*ecdsa.PublicKey
}

// NewEntries returns Entries signing with keys[0] and verifying with every key
// in keys (nil entries and repeated kids are skipped; the first wins).
func NewEntries(keys []*EntryKey, issuer string) *Entries {
	e := &Entries{issuer: issuer, byID: make(map[string]*ecdsa.PublicKey, len(keys))}
	for _, k := range keys {
		if k == nil || k.Private == nil {
			continue
		}
		if _, dup := e.byID[k.ID]; dup {
			continue
		}
		e.keys = append(e.keys, k)
		e.byID[k.ID] = &k.Private.PublicKey
	}
	return e
}

// checkEntry refuses claims the API never issues; Issue and Verify share it.
func checkEntry(c EntryClaims) error {
	if err := checkHolder(c.Room, c.Visitor, c.Seq); err != nil {
		return err
	}
	switch {
	case c.Audience == "":
		return fmt.Errorf("%w: empty audience", ErrInvalid)
	case !c.Expiry.After(c.IssuedAt):
		return fmt.Errorf("%w: exp not after iat", ErrInvalid)
	case !c.Expiry.After(c.NotBefore):
		return fmt.Errorf("%w: exp not after nbf", ErrInvalid)
	}
	return nil
}

// Issue signs c with the current key. jti is the decimal Seq and aud is
// c.Audience. Times are whole seconds; a zero NotBefore means IssuedAt.
func (e *Entries) Issue(c EntryClaims) (string, error) {
	if len(e.keys) == 0 {
		return "", fmt.Errorf("%w: no entry key", ErrKeyMaterial)
	}
	if e.issuer == "" {
		return "", fmt.Errorf("%w: empty issuer", ErrInvalid)
	}
	if c.IssuedAt.IsZero() || c.Expiry.IsZero() {
		return "", fmt.Errorf("%w: iat and exp are required", ErrInvalid)
	}
	if c.NotBefore.IsZero() {
		c.NotBefore = c.IssuedAt
	}
	// Times are whole seconds: iat and nbf round down, exp rounds up, so a
	// grant in the last partial second of its claim window still gets a token
	// whose exp is after its iat (the engine still refuses it past the deadline).
	iat, nbf, exp := numericDate(c.IssuedAt), numericDate(c.NotBefore), numericDate(c.Expiry.Add(time.Second-time.Nanosecond))
	c.IssuedAt, c.NotBefore, c.Expiry = iat.Time, nbf.Time, exp.Time
	if err := checkEntry(c); err != nil {
		return "", err
	}
	for _, t := range []time.Time{c.IssuedAt, c.NotBefore, c.Expiry} {
		if t.Before(minTime) || t.After(maxTime) {
			return "", fmt.Errorf("%w: time out of range", ErrInvalid)
		}
	}
	signer := e.keys[0]
	claims := entryClaims{
		holder: holder{Type: entryClaimType, Issuer: e.issuer, Visitor: c.Visitor, Room: c.Room, Seq: c.Seq},
		ID:     strconv.FormatInt(c.Seq, 10), Audience: c.Audience,
		IssuedAt: iat, NotBefore: nbf, Expiry: exp,
	}
	header := map[string]any{"alg": jwt.SigningMethodES256.Alg(), "typ": entryHeaderType, "kid": signer.ID}
	return sign(jwt.SigningMethodES256, header, claims, signer.Private)
}

// Verify checks s as an entry token at now and returns its claims; the caller
// compares Audience with the room's origin and consumes Seq exactly once.
// Checks, in order: shape (size, header with a known kid, claim names), ES256
// signature, claims (ErrInvalid), time (ErrExpired, ErrNotYetValid).
func (e *Entries) Verify(s string, now time.Time) (EntryClaims, error) {
	c, err := e.verifySigned(s)
	if err != nil {
		return EntryClaims{}, err
	}
	if err := checkTimes(now, c.IssuedAt, c.NotBefore, c.Expiry); err != nil {
		return EntryClaims{}, err
	}
	return c, nil
}

// VerifyPastExpiry is Verify for a token used after its claim window (the
// origin's complete, during the session): a token past its exp passes if it
// passes at its own start (nbf plus a second) instead; every other check is
// Verify's, and the signature is checked once. The engine decides whether the
// session still runs.
func (e *Entries) VerifyPastExpiry(s string, now time.Time) (EntryClaims, error) {
	c, err := e.verifySigned(s)
	if err != nil {
		return EntryClaims{}, err
	}
	if !now.Before(c.Expiry.Add(Leeway)) { // expired at now (checkTimes' first rule)
		now = c.NotBefore.Add(time.Second)
	}
	if err := checkTimes(now, c.IssuedAt, c.NotBefore, c.Expiry); err != nil {
		return EntryClaims{}, err
	}
	return c, nil
}

// verifySigned is Verify without the time checks: shape, signature, claims.
func (e *Entries) verifySigned(s string) (EntryClaims, error) {
	kid, err := entryShape.inspect(s)
	if err != nil {
		return EntryClaims{}, err
	}
	pub, ok := e.byID[kid]
	if !ok {
		// The kid is only ever a map key: never a path, a URL or a log field.
		return EntryClaims{}, fmt.Errorf("%w: unknown kid", ErrInvalid)
	}
	var c entryClaims
	if _, err := entryShape.parser.ParseWithClaims(s, &c, func(*jwt.Token) (any, error) {
		return pub, nil
	}); err != nil {
		return EntryClaims{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Issuer != e.issuer || c.Issuer == "" {
		return EntryClaims{}, fmt.Errorf("%w: issuer", ErrInvalid)
	}
	if c.ID != strconv.FormatInt(c.Seq, 10) {
		return EntryClaims{}, fmt.Errorf("%w: jti does not match seq", ErrInvalid)
	}
	out := EntryClaims{Room: c.Room, Visitor: c.Visitor, Seq: c.Seq, Audience: c.Audience}
	if out.IssuedAt, err = claimTime(c.IssuedAt, "iat"); err != nil {
		return EntryClaims{}, err
	}
	if out.NotBefore, err = claimTime(c.NotBefore, "nbf"); err != nil {
		return EntryClaims{}, err
	}
	if out.Expiry, err = claimTime(c.Expiry, "exp"); err != nil {
		return EntryClaims{}, err
	}
	if err := checkEntry(out); err != nil {
		return EntryClaims{}, err
	}
	return out, nil
}

// jwk is one public key in a JWKS (RFC 7517, 7518 §6.2.1).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS returns the public keys of every entry key, signing key first, as a
// JSON Web Key Set an origin can use to check entry tokens offline.
func (e *Entries) JWKS() ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: make([]jwk, 0, len(e.keys))}
	for _, k := range e.keys {
		point, err := k.Private.PublicKey.Bytes() // 0x04 || X (32 bytes) || Y (32 bytes)
		if err != nil || len(point) != 65 {
			return nil, fmt.Errorf("%w: entry key %s", ErrKeyMaterial, k.ID)
		}
		set.Keys = append(set.Keys, jwk{
			Kty: "EC", Crv: "P-256",
			X:   base64.RawURLEncoding.EncodeToString(point[1:33]),
			Y:   base64.RawURLEncoding.EncodeToString(point[33:]),
			Kid: k.ID, Alg: jwt.SigningMethodES256.Alg(), Use: "sig",
		})
	}
	return json.Marshal(set)
}
