package token

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// EntryKey is one ES256 key that signs or verifies entry tokens.
type EntryKey struct {
	// ID is the kid: base64url (no padding) of the first 8 bytes of the SHA-256
	// of the public key as an uncompressed point. It is a pure function of the
	// key, so every function derives the same kid without coordination.
	ID      string
	Private *ecdsa.PrivateKey
}

// NewEntryKey wraps a P-256 private key and computes its kid.
func NewEntryKey(priv *ecdsa.PrivateKey) (*EntryKey, error) {
	if priv == nil || priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%w: entry keys are P-256", ErrKeyMaterial)
	}
	point, err := priv.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyMaterial, err)
	}
	sum := sha256.Sum256(point)
	return &EntryKey{ID: base64.RawURLEncoding.EncodeToString(sum[:8]), Private: priv}, nil
}

// entryKeyLabel separates this derivation from any other use of the seed.
const entryKeyLabel = "vestibule-entry-key"

// EntryKeyFromSeed derives a P-256 key deterministically from seed:
// d = (SHA-256("vestibule-entry-key" || seed) mod (n−1)) + 1, which lies in
// [1, n−1] as a private scalar must. Secrets Manager can only generate random
// strings at deploy time, so no key ever appears in a CloudFormation template;
// the key is derived from that string instead. The derivation must never
// change: it would silently change every deployed kid. Seeds shorter than
// MinSecretLen are refused.
func EntryKeyFromSeed(seed []byte) (*EntryKey, error) {
	if len(seed) < MinSecretLen {
		return nil, fmt.Errorf("%w: entry seed shorter than %d bytes", ErrKeyMaterial, MinSecretLen)
	}
	h := sha256.New()
	h.Write([]byte(entryKeyLabel))
	h.Write(seed)
	n := elliptic.P256().Params().N
	nMinus1 := new(big.Int).Sub(n, big.NewInt(1))
	d := new(big.Int).SetBytes(h.Sum(nil))
	d.Mod(d, nMinus1).Add(d, big.NewInt(1))
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d.FillBytes(make([]byte, 32)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyMaterial, err)
	}
	return NewEntryKey(priv)
}

// Keys is all the key material the functions need.
type Keys struct {
	TicketSecret []byte      // HS256 key of tickets
	Entry        []*EntryKey // Entry[0] signs; the rest (rotated out) still verify and appear in the JWKS
	// EntrySeeds are the seeds Entry was derived from, in the same order
	// (current first). The edge gate derives its cookie keys from them
	// (GateKeys); nothing else reads them.
	EntrySeeds [][]byte
	// Notice is the public half of the notice secret's keys (package notice):
	// what the API functions seal visitors' addresses to and the VAPID key
	// the waiting page subscribes with. nil: the deployment sends no notices.
	Notice *NoticeKeys
	// NoticeSecret is the notice secret itself, only where this process
	// also sends the notices (make dev's local keys); nil elsewhere.
	NoticeSecret []byte
}

// NoticeKeys are the public keys of the notice secret: P-256 points in
// base64url (notice.Public), public values.
type NoticeKeys struct {
	Seal  string `json:"seal"`
	VAPID string `json:"vapid"`
}

// NewKeys returns fresh random keys that live only in memory (the simulator,
// the bench, tests).
func NewKeys() (*Keys, error) {
	secret, seed := make([]byte, 48), make([]byte, 48)
	rand.Read(secret) // never fails (crypto/rand, Go ≥ 1.24)
	rand.Read(seed)
	ek, err := EntryKeyFromSeed(seed)
	if err != nil {
		return nil, err
	}
	return &Keys{TicketSecret: secret, Entry: []*EntryKey{ek}, EntrySeeds: [][]byte{seed}}, nil
}

// addPreviousEntry adds the previous entry key, which only verifies, unless it
// is the current key (its seed not rotated since).
func (k *Keys) addPreviousEntry(previous *EntryKey, seed []byte) {
	if previous.ID != k.Entry[0].ID {
		k.Entry = append(k.Entry, previous)
		k.EntrySeeds = append(k.EntrySeeds, seed)
	}
}

