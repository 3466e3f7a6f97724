package token

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testAudience = "https://shop.example"

// entryHeader is the header Issue writes for key k.
func entryHeader(kid string) string {
	b, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": kid, "typ": "vst-entry+jwt"})
	return string(b)
}

// entryClaimsFor is the payload Issue writes for c.
func entryClaimsFor(c EntryClaims) map[string]any {
	return map[string]any{
		"typ": "vestibule-entry", "iss": testIssuer, "sub": c.Visitor, "room": c.Room,
		"seq": c.Seq, "jti": big.NewInt(c.Seq).String(), "aud": c.Audience,
		"iat": c.IssuedAt.Unix(), "nbf": c.NotBefore.Unix(), "exp": c.Expiry.Unix(),
	}
}

func testEntryClaims() EntryClaims {
	return EntryClaims{
		Room: "r1", Visitor: "v1", Seq: 1<<52 + 9, Audience: testAudience,
		IssuedAt: testNow, NotBefore: testNow, Expiry: testNow.Add(2 * time.Minute),
	}
}

func TestEntryRoundTrip(t *testing.T) {
	e := NewEntries([]*EntryKey{mustEntryKey(t, testSeed)}, testIssuer)
	for _, c := range []EntryClaims{
		testEntryClaims(),
		{Room: "demo", Visitor: "x", Seq: 1, Audience: "https://a.example/book?x=1",
			IssuedAt: testNow.Add(500 * time.Millisecond), Expiry: testNow.Add(time.Hour)}, // NotBefore defaults to IssuedAt
		{Room: "demo", Visitor: "x", Seq: 1<<62 + 1, Audience: "https://a.example",
			IssuedAt: testNow, NotBefore: testNow.Add(10 * time.Second), Expiry: testNow.Add(time.Hour)},
	} {
		s, err := e.Issue(c)
		if err != nil {
			t.Fatalf("Issue(%+v): %v", c, err)
		}
		got, err := e.Verify(s, c.IssuedAt.Add(20*time.Second))
		if err != nil {
			t.Fatalf("Verify(%+v): %v", c, err)
		}
		want := c
		want.IssuedAt = c.IssuedAt.Truncate(time.Second) // tokens carry whole seconds
		if want.NotBefore.IsZero() {
			want.NotBefore = want.IssuedAt
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
}

func TestEntryIssueRefuses(t *testing.T) {
	key := mustEntryKey(t, testSeed)
	e := NewEntries([]*EntryKey{key}, testIssuer)
	edit := func(f func(*EntryClaims)) EntryClaims {
		c := testEntryClaims()
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name    string
		entries *Entries
		c       EntryClaims
		want    error
	}{
		{"no key", NewEntries(nil, testIssuer), testEntryClaims(), ErrKeyMaterial},
		{"empty issuer", NewEntries([]*EntryKey{key}, ""), testEntryClaims(), ErrInvalid},
		{"empty room", e, edit(func(c *EntryClaims) { c.Room = "" }), ErrInvalid},
		{"empty visitor", e, edit(func(c *EntryClaims) { c.Visitor = "" }), ErrInvalid},
		{"seq zero", e, edit(func(c *EntryClaims) { c.Seq = 0 }), ErrInvalid},
		{"empty audience", e, edit(func(c *EntryClaims) { c.Audience = "" }), ErrInvalid},
		{"no expiry", e, edit(func(c *EntryClaims) { c.Expiry = time.Time{} }), ErrInvalid},
		{"no iat", e, edit(func(c *EntryClaims) { c.IssuedAt = time.Time{} }), ErrInvalid},
		{"exp before nbf", e, edit(func(c *EntryClaims) { c.NotBefore = c.Expiry.Add(time.Second) }), ErrInvalid},
		{"too long", e, edit(func(c *EntryClaims) { c.Audience = strings.Repeat("a", MaxTokenLen) }), ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := tc.entries.Issue(tc.c); !errorsIsOnly(err, tc.want) {
				t.Fatalf("Issue = %q, %v; want %v", s, err, tc.want)
			}
		})
	}
}

func errorsIsOnly(err, want error) bool {
	if err == nil {
		return false
	}
	if want == ErrKeyMaterial {
		return len(sentinels(err)) == 0
	}
	got := sentinels(err)
	return len(got) == 1 && got[0] == want
}

func TestEntryVerify(t *testing.T) {
	current := mustEntryKey(t, testSeed)
	previous := mustEntryKey(t, testPrevSeed)
	retired := mustEntryKey(t, testRetireSeed)
	e := NewEntries([]*EntryKey{current, previous}, testIssuer)

	c := testEntryClaims()
	valid, err := e.Issue(c)
	if err != nil {
		t.Fatal(err)
	}
	byPrevious, err := NewEntries([]*EntryKey{previous}, testIssuer).Issue(c)
	if err != nil {
		t.Fatal(err)
	}
	byRetired, err := NewEntries([]*EntryKey{retired}, testIssuer).Issue(c)
	if err != nil {
		t.Fatal(err)
	}
	ticket, err := NewTickets(testSecret, testIssuer).Issue(roomTicket(c), testNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claims := entryClaimsFor(c)
	hdr := entryHeader(current.ID)
	signed := func(edit map[string]any) string {
		return forge(hdr, claimsJSON(claims, edit), es256(current.Private))
	}
	point, err := current.Private.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := e.JWKS()
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		token string
		at    time.Time // default testNow
		want  error
		nbf   time.Time // the accepted token's nbf when it is not c's
		// past is VerifyPastExpiry's error when the row sets one; otherwise
		// want's, but for ErrExpired, which VerifyPastExpiry passes.
		past error
	}{
		{name: "valid", token: valid},
		{name: "forged with the real key is the same token", token: signed(nil)},
		{name: "signed by the previous key, still listed", token: byPrevious},
		{name: "signed by a rotated-out key", token: byRetired, want: ErrInvalid},

		// Algorithms.
		{name: "alg none", token: forge(`{"alg":"none","kid":"`+current.ID+`","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), noSig), want: ErrInvalid},
		{name: "HS256 keyed with the public point", token: forge(`{"alg":"HS256","kid":"`+current.ID+`","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), hs256(point)), want: ErrInvalid},
		{name: "HS256 keyed with the JWKS", token: forge(`{"alg":"HS256","kid":"`+current.ID+`","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), hs256(jwks)), want: ErrInvalid},
		{name: "ES384 header", token: forge(`{"alg":"ES384","kid":"`+current.ID+`","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "ticket used as entry token", token: ticket, want: ErrInvalid},

		// kid.
		{name: "unknown kid", token: forge(entryHeader("AAAAAAAAAAA"), claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "kid of the retired key", token: forge(entryHeader(retired.ID), claimsJSON(claims, nil), es256(retired.Private)), want: ErrInvalid},
		{name: "kid path traversal", token: forge(entryHeader("../../etc/passwd"), claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "kid path to a real key", token: forge(entryHeader("../keys/"+current.ID), claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "kid very long", token: forge(entryHeader(strings.Repeat("A", 2000)), claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "kid with NUL", token: forge(entryHeader(current.ID+"\x00"), claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "kid as number", token: forge(`{"alg":"ES256","kid":1,"typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "kid missing", token: forge(`{"alg":"ES256","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "kid of one key, signed by another", token: forge(entryHeader(current.ID), claimsJSON(claims, nil), es256(previous.Private)), want: ErrInvalid},
		{name: "header jwk", token: forge(`{"alg":"ES256","jwk":{"kty":"EC"},"kid":"`+current.ID+`","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "header jku", token: forge(`{"alg":"ES256","jku":"https://evil.example/jwks.json","kid":"`+current.ID+`","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},
		{name: "header typ of tickets", token: forge(`{"alg":"ES256","kid":"`+current.ID+`","typ":"vst-ticket+jwt"}`, claimsJSON(claims, nil), es256(current.Private)), want: ErrInvalid},

		// Tampering.
		{name: "tampered signature", token: flipSignature(valid), want: ErrInvalid},
		{name: "tampered payload", token: swapPayload(valid, claimsJSON(claims, map[string]any{"room": "r2"})), want: ErrInvalid},
		{name: "signature truncated", token: valid[:len(valid)-4], want: ErrInvalid},

		// Claims.
		{name: "typ of tickets", token: signed(map[string]any{"typ": "vestibule-ticket"}), want: ErrInvalid},
		{name: "wrong issuer", token: signed(map[string]any{"iss": "evil"}), want: ErrInvalid},
		{name: "room missing", token: signed(map[string]any{"room": nil}), want: ErrInvalid},
		{name: "room empty", token: signed(map[string]any{"room": ""}), want: ErrInvalid},
		{name: "jti differs from seq", token: signed(map[string]any{"jti": "1"}), want: ErrInvalid},
		{name: "jti with leading zero", token: signed(map[string]any{"jti": "0" + claims["jti"].(string)}), want: ErrInvalid},
		{name: "jti missing", token: signed(map[string]any{"jti": nil}), want: ErrInvalid},
		{name: "aud missing", token: signed(map[string]any{"aud": nil}), want: ErrInvalid},
		{name: "aud as array", token: signed(map[string]any{"aud": []string{testAudience}}), want: ErrInvalid},
		{name: "nbf missing", token: signed(map[string]any{"nbf": nil}), want: ErrInvalid},
		{name: "seq as float", token: signed(map[string]any{"seq": rawJSON("4503599627370505.0")}), want: ErrInvalid},
		{name: "ticket claim draw", token: signed(map[string]any{"draw": 0.5}), want: ErrInvalid},
		{name: "duplicate room", token: forge(hdr, dupRoom(claims, "r1", "r2"), es256(current.Private)), want: ErrInvalid},
		{name: "duplicate aud", token: forge(hdr, addRaw(claims, `"aud":"https://evil.example"`), es256(current.Private)), want: ErrInvalid},

		// Time, with Leeway on both sides.
		{name: "expired", token: valid, at: c.Expiry.Add(Leeway), want: ErrExpired},
		{name: "expired within leeway", token: valid, at: c.Expiry.Add(Leeway - time.Second)},
		{name: "not yet valid", token: signed(map[string]any{"nbf": testNow.Add(time.Minute).Unix()}), want: ErrNotYetValid},
		{name: "not yet valid within leeway", token: signed(map[string]any{"nbf": testNow.Add(Leeway).Unix()}), nbf: testNow.Add(Leeway)},
		{name: "issued in the future", token: valid, at: testNow.Add(-Leeway - time.Second), want: ErrNotYetValid},
		{name: "nbf after exp", token: signed(map[string]any{"nbf": c.Expiry.Add(time.Second).Unix()}), want: ErrInvalid},

		// Past exp, as complete sees tokens (VerifyPastExpiry: valid at its own start, signature held).
		{name: "a day past exp", token: valid, at: c.Expiry.Add(24 * time.Hour), want: ErrExpired},
		{name: "past exp, signature tampered", token: flipSignature(valid), at: c.Expiry.Add(24 * time.Hour), want: ErrInvalid},
		{name: "past exp, signed by a rotated-out key", token: byRetired, at: c.Expiry.Add(24 * time.Hour), want: ErrInvalid},
		{name: "past exp, another issuer", token: signed(map[string]any{"iss": "evil"}), at: c.Expiry.Add(24 * time.Hour), want: ErrInvalid},
		{name: "past exp, issued after its own start", token: signed(map[string]any{"iat": testNow.Add(time.Minute).Unix()}), at: c.Expiry.Add(24 * time.Hour), want: ErrExpired, past: ErrNotYetValid},

		// Size and encoding.
		{name: "oversized", token: valid + strings.Repeat("A", MaxTokenLen), want: ErrInvalid},
		{name: "empty", token: "", want: ErrInvalid},
		{name: "four segments", token: valid + ".", want: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := tc.at
			if at.IsZero() {
				at = testNow
			}
			want := c
			if !tc.nbf.IsZero() {
				want.NotBefore = tc.nbf
			}
			got, err := e.Verify(tc.token, at)
			checkErr(t, err, tc.want)
			if tc.want == nil {
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("claims (-want +got):\n%s", diff)
				}
			}
			// VerifyPastExpiry refuses every token Verify refuses for any
			// other reason than its exp, and passes the rest.
			lapsed := tc.want
			if lapsed == ErrExpired {
				lapsed = nil
			}
			if tc.past != nil {
				lapsed = tc.past
			}
			got, err = e.VerifyPastExpiry(tc.token, at)
			checkErr(t, err, lapsed)
			if lapsed == nil {
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("VerifyPastExpiry claims (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestJWKSVerifiesTokens checks the published set with nothing but
// crypto/ecdsa: an origin that never heard of golang-jwt can check our tokens.
func TestJWKSVerifiesTokens(t *testing.T) {
	current := mustEntryKey(t, testSeed)
	previous := mustEntryKey(t, testPrevSeed)
	e := NewEntries([]*EntryKey{current, previous}, testIssuer)
	raw, err := e.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("JWKS has %d keys, want 2: %s", len(set.Keys), raw)
	}
	pubs := map[string]*ecdsa.PublicKey{}
	for i, k := range set.Keys {
		for name, want := range map[string]string{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig"} {
			if k[name] != want {
				t.Errorf("key %d: %s = %q, want %q", i, name, k[name], want)
			}
		}
		if len(k) != 7 {
			t.Errorf("key %d has fields %v; want exactly kty crv x y kid alg use (no private d)", i, k)
		}
		x, errX := base64.RawURLEncoding.DecodeString(k["x"])
		y, errY := base64.RawURLEncoding.DecodeString(k["y"])
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			t.Fatalf("key %d: bad coordinates %q %q", i, k["x"], k["y"])
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		// The kid is a function of the point alone, so an origin can recompute it.
		point, _ := pub.Bytes()
		sum := sha256.Sum256(point)
		if kid := base64.RawURLEncoding.EncodeToString(sum[:8]); kid != k["kid"] {
			t.Errorf("key %d: kid %q, recomputed %q", i, k["kid"], kid)
		}
		pubs[k["kid"]] = pub
	}
	if set.Keys[0]["kid"] != current.ID || set.Keys[1]["kid"] != previous.ID {
		t.Errorf("kids %q %q, want %q %q", set.Keys[0]["kid"], set.Keys[1]["kid"], current.ID, previous.ID)
	}

	for _, signer := range []*EntryKey{current, previous} {
		tok, err := NewEntries([]*EntryKey{signer}, testIssuer).Issue(testEntryClaims())
		if err != nil {
			t.Fatal(err)
		}
		h, p, s := segments(tok)
		hb, _ := base64.RawURLEncoding.DecodeString(h)
		var header struct{ Kid string }
		if err := json.Unmarshal(hb, &header); err != nil {
			t.Fatal(err)
		}
		pub := pubs[header.Kid]
		if pub == nil {
			t.Fatalf("token kid %q not in the JWKS", header.Kid)
		}
		sig, _ := base64.RawURLEncoding.DecodeString(s)
		sum := sha256.Sum256([]byte(h + "." + p))
		r, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(pub, sum[:], r, ss) {
			t.Errorf("token by %s does not verify with its JWKS key", signer.ID)
		}
		// And the other key of the set must not verify it.
		for kid, other := range pubs {
			if kid != header.Kid && ecdsa.Verify(other, sum[:], r, ss) {
				t.Errorf("token by %s verifies with %s", signer.ID, kid)
			}
		}
	}
}
