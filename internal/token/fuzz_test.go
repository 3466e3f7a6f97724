package token

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The fuzz targets take a raw token and, separately, a header and payload that
// the target signs with the real key: random bytes almost never carry a valid
// signature, so without the second path the fuzzer would never get past the
// signature to the claim checks. Seeds are in testdata/fuzz/<target>/.
//
// Properties: Verify never panics; a refusal wraps exactly one sentinel; an
// accepted token verifies again to the same claims, and those claims, issued
// afresh, verify to the same claims too (nothing accepted is lost or altered
// by a round through our own encoding).

// FuzzTicketVerify fuzzes format 1 (JWT) tickets, still verified during the
// transition, and any string; FuzzTicketVerifyBinary signs format 2 bodies.
// A format 1 ticket's claims are issued again as format 2, unless format 2
// cannot carry them (a visitor id the engine never made).
func FuzzTicketVerify(f *testing.F) {
	tickets := NewTickets(testSecret, testIssuer)
	f.Fuzz(func(t *testing.T, tok string, header, payload []byte) {
		signed := b64(header) + "." + b64(payload)
		signed += "." + b64(hs256(testSecret)(signed))
		for _, s := range []string{tok, signed} {
			got, err := tickets.Verify(s, "r1", testNow)
			if err != nil {
				if n := len(sentinels(err)); n != 1 {
					t.Fatalf("error %q wraps %d sentinels", err, n)
				}
				continue
			}
			if got.Room != "r1" {
				t.Fatalf("accepted a ticket of room %q for r1", got.Room)
			}
			again, err := tickets.Verify(s, "r1", testNow)
			if err != nil || !cmp.Equal(got, again) {
				t.Fatalf("second Verify = %+v, %v; first %+v", again, err, got)
			}
			reissued, err := tickets.Issue(got, testNow, time.Minute)
			if err != nil {
				if s != tok || len(got.Visitor) <= maxTicketVisitor && idChars(got.Visitor) {
					t.Fatalf("accepted claims %+v cannot be issued: %v", got, err)
				}
				continue
			}
			back, err := tickets.Verify(reissued, "r1", testNow)
			if err != nil || !cmp.Equal(got, back) {
				t.Fatalf("reissued %+v verifies to %+v, %v", got, back, err)
			}
		}
	})
}

// FuzzTicketVerifyBinary: tok is any string, body is signed with the real key
// as a format 2 ticket. An accepted format 2 ticket reissued is the very same
// string (one ticket, one spelling) and its claims round-trip through Issue.
func FuzzTicketVerifyBinary(f *testing.F) {
	tickets := NewTickets(testSecret, testIssuer)
	f.Fuzz(func(t *testing.T, tok string, body []byte) {
		for _, s := range []string{tok, signBody(testSecret, testIssuer, body)} {
			got, err := tickets.Check(s, "r1", testNow)
			if err != nil {
				if n := len(sentinels(err)); n != 1 {
					t.Fatalf("error %q wraps %d sentinels", err, n)
				}
				continue
			}
			if got.Room != "r1" {
				t.Fatalf("accepted a ticket of room %q for r1", got.Room)
			}
			if got.Stale {
				continue // format 1 (FuzzTicketVerify's), or a draw in plain: reissued hidden
			}
			again, err := tickets.Reissue(got)
			if err != nil || again != s {
				t.Fatalf("accepted %q; reissued as %q, %v", s, again, err)
			}
			fresh, err := tickets.Issue(got.Ticket, testNow, time.Minute)
			if err != nil {
				t.Fatalf("accepted claims %+v cannot be issued: %v", got, err)
			}
			back, err := tickets.Verify(fresh, "r1", testNow)
			if err != nil || !cmp.Equal(got.Ticket, back) {
				t.Fatalf("reissued %+v verifies to %+v, %v", got.Ticket, back, err)
			}
		}
	})
}

func FuzzEntryVerify(f *testing.F) {
	current, err := EntryKeyFromSeed(testSeed)
	if err != nil {
		f.Fatal(err)
	}
	entries := NewEntries([]*EntryKey{current}, testIssuer)
	f.Fuzz(func(t *testing.T, tok string, header, payload []byte) {
		signed := b64(header) + "." + b64(payload)
		signed += "." + b64(es256(current.Private)(signed))
		for _, s := range []string{tok, signed} {
			got, err := entries.Verify(s, testNow)
			if err != nil {
				if n := len(sentinels(err)); n != 1 {
					t.Fatalf("error %q wraps %d sentinels", err, n)
				}
				continue
			}
			again, err := entries.Verify(s, testNow)
			if err != nil || !cmp.Equal(got, again) {
				t.Fatalf("second Verify = %+v, %v; first %+v", again, err, got)
			}
			reissued, err := entries.Issue(got)
			if err != nil {
				t.Fatalf("accepted claims %+v cannot be issued: %v", got, err)
			}
			back, err := entries.Verify(reissued, testNow)
			if err != nil || !cmp.Equal(got, back) {
				t.Fatalf("reissued %+v verifies to %+v, %v", got, back, err)
			}
		}
	})
}

// TestFuzzCorpusValidSeeds keeps the committed corpus honest: the seeds named
// "valid" must still be accepted, or the fuzzer starts from nothing but refusals.
func TestFuzzCorpusValidSeeds(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	entries := NewEntries([]*EntryKey{mustEntryKey(t, testSeed)}, testIssuer)
	for target, verify := range map[string]func(string) error{
		"FuzzTicketVerify":       func(s string) error { _, err := tickets.Verify(s, "r1", testNow); return err },
		"FuzzTicketVerifyBinary": func(s string) error { _, err := tickets.Verify(s, "r1", testNow); return err },
		"FuzzEntryVerify":        func(s string) error { _, err := entries.Verify(s, testNow); return err },
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "fuzz", target, "valid"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 4 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "string(") {
			t.Fatalf("%s/valid is not a go test fuzz v1 file", target)
		}
		tok, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")"))
		if err != nil {
			t.Fatal(err)
		}
		if err := verify(tok); err != nil {
			t.Errorf("%s/valid: %v", target, err)
		}
		if target == "FuzzTicketVerifyBinary" {
			// The body seed, signed by the target, is accepted too.
			body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[2], "[]byte("), ")"))
			if err != nil {
				t.Fatal(err)
			}
			if err := verify(signBody(testSecret, testIssuer, []byte(body))); err != nil {
				t.Errorf("%s/valid body: %v", target, err)
			}
			continue
		}
		// The header and payload seeds, signed by the target, are accepted too.
		header, err1 := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[2], "[]byte("), ")"))
		payload, err2 := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[3], "[]byte("), ")"))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s/valid: %v %v", target, err1, err2)
		}
		input := b64([]byte(header)) + "." + b64([]byte(payload))
		var sig []byte
		if target == "FuzzTicketVerify" {
			sig = hs256(testSecret)(input)
		} else {
			sig = es256(mustEntryKey(t, testSeed).Private)(input)
		}
		if err := verify(input + "." + b64(sig)); err != nil {
			t.Errorf("%s/valid header and payload: %v", target, err)
		}
	}
}