// Local key files, inside the folder given to LoadLocal.
const (
	localTicketFile        = "ticket.key"
	localEntryFile         = "entry.key"
	localEntryPreviousFile = "entry.previous.key"
	localNoticeFile        = "notice.key"
)

// LocalEntryFile is the entry key's file in a local key folder: a program
// that must use a stack's keys, never make its own (vestibule gate serve),
// checks for it before LoadLocal, which would create it.
const LocalEntryFile = localEntryFile

// LoadLocal loads the keys of local development from dir, creating dir (0700)
// and random ticket.key and entry.key (48 random bytes, base64, 0600) on the
// first run. A file's content, without surrounding whitespace, is used as the
// secret string exactly as a Secrets Manager SecretString would be. An optional
// entry.previous.key is loaded as a second, verifying-only entry key, which is
// how rotation can be tried locally.
func LoadLocal(dir string) (*Keys, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("token: key folder: %w", err)
	}
	ticket, err := readOrCreateSecret(filepath.Join(dir, localTicketFile))
	if err != nil {
		return nil, err
	}
	if len(ticket) < MinSecretLen {
		return nil, fmt.Errorf("%w: %s shorter than %d bytes", ErrKeyMaterial, localTicketFile, MinSecretLen)
	}
	seed, err := readOrCreateSecret(filepath.Join(dir, localEntryFile))
	if err != nil {
		return nil, err
	}
	current, err := EntryKeyFromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", localEntryFile, err)
	}
	keys := &Keys{TicketSecret: ticket, Entry: []*EntryKey{current}, EntrySeeds: [][]byte{seed}}
	// The local stack sends its notices itself (to its outbox): it keeps the
	// notice secret beside the others.
	if keys.NoticeSecret, err = readOrCreateSecret(filepath.Join(dir, localNoticeFile)); err != nil {
		return nil, err
	}

	prevSeed, err := os.ReadFile(filepath.Join(dir, localEntryPreviousFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return keys, nil
	case err != nil:
		return nil, fmt.Errorf("token: %w", err)
	}
	prevSeed = bytes.TrimSpace(prevSeed)
	previous, err := EntryKeyFromSeed(prevSeed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", localEntryPreviousFile, err)
	}
	keys.addPreviousEntry(previous, prevSeed)
	return keys, nil
}

// readOrCreateSecret returns the trimmed content of path, first creating it
// with a fresh random secret if it does not exist. The file is written under a
// temporary name and linked into place, so a process starting at the same
// moment never reads a half-written file, and the first one to link wins.
func readOrCreateSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return bytes.TrimSpace(b), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("token: %w", err)
	}
	raw := make([]byte, 48)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // linked or failed: a leftover temporary file is harmless
	if _, err := tmp.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n"); err != nil {
		_ = tmp.Close() // the write's error is the one to report
		return nil, fmt.Errorf("token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("token: %w", err)
	}
	b, err = os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	return bytes.TrimSpace(b), nil
}

// SecretsGetter is the part of the Secrets Manager client LoadSecretsManager
// uses; *secretsmanager.Client satisfies it.
type SecretsGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretsGetter = (*secretsmanager.Client)(nil)

// Secrets Manager staging labels.
const (
	stageCurrent  = "AWSCURRENT"
	stagePrevious = "AWSPREVIOUS"
)

