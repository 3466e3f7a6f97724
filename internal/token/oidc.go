package token

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// OIDC is what the room as an OpenID Connect provider hands out and reads
// back (docs/GATE.md, "OpenID Connect"), so that the provider keeps no state
// of its own: the validated authorization request the waiting page carries
// until admission, the one-time code the relying party redeems, and the
// access token of its userinfo call are each sealed (AES-256-GCM) under a key
// of their own, derived from the ticket secret as the origin credential is, and
// bound to the room. Whoever holds one can neither read nor change it, nor use
// it as another kind or in another room. A code is one-time because its
// redemption is the consume of the grant it names (I2), not because it is
// remembered. The ID token is an ES256 JWT under the entry key ring's current
// key, so the relying party checks it with the JWKS.
//
// An OIDC is safe for concurrent use.
type OIDC struct {
	request, code, access cipher.AEAD
	entries               *Entries
}

// The labels of the sealing keys: one per kind of sealed value.
const (
	oidcRequestLabel = "vestibule-oidc-request\x00"
	oidcCodeLabel    = "vestibule-oidc-code\x00"
	oidcAccessLabel  = "vestibule-oidc-access\x00"
)

// MaxSealedLen is the longest sealed value Open reads; longer ones are
// refused before any decoding.
const MaxSealedLen = 6000

// NewOIDC returns the provider's sealing over the ticket secret (at least
// MinSecretLen bytes) and its ID tokens signed by entries' current key.
func NewOIDC(ticketSecret []byte, entries *Entries) (*OIDC, error) {
	if len(ticketSecret) < MinSecretLen {
		return nil, fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrKeyMaterial, MinSecretLen)
	}
	aead := func(label string) cipher.AEAD {
		m := hmac.New(sha256.New, ticketSecret)
		m.Write([]byte(label))
		block, _ := aes.NewCipher(m.Sum(nil)) // a 32-byte key: never an error
		a, _ := cipher.NewGCM(block)          // the standard nonce and tag: never an error
		return a
	}
	return &OIDC{request: aead(oidcRequestLabel), code: aead(oidcCodeLabel), access: aead(oidcAccessLabel), entries: entries}, nil
}

// AuthRequest is an authorization request the provider accepted: the
// relying party's redirect URI (one of the room's), state, nonce and PKCE
// challenge (S256, "" when none was sent). The waiting page carries it sealed
// until the visitor is admitted.
type AuthRequest struct {
	Room        string    `json:"r"`
	RedirectURI string    `json:"u"`
	State       string    `json:"s,omitempty"`
	Nonce       string    `json:"n,omitempty"`
	Challenge   string    `json:"c,omitempty"`
	Expires     time.Time `json:"e"`
}

// Code is what an authorization code says: the grant it redeems (room, seq,
// the visitor and the entry token's audience), the request it answers, when
// the visitor was admitted (auth_time) and when the code expires.
type Code struct {
	Room        string    `json:"r"`
	Seq         int64     `json:"q"`
	Visitor     string    `json:"v"`
	Audience    string    `json:"a"`
	RedirectURI string    `json:"u"`
	Nonce       string    `json:"n,omitempty"`
	Challenge   string    `json:"c,omitempty"`
	AuthTime    time.Time `json:"t"`
	Expires     time.Time `json:"e"`
}

// Access is what an access token says: the session's room, subject (the
// visitor) and end, after which userinfo refuses it.
type Access struct {
	Room    string    `json:"r"`
	Subject string    `json:"v"`
	Expires time.Time `json:"e"`
}

// SealRequest seals r.
func (o *OIDC) SealRequest(r AuthRequest) (string, error) { return seal(o.request, r.Room, r) }

// OpenRequest opens a sealed request of room at now: ErrInvalid when it is
// not one (tampered, another kind, another room), ErrExpired past Expires.
func (o *OIDC) OpenRequest(s, room string, now time.Time) (AuthRequest, error) {
	var r AuthRequest
	if err := open(o.request, room, s, &r); err != nil {
		return AuthRequest{}, err
	}
	return r, live(r.Room, room, r.Expires, now)
}

// SealCode seals c as an authorization code.
func (o *OIDC) SealCode(c Code) (string, error) { return seal(o.code, c.Room, c) }

