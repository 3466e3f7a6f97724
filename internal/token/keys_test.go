package token

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// TestEntryKeyFromSeedGolden pins the derivation: d was computed outside Go
// (Python: int(sha256(b"vestibule-entry-key"+seed)) % (n-1) + 1). If it ever
// changes, every deployed kid changes and tokens in flight stop verifying.
func TestEntryKeyFromSeedGolden(t *testing.T) {
	k, err := EntryKeyFromSeed([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := k.Private.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(d), "5425691fb5079625ab9feaa667cbaf37d397b08ae5f8efc55d348131247d59ef"; got != want {
		t.Errorf("d = %s, want %s", got, want)
	}
	if got, want := k.ID, "ZUC4V2-YyBo"; got != want {
		t.Errorf("kid = %s, want %s", got, want)
	}
}

func TestEntryKeyFromSeed(t *testing.T) {
	a1, a2 := mustEntryKey(t, testSeed), mustEntryKey(t, testSeed)
	if a1.ID != a2.ID || !a1.Private.Equal(a2.Private) {
		t.Error("the same seed gave two keys")
	}
	b := mustEntryKey(t, testPrevSeed)
	if a1.ID == b.ID || a1.Private.Equal(b.Private) {
		t.Error("two seeds gave the same key")
	}
	if len(a1.ID) != 11 {
		t.Errorf("kid %q is %d characters, want 11 (8 bytes, base64url)", a1.ID, len(a1.ID))
	}
	for _, seed := range [][]byte{nil, []byte("short"), []byte(strings.Repeat("s", MinSecretLen-1))} {
		if _, err := EntryKeyFromSeed(seed); !errors.Is(err, ErrKeyMaterial) {
			t.Errorf("seed of %d bytes: err = %v, want ErrKeyMaterial", len(seed), err)
		}
	}
	if _, err := EntryKeyFromSeed([]byte(strings.Repeat("s", MinSecretLen))); err != nil {
		t.Errorf("seed of %d bytes: %v", MinSecretLen, err)
	}
}

func TestNewEntryKey(t *testing.T) {
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEntryKey(p384); !errors.Is(err, ErrKeyMaterial) {
		t.Errorf("P-384 key: err = %v, want ErrKeyMaterial", err)
	}
	if _, err := NewEntryKey(nil); !errors.Is(err, ErrKeyMaterial) {
		t.Errorf("nil key: err = %v, want ErrKeyMaterial", err)
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewEntryKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := NewEntries([]*EntryKey{k}, testIssuer).Issue(testEntryClaims())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEntries([]*EntryKey{k}, testIssuer).Verify(tok, testNow); err != nil {
		t.Errorf("a random key's token: %v", err)
	}
}

func TestLoadLocal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	first, err := LoadLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.TicketSecret) < MinSecretLen || len(first.Entry) != 1 {
		t.Fatalf("first run: %d-byte ticket secret, %d entry keys", len(first.TicketSecret), len(first.Entry))
	}
	mode := func(path string) os.FileMode {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if m := mode(dir); m != 0o700 {
		t.Errorf("folder mode %o, want 700", m)
	}
	for _, f := range []string{"ticket.key", "entry.key", "notice.key"} {
		if m := mode(filepath.Join(dir, f)); m != 0o600 {
			t.Errorf("%s mode %o, want 600", f, m)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("folder holds %d files, want 3 (no temporary files left)", len(entries))
	}

	second, err := LoadLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(second.NoticeSecret) != string(first.NoticeSecret) || len(first.NoticeSecret) < MinSecretLen {
		t.Errorf("the notice secret: %d bytes, the same at the second run: %v", len(first.NoticeSecret), string(second.NoticeSecret) == string(first.NoticeSecret))
	}
	if string(second.TicketSecret) != string(first.TicketSecret) || second.Entry[0].ID != first.Entry[0].ID {
		t.Fatal("second run gave other keys; the files must be read, not regenerated")
	}
	if string(first.TicketSecret) == string(mustSeedFile(t, dir, "entry.key")) {
		t.Fatal("ticket and entry secrets are the same")
	}

	// A ticket issued before a restart verifies after it.
	tk := room.Ticket{Room: "demo", Visitor: "v", Seq: 1}
	s, err := NewTickets(first.TicketSecret, testIssuer).Issue(tk, testNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTickets(second.TicketSecret, testIssuer).Verify(s, "demo", testNow); err != nil {
		t.Fatal(err)
	}

	// Rotation by hand: the old entry.key becomes entry.previous.key.
	oldSeed := mustSeedFile(t, dir, "entry.key")
	if err := os.WriteFile(filepath.Join(dir, "entry.previous.key"), oldSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "entry.key"), []byte(strings.Repeat("n", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rotated, err := LoadLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated.Entry) != 2 || rotated.Entry[1].ID != first.Entry[0].ID || rotated.Entry[0].ID == first.Entry[0].ID {
		t.Fatalf("after rotation: %d keys; want the new key first and the old one second", len(rotated.Entry))
	}

	// Short secrets are refused, not used.
	if err := os.WriteFile(filepath.Join(dir, "ticket.key"), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLocal(dir); !errors.Is(err, ErrKeyMaterial) {
		t.Errorf("short ticket.key: err = %v, want ErrKeyMaterial", err)
	}
}

func mustSeedFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// memorySecrets is an in-memory Secrets Manager: versions[arn][stage] is the
// SecretString. A missing stage answers as the service does, with a
// ResourceNotFoundException; fail makes one arn/stage answer another error.
type memorySecrets struct {
	versions map[string]map[string]string
	fail     map[string]error // key arn+"/"+stage
	calls    []string
}

func (m *memorySecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	arn, stage := *in.SecretId, *in.VersionStage
	m.calls = append(m.calls, arn+"/"+stage)
	if err := m.fail[arn+"/"+stage]; err != nil {
		return nil, err
	}
	v, ok := m.versions[arn][stage]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: ptr("Secrets Manager can't find the specified secret value for staging label: " + stage)}
	}
	return &secretsmanager.GetSecretValueOutput{ARN: in.SecretId, SecretString: ptr(v), VersionStages: []string{stage}}, nil
}

var _ SecretsGetter = (*memorySecrets)(nil)

func TestLoadSecretsManager(t *testing.T) {
	const ticketARN, entryARN = "arn:aws:secretsmanager:eu-west-1:1:secret:ticket", "arn:aws:secretsmanager:eu-west-1:1:secret:entry"
	ticketSecret := strings.Repeat("t", 64)
	cur, prev := string(testSeed), string(testPrevSeed)
	curKey, prevKey := mustEntryKey(t, testSeed), mustEntryKey(t, testPrevSeed)

	for _, tc := range []struct {
		name     string
		versions map[string]map[string]string
		fail     map[string]error
		wantKids []string
		wantErr  error // matched with errors.Is, or errors.As for *types.ResourceNotFoundException
		notFound bool
	}{
		{
			name:     "before the first rotation",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": ticketSecret}, entryARN: {"AWSCURRENT": cur}},
			wantKids: []string{curKey.ID},
		},
		{
			name:     "after a rotation",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": ticketSecret}, entryARN: {"AWSCURRENT": cur, "AWSPREVIOUS": prev}},
			wantKids: []string{curKey.ID, prevKey.ID},
		},
		{
			name:     "previous equal to current",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": ticketSecret}, entryARN: {"AWSCURRENT": cur, "AWSPREVIOUS": cur}},
			wantKids: []string{curKey.ID},
		},
		{
			name:     "short ticket secret",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": "short"}, entryARN: {"AWSCURRENT": cur}},
			wantErr:  ErrKeyMaterial,
		},
		{
			name:     "short entry seed",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": ticketSecret}, entryARN: {"AWSCURRENT": "short"}},
			wantErr:  ErrKeyMaterial,
		},
		{
			name:     "short previous seed",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": ticketSecret}, entryARN: {"AWSCURRENT": cur, "AWSPREVIOUS": "short"}},
			wantErr:  ErrKeyMaterial,
		},
		{
			name:     "ticket secret missing",
			versions: map[string]map[string]string{entryARN: {"AWSCURRENT": cur}},
			notFound: true,
		},
		{
			name:     "entry secret missing",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": ticketSecret}},
			notFound: true,
		},
		{
			name:     "previous unreadable for another reason",
			versions: map[string]map[string]string{ticketARN: {"AWSCURRENT": ticketSecret}, entryARN: {"AWSCURRENT": cur, "AWSPREVIOUS": prev}},
			fail:     map[string]error{entryARN + "/AWSPREVIOUS": errAccessDenied},
			wantErr:  errAccessDenied,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := &memorySecrets{versions: tc.versions, fail: tc.fail}
			keys, err := LoadSecretsManager(context.Background(), sm, ticketARN, entryARN)
			switch {
			case tc.notFound:
				var nf *types.ResourceNotFoundException
				if !errors.As(err, &nf) {
					t.Fatalf("err = %v, want a ResourceNotFoundException", err)
				}
				return
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if string(keys.TicketSecret) != ticketSecret {
				t.Error("ticket secret is not the AWSCURRENT SecretString")
			}
			var kids []string
			for _, k := range keys.Entry {
				kids = append(kids, k.ID)
			}
			if strings.Join(kids, ",") != strings.Join(tc.wantKids, ",") {
				t.Errorf("kids %v, want %v", kids, tc.wantKids)
			}
			want := []string{ticketARN + "/AWSCURRENT", entryARN + "/AWSCURRENT", entryARN + "/AWSPREVIOUS"}
			if strings.Join(sm.calls, " ") != strings.Join(want, " ") {
				t.Errorf("calls %v, want %v", sm.calls, want)
			}
		})
	}
}

var errAccessDenied = errors.New("AccessDeniedException: not allowed")

func ptr(s string) *string { return &s }

func TestMaterialFromSecretsManager(t *testing.T) {
	const ticketARN, entryARN, originARN = "arn:t", "arn:e", "arn:o"
	ticket, origin, newOrigin := strings.Repeat("t", 64), strings.Repeat("o", 64), strings.Repeat("p", 64)
	cur, prev := string(testSeed), string(testPrevSeed)
	ctx := context.Background()
	// GIVEN secrets never rotated THEN the material has one value of each
	sm := &memorySecrets{versions: map[string]map[string]string{
		ticketARN: {"AWSCURRENT": ticket}, entryARN: {"AWSCURRENT": cur}, originARN: {"AWSCURRENT": origin},
	}}
	m, err := MaterialFromSecretsManager(ctx, sm, SecretARNs{Ticket: ticketARN, Entry: entryARN, Origin: originARN})
	if err != nil || m.Version != MaterialVersion || m.Ticket != ticket || !slices.Equal(m.Entry, []string{cur}) || !slices.Equal(m.Origin, []string{origin}) {
		t.Fatalf("never rotated: %+v %v", m, err)
	}
	// GIVEN rotated entry and origin secrets THEN current first, previous second
	sm.versions[entryARN]["AWSPREVIOUS"], sm.versions[originARN] = prev, map[string]string{"AWSCURRENT": newOrigin, "AWSPREVIOUS": origin}
	m, err = MaterialFromSecretsManager(ctx, sm, SecretARNs{Ticket: ticketARN, Entry: entryARN, Origin: originARN})
	if err != nil || !slices.Equal(m.Entry, []string{cur, prev}) || !slices.Equal(m.Origin, []string{newOrigin, origin}) {
		t.Fatalf("rotated: %+v %v", m, err)
	}
	// and the keys derived from it sign with the current seed and verify with both
	keys, err := m.Keys()
	if err != nil || len(keys.Entry) != 2 || keys.Entry[0].ID != mustEntryKey(t, testSeed).ID || keys.Entry[1].ID != mustEntryKey(t, testPrevSeed).ID {
		t.Fatalf("keys: %v", err)
	}
	// GIVEN no origin secret THEN no origin value is read
	sm.calls = nil
	m, err = MaterialFromSecretsManager(ctx, sm, SecretARNs{Ticket: ticketARN, Entry: entryARN})
	if err != nil || m.Origin != nil || slices.ContainsFunc(sm.calls, func(c string) bool { return strings.HasPrefix(c, originARN) }) {
		t.Fatalf("without origin: %+v %v %v", m, err, sm.calls)
	}
	// GIVEN a previous value that cannot be read for another reason THEN it is an error
	sm.fail = map[string]error{originARN + "/AWSPREVIOUS": errAccessDenied}
	if _, err := MaterialFromSecretsManager(ctx, sm, SecretARNs{Ticket: ticketARN, Entry: entryARN, Origin: originARN}); !errors.Is(err, errAccessDenied) {
		t.Fatalf("err %v, want %v", err, errAccessDenied)
	}
}