// LoadSecretsManager loads the deployed keys. The ticket secret's AWSCURRENT
// SecretString is the HMAC key. The entry secret's AWSCURRENT SecretString is
// the seed of the signing key (EntryKeyFromSeed); its AWSPREVIOUS version, when
// there is one, gives a second key that still verifies, so tokens signed just
// before a rotation stay valid. A missing AWSPREVIOUS (ResourceNotFoundException)
// is normal before the first rotation. Secrets shorter than MinSecretLen are
// refused with ErrKeyMaterial.
func LoadSecretsManager(ctx context.Context, sm SecretsGetter, ticketSecretARN, entrySecretARN string) (*Keys, error) {
	ticket, err := secretString(ctx, sm, ticketSecretARN, stageCurrent)
	if err != nil {
		return nil, fmt.Errorf("token: ticket secret: %w", err)
	}
	if len(ticket) < MinSecretLen {
		return nil, fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrKeyMaterial, MinSecretLen)
	}
	seed, err := secretString(ctx, sm, entrySecretARN, stageCurrent)
	if err != nil {
		return nil, fmt.Errorf("token: entry secret: %w", err)
	}
	current, err := EntryKeyFromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("token: entry secret %s: %w", stageCurrent, err)
	}
	keys := &Keys{TicketSecret: ticket, Entry: []*EntryKey{current}, EntrySeeds: [][]byte{seed}}

	prevSeed, err := secretString(ctx, sm, entrySecretARN, stagePrevious)
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return keys, nil
	case err != nil:
		return nil, fmt.Errorf("token: entry secret %s: %w", stagePrevious, err)
	}
	previous, err := EntryKeyFromSeed(prevSeed)
	if err != nil {
		return nil, fmt.Errorf("token: entry secret %s: %w", stagePrevious, err)
	}
	keys.addPreviousEntry(previous, prevSeed)
	return keys, nil
}

// CurrentSecret is the AWSCURRENT value of a secret.
func CurrentSecret(ctx context.Context, sm SecretsGetter, arn string) ([]byte, error) {
	return secretString(ctx, sm, arn, stageCurrent)
}

// secretString fetches one version stage of a secret as bytes.
func secretString(ctx context.Context, sm SecretsGetter, arn, stage string) ([]byte, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn, VersionStage: &stage})
	if err != nil {
		return nil, err
	}
	if out == nil || out.SecretString == nil {
		return nil, fmt.Errorf("%w: %s has no SecretString", ErrKeyMaterial, stage)
	}
	return []byte(*out.SecretString), nil
}

// Material is the key material of a deployment as one document: what the
// keysync function copies from the three Secrets Manager secrets into the
// stack's keys object (S3, SSE-KMS), and what the functions read at cold start
// instead of calling Secrets Manager (docs/SECURITY.md, "Where the keys live").
// Every value is a SecretString exactly as Secrets Manager holds it.
type Material struct {
	// Version is MaterialVersion; a reader refuses any other.
	Version int `json:"v"`
	// Ticket is the ticket secret's AWSCURRENT value (tickets have one key).
	Ticket string `json:"ticket"`
	// Entry are the entry-key seeds: AWSCURRENT, then AWSPREVIOUS when the
	// secret has been rotated.
	Entry []string `json:"entry"`
	// Origin are the origin secret's values the public routes accept:
	// AWSCURRENT, then AWSPREVIOUS; empty when the deployment has none.
	Origin []string `json:"origin,omitempty"`
	// Notice is the public half of the notice secret's AWSCURRENT value
	// (keysync derives it; the secret itself is the notify function's only);
	// nil when the deployment sends no notices.
	Notice *NoticeKeys `json:"notice,omitempty"`
}

// MaterialVersion is the format of Material this code writes and reads.
const MaterialVersion = 1

// MinOriginSecretLen refuses an origin secret short enough to guess.
const MinOriginSecretLen = 32

