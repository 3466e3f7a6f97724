package gate

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// KeySize is the length of a gate key's secret in bytes.
const KeySize = 32

// MinSeedLen is the shortest seed DeriveKey accepts, in bytes (the same floor
// as Vestibule's other secrets).
const MinSeedLen = 32

// Names in the CloudFront KeyValueStore. The function reads only
// KVSKeyPrefix+kid; KVSCurrent tells people and KeyRingFromKVS which key signs.
const (
	KVSKeyPrefix = "key:"
	KVSCurrent   = "current"
)

// ErrKey is returned for unusable key material: a wrong secret length, a seed
// that is too short, a malformed kid, a key ring without a current key, or a
// KeyValueStore listing that does not describe a key ring.
var ErrKey = errors.New("gate: unusable key")

// kidPattern is what a key id may look like, here and in the function.
var kidPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,16}$`)

// Key is one HMAC-SHA256 key that signs and verifies session cookies.
type Key struct {
	// ID is the kid written into every cookie the key signs: 1–16 characters
	// of [A-Za-z0-9_-]. NewKey and DeriveKey make it a pure function of the
	// secret, so every signer and the KeyValueStore agree without coordination.
	ID string
	// Secret is the KeySize-byte HMAC key.
	Secret []byte
}

// kidLabel and keyLabel separate these derivations from any other use of the
// same material. They must never change: that would change every kid and key.
const (
	kidLabel = "vestibule-gate-kid\x00"
	keyLabel = "vestibule-gate-key\x00"
)

// NewKey wraps a KeySize-byte secret and derives its kid: base64url (no
// padding) of the first 6 bytes of SHA-256("vestibule-gate-kid\x00" ||
// secret), 8 characters. The kid reveals nothing usable about the secret.
func NewKey(secret []byte) (Key, error) {
	if len(secret) != KeySize {
		return Key{}, fmt.Errorf("%w: a secret is %d bytes, not %d", ErrKey, KeySize, len(secret))
	}
	h := sha256.New()
	h.Write([]byte(kidLabel))
	h.Write(secret)
	return Key{ID: base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:6]), Secret: append([]byte(nil), secret...)}, nil
}

// DeriveKey derives a key from a secret string of at least MinSeedLen bytes:
// secret = HMAC-SHA256(seed, "vestibule-gate-key\x00"), kid as NewKey. The
// deployed seed is the entry-key secret's SecretString (AWSCURRENT for the
// current key, AWSPREVIOUS for the previous one), so the gate needs no secret
// of its own and rotates with the entry key; see docs/GATE.md.
func DeriveKey(seed []byte) (Key, error) {
	if len(seed) < MinSeedLen {
		return Key{}, fmt.Errorf("%w: seed shorter than %d bytes", ErrKey, MinSeedLen)
	}
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(keyLabel))
	return NewKey(m.Sum(nil))
}

// GenerateKey returns a random key, for tests and local development.
func GenerateKey() (Key, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return Key{}, fmt.Errorf("gate: %w", err)
	}
	return NewKey(b)
}

// valid reports whether k can sign or verify.
func (k Key) valid() error {
	if !kidPattern.MatchString(k.ID) {
		return fmt.Errorf("%w: kid %q is not 1-16 characters of [A-Za-z0-9_-]", ErrKey, k.ID)
	}
	if len(k.Secret) != KeySize {
		return fmt.Errorf("%w: key %s has a %d-byte secret, not %d", ErrKey, k.ID, len(k.Secret), KeySize)
	}
	return nil
}

// KeyRing is the keys of one deployment: Current signs new cookies and
// verifies; Previous (zero when there is none) only verifies, so cookies signed
// just before a rotation keep working until they expire. A third, older key is
// gone: its cookies are refused, which is what rotating twice in a row is for.
type KeyRing struct {
	Current  Key
	Previous Key
}

// HasPrevious reports whether the ring holds a previous key.
func (r KeyRing) HasPrevious() bool { return r.Previous.ID != "" || len(r.Previous.Secret) != 0 }

// Validate reports whether the ring is usable: a valid current key, and a
// valid previous key with another kid when there is one.
func (r KeyRing) Validate() error {
	if err := r.Current.valid(); err != nil {
		return fmt.Errorf("current key: %w", err)
	}
	if !r.HasPrevious() {
		return nil
	}
	if err := r.Previous.valid(); err != nil {
		return fmt.Errorf("previous key: %w", err)
	}
	if r.Previous.ID == r.Current.ID {
		return fmt.Errorf("%w: current and previous keys share kid %s", ErrKey, r.Current.ID)
	}
	return nil
}

// Lookup returns the key with kid id, current or previous.
func (r KeyRing) Lookup(id string) (Key, bool) {
	switch {
	case id == "":
		return Key{}, false
	case id == r.Current.ID && len(r.Current.Secret) == KeySize:
		return r.Current, true
	case id == r.Previous.ID && len(r.Previous.Secret) == KeySize:
		return r.Previous, true
	}
	return Key{}, false
}

// KVSEntries is exactly what the CloudFront KeyValueStore must hold for the
// ring: "key:<kid>" → the secret as 64 lowercase hex digits, for the current
// and the previous key, and "current" → the current kid. A sync writes these
// and deletes every other "key:" entry, so a dropped key stops verifying at the
// edge too.
func (r KeyRing) KVSEntries() map[string]string {
	m := map[string]string{
		KVSKeyPrefix + r.Current.ID: hex.EncodeToString(r.Current.Secret),
		KVSCurrent:                  r.Current.ID,
	}
	if r.HasPrevious() {
		m[KVSKeyPrefix+r.Previous.ID] = hex.EncodeToString(r.Previous.Secret)
	}
	return m
}

// KeyRingFromKVS reads a key ring back from KeyValueStore entries (as listed
// by the KeyValueStore API): "current" names the current key; at most one
// other "key:" entry is the previous key. Entries whose names do not start
// with "key:" are ignored, apart from "current". A kid that does not match its
// secret is refused, so a hand-edited store cannot mislabel a key.
func KeyRingFromKVS(entries map[string]string) (KeyRing, error) {
	var r KeyRing
	cur, ok := entries[KVSCurrent]
	if !ok {
		return r, fmt.Errorf("%w: no %q entry", ErrKey, KVSCurrent)
	}
	for name, value := range entries {
		id, isKey := strings.CutPrefix(name, KVSKeyPrefix)
		if !isKey {
			continue
		}
		if len(value) != 2*KeySize || strings.ToLower(value) != value {
			return KeyRing{}, fmt.Errorf("%w: %s is not %d lowercase hex digits", ErrKey, name, 2*KeySize)
		}
		secret, err := hex.DecodeString(value)
		if err != nil {
			return KeyRing{}, fmt.Errorf("%w: %s is not hex", ErrKey, name)
		}
		k, err := NewKey(secret)
		if err != nil {
			return KeyRing{}, err
		}
		if k.ID != id {
			return KeyRing{}, fmt.Errorf("%w: %s holds the secret of kid %s", ErrKey, name, k.ID)
		}
		switch {
		case id == cur:
			r.Current = k
		case r.HasPrevious():
			return KeyRing{}, fmt.Errorf("%w: more than two keys", ErrKey)
		default:
			r.Previous = k
		}
	}
	if r.Current.ID == "" {
		return KeyRing{}, fmt.Errorf("%w: current kid %q has no %s entry", ErrKey, cur, KVSKeyPrefix+cur)
	}
	return r, r.Validate()
}