// OpenCode opens an authorization code of room at now, as OpenRequest.
func (o *OIDC) OpenCode(s, room string, now time.Time) (Code, error) {
	var c Code
	if err := open(o.code, room, s, &c); err != nil {
		return Code{}, err
	}
	return c, live(c.Room, room, c.Expires, now)
}

// SealAccess seals a as an access token.
func (o *OIDC) SealAccess(a Access) (string, error) { return seal(o.access, a.Room, a) }

// OpenAccess opens an access token of room at now, as OpenRequest.
func (o *OIDC) OpenAccess(s, room string, now time.Time) (Access, error) {
	var a Access
	if err := open(o.access, room, s, &a); err != nil {
		return Access{}, err
	}
	return a, live(a.Room, room, a.Expires, now)
}

// live checks a sealed value's room (sealed in, so only a value sealed with
// another room's name inside differs: a bug, refused anyway) and expiry. No
// leeway: every party to these values is this provider, on one clock.
func live(got, want string, expires, now time.Time) error {
	if got != want {
		return fmt.Errorf("%w: another room's", ErrWrongRoom)
	}
	if !now.Before(expires) {
		return fmt.Errorf("%w: at %s", ErrExpired, expires.UTC().Format(time.RFC3339))
	}
	return nil
}

// seal is base64url(nonce ‖ AES-GCM(JSON of v)), with the room as the
// associated data.
func seal(a cipher.AEAD, room string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("token: sealing: %w", err)
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	rand.Read(nonce) // never fails (crypto/rand, Go ≥ 1.24)
	out := base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plain, []byte(room)))
	if len(out) > MaxSealedLen {
		return "", fmt.Errorf("%w: sealed value longer than %d bytes", ErrInvalid, MaxSealedLen)
	}
	return out, nil
}

// open reverses seal into v; every failure is ErrInvalid.
func open(a cipher.AEAD, room, s string, v any) error {
	if len(s) > MaxSealedLen {
		return fmt.Errorf("%w: too long", ErrInvalid)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < a.NonceSize()+a.Overhead() {
		return fmt.Errorf("%w: not a sealed value", ErrInvalid)
	}
	plain, err := a.Open(nil, b[:a.NonceSize()], b[a.NonceSize():], []byte(room))
	if err != nil {
		return fmt.Errorf("%w: not sealed by this provider for this room", ErrInvalid)
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// IDClaims are an ID token's claims (OpenID Connect Core §2).
type IDClaims struct {
	Issuer   string // the room's issuer URL
	Subject  string // the visitor
	Audience string // the client: the room
	Nonce    string // the authorization request's, when it had one
	IssuedAt time.Time
	AuthTime time.Time // when the room admitted the visitor
	Expiry   time.Time // the session's end
}

// idClaims is an ID token's payload.
type idClaims struct {
	claimsBase
	Issuer   string           `json:"iss"`
	Subject  string           `json:"sub"`
	Audience string           `json:"aud"`
	Nonce    string           `json:"nonce,omitempty"`
	IssuedAt *jwt.NumericDate `json:"iat"`
	AuthTime *jwt.NumericDate `json:"auth_time"`
	Expiry   *jwt.NumericDate `json:"exp"`
}

// IDToken signs c as an ID token: ES256 under the entry key ring's current
// key, whose kid is in the header and whose public half is in the JWKS.
// Times are whole seconds; exp rounds down, so the token never outlives the
// session.
func (o *OIDC) IDToken(c IDClaims) (string, error) {
	if o.entries == nil || len(o.entries.keys) == 0 {
		return "", fmt.Errorf("%w: no entry key", ErrKeyMaterial)
	}
	if c.Issuer == "" || c.Subject == "" || c.Audience == "" || !c.Expiry.Truncate(time.Second).After(c.IssuedAt.Truncate(time.Second)) {
		return "", fmt.Errorf("%w: an ID token needs iss, sub, aud and an exp after iat", ErrInvalid)
	}
	k := o.entries.keys[0]
	header := map[string]any{"alg": jwt.SigningMethodES256.Alg(), "typ": "JWT", "kid": k.ID}
	return sign(jwt.SigningMethodES256, header, idClaims{
		Issuer: c.Issuer, Subject: c.Subject, Audience: c.Audience, Nonce: c.Nonce,
		IssuedAt: numericDate(c.IssuedAt), AuthTime: numericDate(c.AuthTime), Expiry: numericDate(c.Expiry),
	}, k.Private)
}
