package notice

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hpke"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// MinSecret is the shortest notice secret taken (bytes).
const MinSecret = 32

// ErrKey is wrapped by every problem with the notice keys.
var ErrKey = errors.New("notice: key")

// The labels of the two keys derived from one notice secret.
const (
	sealLabel  = "vestibule-notice-seal"
	vapidLabel = "vestibule-notice-vapid"
)

// Keys are the private keys of one notice secret: the key addresses are
// sealed to and the VAPID key push notices are signed with. Only the notify
// function (and make dev) holds them.
type Keys struct {
	seal  *ecdh.PrivateKey
	vapid *ecdsa.PrivateKey
	pub   Public
}

// Public is what the functions that take sign-ups know of one notice secret:
// the key they seal addresses to and the VAPID key the page subscribes with,
// both P-256 points (uncompressed) in base64url, and their ids (the first 8
// bytes of the SHA-256 of the point, base64url): public values, in the keys
// object beside the tokens' (keysync).
type Public struct {
	Seal    string `json:"seal"`
	VAPID   string `json:"vapid"`
	SealID  string `json:"-"`
	VAPIDID string `json:"-"`
}

// FromSecret derives the keys of a notice secret: each a P-256 scalar
// d = (SHA-256(label || secret) mod (n−1)) + 1, as the entry keys are made
// from their seed, so the secret Secrets Manager generates at deploy is all
// there is to keep. The derivation must never change: it would make every
// sealed address unreadable and every push subscription unusable.
func FromSecret(secret []byte) (*Keys, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("%w: notice secret shorter than %d bytes", ErrKey, MinSecret)
	}
	sealD, vapidD := scalar(sealLabel, secret), scalar(vapidLabel, secret)
	seal, err := ecdh.P256().NewPrivateKey(sealD)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	vapid, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), vapidD)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	vpub, err := vapid.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	k := &Keys{seal: seal, vapid: vapid}
	k.pub = Public{Seal: b64(seal.PublicKey().Bytes()), VAPID: b64(vpub)}
	k.pub.SealID, k.pub.VAPIDID = keyID(seal.PublicKey().Bytes()), keyID(vpub)
	return k, nil
}

func scalar(label string, secret []byte) []byte {
	h := sha256.New()
	h.Write([]byte(label))
	h.Write(secret)
	n := elliptic.P256().Params().N
	d := new(big.Int).SetBytes(h.Sum(nil))
	d.Mod(d, new(big.Int).Sub(n, big.NewInt(1))).Add(d, big.NewInt(1))
	return d.FillBytes(make([]byte, 32))
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func keyID(point []byte) string {
	sum := sha256.Sum256(point)
	return b64(sum[:8])
}

// Public is the keys' public half.
func (k *Keys) Public() Public { return k.pub }

// ParsePublic reads a Public from its two points (as the keys object keeps
// them), checking each is a P-256 point.
func ParsePublic(seal, vapid string) (Public, error) {
	for _, s := range []string{seal, vapid} {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			return Public{}, fmt.Errorf("%w: a public key is not base64url", ErrKey)
		}
		if _, err := ecdh.P256().NewPublicKey(b); err != nil {
			return Public{}, fmt.Errorf("%w: a public key is not a P-256 point", ErrKey)
		}
	}
	p := Public{Seal: seal, VAPID: vapid}
	sb, _ := base64.RawURLEncoding.DecodeString(seal)
	vb, _ := base64.RawURLEncoding.DecodeString(vapid)
	p.SealID, p.VAPIDID = keyID(sb), keyID(vb)
	return p, nil
}

// The HPKE suite: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM.
var (
	kdf  = hpke.HKDFSHA256()
	aead = hpke.AES256GCM()
)

// idLen is the length of the key id a sealed address starts with (8 bytes).
const idLen = 8

// Sealer seals addresses to one notice key (the current one): an API
// function can seal, never open.
type Sealer struct {
	pub hpke.PublicKey
	id  []byte
	p   Public
}

// NewSealer seals to p's seal key.
func NewSealer(p Public) (*Sealer, error) {
	b, err := base64.RawURLEncoding.DecodeString(p.Seal)
	if err != nil {
		return nil, fmt.Errorf("%w: seal key", ErrKey)
	}
	point, err := ecdh.P256().NewPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: seal key: %v", ErrKey, err)
	}
	pub, err := hpke.NewDHKEMPublicKey(point)
	if err != nil {
		return nil, fmt.Errorf("%w: seal key: %v", ErrKey, err)
	}
	id, _ := base64.RawURLEncoding.DecodeString(keyID(b))
	return &Sealer{pub: pub, id: id, p: p}, nil
}

// Public is the key set the sealer seals to (its VAPID key is what the page
// subscribes with).
func (s *Sealer) Public() Public { return s.p }

// Seal seals a for the place seq of room: the key's id, then HPKE's
// encapsulated key and ciphertext, whose info names the place.
func (s *Sealer) Seal(room string, seq int64, a Address) ([]byte, error) {
	plain, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	ct, err := hpke.Seal(s.pub, kdf, aead, info(room, seq), plain)
	if err != nil {
		return nil, fmt.Errorf("%w: seal: %v", ErrKey, err)
	}
	return append(append(make([]byte, 0, idLen+len(ct)), s.id...), ct...), nil
}

// Opener opens sealed addresses: the notify function's, with the keys of
// the notice secret's current and previous values.
type Opener struct {
	keys []*Keys
}

// NewOpener opens with keys (the current first).
func NewOpener(keys ...*Keys) *Opener { return &Opener{keys: keys} }

// ErrSealed is an address that does not open: of another place, another
// key, or altered.
var ErrSealed = errors.New("notice: sealed address does not open")

// Open opens an address sealed for the place seq of room.
func (o *Opener) Open(room string, seq int64, sealed []byte) (Address, error) {
	if len(sealed) <= idLen {
		return Address{}, ErrSealed
	}
	id := b64(sealed[:idLen])
	for _, k := range o.keys {
		if k.pub.SealID != id {
			continue
		}
		priv, err := hpke.NewDHKEMPrivateKey(k.seal)
		if err != nil {
			return Address{}, fmt.Errorf("%w: %v", ErrKey, err)
		}
		plain, err := hpke.Open(priv, kdf, aead, info(room, seq), sealed[idLen:])
		if err != nil {
			return Address{}, ErrSealed
		}
		var a Address
		if err := json.Unmarshal(plain, &a); err != nil {
			return Address{}, ErrSealed
		}
		return a, nil
	}
	return Address{}, ErrSealed
}

// VAPIDFor returns the VAPID key pair (base64url, as webpush-go takes them)
// a subscription was made for: the one of its id, else the current.
func (o *Opener) VAPIDFor(id string) (priv, pub string, err error) {
	if len(o.keys) == 0 {
		return "", "", fmt.Errorf("%w: no notice key", ErrKey)
	}
	k := o.keys[0]
	for _, c := range o.keys {
		if c.pub.VAPIDID == id {
			k = c
			break
		}
	}
	d, err := k.vapid.Bytes()
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrKey, err)
	}
	return b64(d), k.pub.VAPID, nil
}
