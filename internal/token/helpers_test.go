package token

import (
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Fixed material so tokens (and the committed fuzz corpus) are reproducible.
var (
	testSecret     = []byte("ticket-secret-for-tests-0123456789abcdef")
	testIssuer     = "vestibule-test"
	testNow        = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	testSeed       = []byte("entry-seed-current-for-tests-0123456789")
	testPrevSeed   = []byte("entry-seed-previous-for-tests-012345678")
	testRetireSeed = []byte("entry-seed-retired-for-tests-0123456789")
)

// sentinels lists the package errors err wraps; every failure must wrap exactly one.
func sentinels(err error) []error {
	var out []error
	for _, s := range []error{ErrInvalid, ErrExpired, ErrNotYetValid, ErrWrongRoom} {
		if errors.Is(err, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkErr fails unless err wraps want and no other sentinel (want nil: err is nil).
func checkErr(t testing.TB, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want %v", want)
	}
	got := sentinels(err)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("error %q wraps %v; want exactly [%v]", err, got, want)
	}
}

func mustEntryKey(t testing.TB, seed []byte) *EntryKey {
	t.Helper()
	k, err := EntryKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// signer makes the signature segment's bytes from the signing input.
type signer func(input string) []byte

// forge builds a compact JWS from raw header and payload JSON, so tests can
// write anything a hostile client could, including duplicate names.
func forge(header, payload string, sign signer) string {
	input := b64([]byte(header)) + "." + b64([]byte(payload))
	return input + "." + b64(sign(input))
}

func hs256(key []byte) signer {
	return func(input string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(input))
		return m.Sum(nil)
	}
}

func es256(key *ecdsa.PrivateKey) signer {
	return func(input string) []byte {
		sum := sha256.Sum256([]byte(input))
		r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
		if err != nil {
			panic(err)
		}
		out := make([]byte, 64)
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out
	}
}

func noSig(string) []byte { return nil }

// claimsJSON marshals the claims m after edit changes them (a nil value deletes).
func claimsJSON(m map[string]any, edit map[string]any) string {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range edit {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// rawJSON is a claim value written verbatim, for numbers json.Marshal would normalize.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// segments splits a token for tampering.
func segments(tok string) (h, p, s string) {
	parts := strings.Split(tok, ".")
	return parts[0], parts[1], parts[2]
}

// flipSignature changes one bit of the decoded signature and re-encodes it, so
// the token is still well-formed and only the signature is wrong.
func flipSignature(tok string) string {
	h, p, s := segments(tok)
	sig, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	sig[len(sig)/2] ^= 0x01
	return h + "." + p + "." + b64(sig)
}

// swapPayload replaces the payload of a signed token and keeps its signature.
func swapPayload(tok, payload string) string {
	h, _, s := segments(tok)
	return h + "." + b64([]byte(payload)) + "." + s
}

// roomTicket is the ticket of the same visitor and grant as c.
func roomTicket(c EntryClaims) room.Ticket {
	return room.Ticket{Room: c.Room, Visitor: c.Visitor, Seq: c.Seq}
}