// Check refuses material the functions could not use or should not trust:
// another format, a short ticket secret, no entry seed or a short one, a short
// origin value, more than a current and a previous value of anything.
func (m Material) Check() error {
	switch {
	case m.Version != MaterialVersion:
		return fmt.Errorf("%w: key material format %d, want %d", ErrKeyMaterial, m.Version, MaterialVersion)
	case len(m.Ticket) < MinSecretLen:
		return fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrKeyMaterial, MinSecretLen)
	case len(m.Entry) == 0 || len(m.Entry) > 2:
		return fmt.Errorf("%w: %d entry seeds, want a current and at most one previous", ErrKeyMaterial, len(m.Entry))
	case len(m.Origin) > 2:
		return fmt.Errorf("%w: %d origin values, want a current and at most one previous", ErrKeyMaterial, len(m.Origin))
	}
	for i, e := range m.Entry {
		if len(e) < MinSecretLen {
			return fmt.Errorf("%w: entry seed %d shorter than %d bytes", ErrKeyMaterial, i, MinSecretLen)
		}
	}
	for i, o := range m.Origin {
		if len(o) < MinOriginSecretLen {
			return fmt.Errorf("%w: origin value %d shorter than %d characters", ErrKeyMaterial, i, MinOriginSecretLen)
		}
	}
	if m.Notice != nil && (m.Notice.Seal == "" || m.Notice.VAPID == "") {
		return fmt.Errorf("%w: a notice key is empty", ErrKeyMaterial)
	}
	return nil
}

// Keys derives the token keys: the ticket secret, and an entry key per seed
// (the first signs, a different previous one only verifies).
func (m Material) Keys() (*Keys, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	current, err := EntryKeyFromSeed([]byte(m.Entry[0]))
	if err != nil {
		return nil, fmt.Errorf("token: entry seed %s: %w", stageCurrent, err)
	}
	keys := &Keys{TicketSecret: []byte(m.Ticket), Entry: []*EntryKey{current}, EntrySeeds: [][]byte{[]byte(m.Entry[0])},
		Notice: m.Notice}
	if len(m.Entry) == 2 {
		previous, err := EntryKeyFromSeed([]byte(m.Entry[1]))
		if err != nil {
			return nil, fmt.Errorf("token: entry seed %s: %w", stagePrevious, err)
		}
		keys.addPreviousEntry(previous, []byte(m.Entry[1]))
	}
	return keys, nil
}

// SecretARNs name the secrets of a deployment; Origin and Notice may be "".
type SecretARNs struct {
	Ticket, Entry, Origin string
	// Notice is the notice secret (package notice), whose public half keysync
	// puts in the material (Material.Notice); the secret itself stays out.
	Notice string
}

// MaterialFromSecretsManager reads the secrets' versions into a Material:
// the ticket secret's AWSCURRENT, the entry and origin secrets' AWSCURRENT and
// (once rotated) AWSPREVIOUS. A missing AWSPREVIOUS is normal before the first
// rotation; any other error is returned. The result has passed Check.
func MaterialFromSecretsManager(ctx context.Context, sm SecretsGetter, arns SecretARNs) (Material, error) {
	m := Material{Version: MaterialVersion}
	ticket, err := secretString(ctx, sm, arns.Ticket, stageCurrent)
	if err != nil {
		return m, fmt.Errorf("token: ticket secret: %w", err)
	}
	m.Ticket = string(ticket)
	if m.Entry, err = currentAndPrevious(ctx, sm, arns.Entry); err != nil {
		return m, fmt.Errorf("token: entry secret: %w", err)
	}
	if arns.Origin != "" {
		if m.Origin, err = currentAndPrevious(ctx, sm, arns.Origin); err != nil {
			return m, fmt.Errorf("token: origin secret: %w", err)
		}
	}
	return m, m.Check()
}

// currentAndPrevious reads a secret's AWSCURRENT and, when there is one, its
// AWSPREVIOUS value; a previous value equal to the current one is left out.
func currentAndPrevious(ctx context.Context, sm SecretsGetter, arn string) ([]string, error) {
	cur, err := secretString(ctx, sm, arn, stageCurrent)
	if err != nil {
		return nil, err
	}
	prev, err := secretString(ctx, sm, arn, stagePrevious)
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return []string{string(cur)}, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", stagePrevious, err)
	case string(prev) == string(cur):
		return []string{string(cur)}, nil
	}
	return []string{string(cur), string(prev)}, nil
}
