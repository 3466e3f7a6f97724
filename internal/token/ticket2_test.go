package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// ticketBody writes tk in the format 2 layout (3 with a draw, masked under
// testSecret and testIssuer) as ticket.go documents it, independently of
// Issue, so a test can sign any bytes a forger could want signed.
func ticketBody(tk room.Ticket, iat, exp time.Time) []byte {
	b := plainBody(tk, iat, exp)
	if tk.Draw != 0 {
		b[0] = 3
		pad := hmac.New(sha256.New, hs256(ticketKeyOf(testSecret, testIssuer))("draw-pad"))
		pad.Write(b[1:9])
		pad.Write(b[33:])
		binary.BigEndian.PutUint64(b[9:], math.Float64bits(tk.Draw)^binary.BigEndian.Uint64(pad.Sum(nil)))
	}
	return b
}

// plainBody is the format 2 layout with any draw in plain, as tickets were
// issued before format 3.
func plainBody(tk room.Ticket, iat, exp time.Time) []byte {
	b := []byte{2}
	b = binary.BigEndian.AppendUint64(b, uint64(tk.Seq))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(tk.Draw))
	b = binary.BigEndian.AppendUint64(b, uint64(iat.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(exp.Unix()))
	b = append(b, byte(len(tk.Room)))
	b = append(b, tk.Room...)
	b = append(b, byte(len(tk.Visitor)))
	return append(b, tk.Visitor...)
}

// ticketKeyOf is K as documented: HMAC-SHA256(secret, "vestibule-ticket-v2\x00" || issuer).
func ticketKeyOf(secret []byte, issuer string) []byte {
	return hs256(secret)("vestibule-ticket-v2\x00" + issuer)
}

// signBody appends the tag of body under the key of secret and issuer and encodes the ticket.
func signBody(secret []byte, issuer string, body []byte) string {
	return signBodyWith(ticketKeyOf(secret, issuer), body)
}

func signBodyWith(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return base64.RawURLEncoding.EncodeToString(m.Sum(append([]byte(nil), body...)))
}

// TestTicketLayout pins the format: Issue writes exactly the documented bytes.
func TestTicketLayout(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	for _, tk := range []room.Ticket{
		{Room: "r1", Visitor: "v1", Seq: 42},
		{Room: "pre", Visitor: "AAAAAAAAAAAAAAAAAAAAAA", Seq: 1<<62 + 1, Draw: 0.123456789012},
	} {
		s, err := tickets.Issue(tk, testNow.Add(700*time.Millisecond), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want := signBody(testSecret, testIssuer, ticketBody(tk, testNow, testNow.Add(time.Minute)))
		if s != want {
			t.Errorf("Issue(%+v) =\n%s\nwant\n%s", tk, s, want)
		}
		if strings.ContainsAny(s, ".=+/") || len(s) > 200 {
			t.Errorf("ticket %q: not plain base64url, or longer than 200 characters", s)
		}
	}
}

func TestTicketVerify(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	good := room.Ticket{Room: "r1", Visitor: "v1", Seq: 42}
	exp := testNow.Add(time.Minute)
	valid, err := tickets.Issue(good, testNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	body := ticketBody(good, testNow, exp)
	// edited signs, with the real key, the good body after edit changed it.
	edited := func(edit func(b []byte) []byte) string {
		return signBody(testSecret, testIssuer, edit(append([]byte(nil), body...)))
	}
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint64(b[off:], v); return b }
	}
	withFields := func(tk room.Ticket, iat, exp time.Time) string {
		return signBody(testSecret, testIssuer, ticketBody(tk, iat, exp))
	}
	entryKey := mustEntryKey(t, testSeed)
	entryTok, err := NewEntries([]*EntryKey{entryKey}, testIssuer).Issue(EntryClaims{
		Room: "r1", Visitor: "v1", Seq: 42, Audience: "https://shop.example",
		IssuedAt: testNow, Expiry: exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	session, err := NewBookingSessions(testSecret, testIssuer).Issue(BookingSession{Room: "r1", Seq: 42, Ends: exp}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(valid)

	for _, tc := range []struct {
		name  string
		token string
		room  string    // default r1
		at    time.Time // default testNow
		want  error
	}{
		{name: "valid", token: valid},
		{name: "pre-queue draw", token: withFields(room.Ticket{Room: "r1", Visitor: "v1", Seq: 42, Draw: 0.5}, testNow, exp)},
		{name: "other room", token: valid, room: "r2", want: ErrWrongRoom},
		{name: "room prefix", token: valid, room: "r", want: ErrWrongRoom},
		{name: "room extension", token: valid, room: "r10", want: ErrWrongRoom},

		// Keys and kinds.
		{name: "another secret", token: signBody([]byte("another-secret-0123456789abcdef0123"), testIssuer, body), want: ErrInvalid},
		{name: "another issuer", token: signBody(testSecret, "someone-else", body), want: ErrInvalid},
		{name: "raw secret as the key (format 1's)", token: signBodyWith(testSecret, body), want: ErrInvalid},
		{name: "booking session key", token: signBodyWith(NewBookingSessions(testSecret, testIssuer).key, body), want: ErrInvalid},
		{name: "entry token used as ticket", token: entryTok, want: ErrInvalid},
		{name: "booking session used as ticket", token: session, want: ErrInvalid},
		{name: "origin credential used as ticket", token: NewOrigins(testSecret).Credential("r1"), want: ErrInvalid},

		// Tampering and truncation (every bit: TestTicketTamperedBits).
		{name: "tag cut to 16 bytes", token: b64(raw[:len(raw)-16]), want: ErrInvalid},
		{name: "tag missing", token: b64(raw[:len(raw)-32]), want: ErrInvalid},
		{name: "a byte more", token: b64(append(append([]byte(nil), raw...), 0)), want: ErrInvalid},
		{name: "last character dropped", token: valid[:len(valid)-1], want: ErrInvalid},
		{name: "padded", token: valid + "=", want: ErrInvalid},
		{name: "leading space", token: " " + valid, want: ErrInvalid},
		{name: "trailing newline", token: valid + "\n", want: ErrInvalid},
		{name: "standard base64 alphabet", token: valid + "+/", want: ErrInvalid},
		{name: "non-canonical last character", token: nonCanonicalLast(valid), want: ErrInvalid},

		// Fields, signed with the real key: only a bug of ours could write them.
		{name: "format 1 byte", token: edited(func(b []byte) []byte { b[0] = 1; return b }), want: ErrInvalid},
		{name: "format 3 byte without a draw", token: edited(func(b []byte) []byte { b[0] = 3; return b }), want: ErrInvalid},
		{name: "format 4 byte", token: edited(func(b []byte) []byte { b[0] = 4; return b }), want: ErrInvalid},
		{name: "seq zero", token: edited(put64(1, 0)), want: ErrInvalid},
		{name: "seq negative", token: edited(put64(1, math.MaxUint64)), want: ErrInvalid},
		{name: "draw one", token: edited(put64(9, math.Float64bits(1))), want: ErrInvalid},
		{name: "draw negative zero", token: edited(put64(9, math.Float64bits(math.Copysign(0, -1)))), want: ErrInvalid},
		{name: "draw negative", token: edited(put64(9, math.Float64bits(-0.5))), want: ErrInvalid},
		{name: "draw NaN", token: edited(put64(9, math.Float64bits(math.NaN()))), want: ErrInvalid},
		{name: "draw infinite", token: edited(put64(9, math.Float64bits(math.Inf(1)))), want: ErrInvalid},
		{name: "iat zero", token: edited(put64(17, 0)), want: ErrInvalid},
		{name: "iat negative", token: edited(put64(17, math.MaxUint64)), want: ErrInvalid},
		{name: "exp in year 10000", token: edited(put64(25, 253402300800)), want: ErrInvalid},
		{name: "exp at iat", token: edited(put64(25, uint64(testNow.Unix()))), want: ErrInvalid},
		{name: "exp before iat", token: edited(put64(25, uint64(testNow.Unix()-1))), want: ErrInvalid},
		{name: "room length zero", token: edited(func(b []byte) []byte { b[33] = 0; return b }), want: ErrInvalid},
		{name: "room length past the end", token: edited(func(b []byte) []byte { b[33] = 200; return b }), want: ErrInvalid},
		{name: "room longer than 64", token: withFields(room.Ticket{Room: strings.Repeat("r", 65), Visitor: "v1", Seq: 42}, testNow, exp), room: strings.Repeat("r", 65), want: ErrInvalid},
		{name: "visitor length zero", token: edited(func(b []byte) []byte { b[36] = 0; return b[:37] }), want: ErrInvalid},
		{name: "visitor length one short", token: edited(func(b []byte) []byte { b[36] = 1; return b }), want: ErrInvalid},
		{name: "visitor length one over", token: edited(func(b []byte) []byte { b[36] = 3; return b }), want: ErrInvalid},
		{name: "visitor longer than 128", token: withFields(room.Ticket{Room: "r1", Visitor: strings.Repeat("v", 129), Seq: 42}, testNow, exp), want: ErrInvalid},
		{name: "visitor with a space", token: withFields(room.Ticket{Room: "r1", Visitor: "v 1", Seq: 42}, testNow, exp), want: ErrInvalid},
		{name: "room with a dot", token: withFields(room.Ticket{Room: "r.", Visitor: "v1", Seq: 42}, testNow, exp), room: "r.", want: ErrInvalid},
		{name: "body only", token: b64(body), want: ErrInvalid},

		// Time, with Leeway on both sides.
		{name: "expired", token: valid, at: exp.Add(Leeway), want: ErrExpired},
		{name: "expired long ago", token: valid, at: exp.Add(time.Hour), want: ErrExpired},
		{name: "expired within leeway", token: valid, at: exp.Add(Leeway - time.Second)},
		{name: "issued in the future", token: valid, at: testNow.Add(-Leeway - time.Second), want: ErrNotYetValid},
		{name: "issued in the future within leeway", token: valid, at: testNow.Add(-Leeway)},

		// Size and encoding.
		{name: "empty", token: "", want: ErrInvalid},
		{name: "one character", token: "A", want: ErrInvalid},
		{name: "longest ticket plus one", token: strings.Repeat("A", maxTicketLen+1), want: ErrInvalid},
		{name: "oversized garbage", token: strings.Repeat("a", 1<<20), want: ErrInvalid},
		{name: "non-ASCII", token: valid[:10] + "é" + valid[12:], want: ErrInvalid},
		{name: "NUL", token: valid[:10] + "\x00" + valid[11:], want: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roomID, at := tc.room, tc.at
			if roomID == "" {
				roomID = "r1"
			}
			if at.IsZero() {
				at = testNow
			}
			got, err := tickets.Check(tc.token, roomID, at)
			checkErr(t, err, tc.want)
			if tc.want != nil {
				return
			}
			if got.Room != roomID || got.Seq != good.Seq || got.Visitor != good.Visitor || got.Stale {
				t.Fatalf("Check = %+v; want room %s, seq %d, visitor %s, not stale", got, roomID, good.Seq, good.Visitor)
			}
			if !got.IssuedAt.Equal(testNow) || !got.Expiry.Equal(exp) {
				t.Fatalf("times %v–%v; want %v–%v", got.IssuedAt, got.Expiry, testNow, exp)
			}
		})
	}
}

// TestTicketTamperedBits flips every bit of a valid ticket's bytes, tag
// included: each must be refused as invalid (not as another room's, not as
// expired: the tag is checked before any field is read).
func TestTicketTamperedBits(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	s, err := tickets.Issue(room.Ticket{Room: "r1", Visitor: "v1", Seq: 42, Draw: 0.25}, testNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for bit := range 8 {
			b := append([]byte(nil), raw...)
			b[i] ^= 1 << bit
			_, err := tickets.Verify(b64(b), "r1", testNow)
			if len(sentinels(err)) != 1 || sentinels(err)[0] != ErrInvalid {
				t.Fatalf("byte %d bit %d flipped: %v; want ErrInvalid", i, bit, err)
			}
		}
	}
}

// TestTicketRotation: tickets of the previous secret still verify, marked
// Stale, and Reissue moves them under the current secret with the same
// place and lifetime; a secret that is neither is refused.
func TestTicketRotation(t *testing.T) {
	prevSecret := []byte("ticket-secret-previous-0123456789abcdef")
	old := NewTickets(prevSecret, testIssuer)
	rotated := NewTickets(testSecret, testIssuer, prevSecret)
	tk := room.Ticket{Room: "r1", Visitor: "v1", Seq: 7, Draw: 0.75}
	s, err := old.Issue(tk, testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rotated.Check(s, "r1", testNow)
	if err != nil || !v.Stale || !cmp.Equal(v.Ticket, tk) {
		t.Fatalf("previous secret's ticket: %+v, %v; want %+v, stale", v, err, tk)
	}
	again, err := rotated.Reissue(v)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rotated.Check(again, "r1", testNow)
	if err != nil || w.Stale || !cmp.Equal(w, Verified{Ticket: tk, IssuedAt: testNow, Expiry: testNow.Add(time.Hour)}) {
		t.Fatalf("reissued: %+v, %v", w, err)
	}
	if _, err := old.Verify(again, "r1", testNow); err == nil {
		t.Fatal("the previous secret verifies a ticket of the current one")
	}
	// Format 1 under the previous secret is accepted too.
	jwtTok := forge(ticketHeader, claimsJSON(ticketClaimsFor(tk), nil), hs256(prevSecret))
	if v, err := rotated.Check(jwtTok, "r1", testNow); err != nil || !v.Stale {
		t.Fatalf("format 1 under the previous secret: %+v, %v", v, err)
	}
	// Neither secret.
	third := NewTickets([]byte("ticket-secret-retired-0123456789abcdefg"), testIssuer)
	s3, err := third.Issue(tk, testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rotated.Verify(s3, "r1", testNow)
	checkErr(t, err, ErrInvalid)
	// Without a usable current secret, a previous one still verifies (stale),
	// and nothing is issued.
	noCurrent := NewTickets([]byte("short"), testIssuer, prevSecret)
	if v, err := noCurrent.Check(s, "r1", testNow); err != nil || !v.Stale {
		t.Fatalf("previous secret without a current one: %+v, %v", v, err)
	}
	if _, err := noCurrent.Reissue(v); !errors.Is(err, ErrKeyMaterial) {
		t.Fatalf("Reissue without a current secret: %v", err)
	}
	// An empty issuer refuses everything.
	_, err = NewTickets(testSecret, "").Verify(again, "r1", testNow)
	checkErr(t, err, ErrInvalid)
	// The current secret given as previous too is one key, not two.
	if n := len(NewTickets(testSecret, testIssuer, testSecret).keys); n != 1 {
		t.Errorf("%d keys for one secret", n)
	}
}

// TestTicketFormat1IsReissued: a JWT ticket issued before the upgrade is
// Stale, and its reissue is format 2 with the same place and times.
func TestTicketFormat1IsReissued(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	tk := room.Ticket{Room: "r1", Visitor: "hG3k2cQ_visitor-id0123", Seq: 1<<52 + 3, Draw: 0.5}
	old := forge(ticketHeader, claimsJSON(ticketClaimsFor(tk), nil), hs256(testSecret))
	v, err := tickets.Check(old, "r1", testNow)
	if err != nil || !v.Stale {
		t.Fatalf("format 1: %+v, %v", v, err)
	}
	s, err := tickets.Reissue(v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s, ".") {
		t.Fatalf("reissued as a JWT: %s", s)
	}
	w, err := tickets.Check(s, "r1", testNow)
	want := Verified{Ticket: tk, IssuedAt: testNow, Expiry: testNow.Add(time.Minute)}
	if err != nil || !cmp.Equal(w, want) {
		t.Fatalf("reissued: %+v, %v; want %+v", w, err, want)
	}
}

// TestTicketKinds: a ticket is no other kind of token, in either format.
func TestTicketKinds(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	tk := room.Ticket{Room: "r1", Visitor: "v1", Seq: 42}
	s, err := tickets.Issue(tk, testNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	format1 := forge(ticketHeader, claimsJSON(ticketClaimsFor(tk), nil), hs256(testSecret))
	entries := NewEntries([]*EntryKey{mustEntryKey(t, testSeed)}, testIssuer)
	sessions := NewBookingSessions(testSecret, testIssuer)
	origins := NewOrigins(testSecret)
	for _, tok := range []string{s, format1} {
		if _, err := entries.Verify(tok, testNow); err == nil {
			t.Errorf("ticket %.20s… accepted as an entry token", tok)
		}
		if _, err := sessions.Verify(tok, testNow); err == nil {
			t.Errorf("ticket %.20s… accepted as a booking session", tok)
		}
		if origins.Check("r1", tok) {
			t.Errorf("ticket %.20s… accepted as an origin credential", tok)
		}
	}
}

// TestTicketVerifyAllocates checks the poll's path stays free of
// allocations but the visitor id's string (a count, not a time).
func TestTicketVerifyAllocates(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops entries on purpose: counted without -race")
	}
	tickets := NewTickets(testSecret, testIssuer, []byte("ticket-secret-previous-0123456789abcdef"))
	for _, draw := range []float64{0, 0.25} { // format 2, and 3 (its pad)
		s, err := tickets.Issue(room.Ticket{Room: "demo", Visitor: "hG3k2cQ_visitor-id0123", Seq: 1<<52 + 1, Draw: draw}, testNow, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tickets.Verify(s, "demo", testNow) // fill the pool
		if n := testing.AllocsPerRun(200, func() {
			if _, err := tickets.Verify(s, "demo", testNow); err != nil {
				t.Fatal(err)
			}
		}); n > 1 {
			t.Errorf("draw %v: Verify allocates %v times; want at most 1", draw, n)
		}
	}
}

func TestPeekTicket(t *testing.T) {
	tk := room.Ticket{Room: "r1", Visitor: "v1", Seq: 1<<52 + 3, Draw: 0.125}
	s, err := NewTickets(testSecret, testIssuer).Issue(tk, testNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	format1 := forge(ticketHeader, claimsJSON(ticketClaimsFor(tk), nil), hs256(testSecret))
	masked := tk
	masked.Draw = 0 // format 3 hides it
	for tok, want := range map[string]room.Ticket{s: masked, format1: tk} {
		got, ok := PeekTicket(tok)
		if !ok || !cmp.Equal(got, want) {
			t.Errorf("PeekTicket(%.20s…) = %+v, %v; want %+v", tok, got, ok, want)
		}
	}
	for _, bad := range []string{"", "a.b.c", "x", strings.Repeat("A", 96), strings.Repeat("a", MaxTokenLen+1), s[:len(s)-1]} {
		if got, ok := PeekTicket(bad); ok {
			t.Errorf("PeekTicket(%.20q) = %+v, accepted", bad, got)
		}
	}
}

func TestDecodeB64URL(t *testing.T) {
	for _, s := range []string{"", "AA", "AAA", "AAAA", "AQ", "AR", "AAE", "AAB", "_-_-", "A", "AAAAA", "AA==", "A+", "A/", "\r", "AA\nAA"} {
		checkDecode(t, s)
	}
}

// FuzzDecodeB64URL: the decoder agrees with encoding/base64's strict raw URL encoding.
func FuzzDecodeB64URL(f *testing.F) {
	for _, s := range []string{"", "AA", "AAE", "AR", "A=", "eyJ", "-_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		checkDecode(t, s)
	})
}

// checkDecode compares decodeB64URL with encoding/base64, which skips \r and
// \n wherever they are: decodeB64URL refuses them (a ticket has one spelling).
func checkDecode(t *testing.T, s string) {
	t.Helper()
	want, werr := base64.RawURLEncoding.Strict().DecodeString(s)
	if strings.ContainsAny(s, "\r\n") {
		want, werr = nil, errors.New("line break")
	}
	dst := make([]byte, len(s)*3/4+3)
	n, ok := decodeB64URL(dst, s)
	if ok != (werr == nil) || ok && string(dst[:n]) != string(want) {
		t.Fatalf("decodeB64URL(%q) = %x, %v; encoding/base64: %x, %v", s, dst[:n], ok, want, werr)
	}
}

// nonCanonicalLast changes the unused low bits of the last character.
func nonCanonicalLast(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i^1])
}

// The draw is the visitor's place in a pre-queue's lottery, secret until the
// opening: a ticket hides it from its holder (format 3), and only Verify reads
// it. A ticket that showed it in plain (format 2 before format 3) is accepted,
// Stale, and reissued hidden with the same place.
func TestTicketHidesTheDraw(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	for _, draw := range []float64{0.5, 0.001, 0.999999} {
		tk := room.Ticket{Room: "r1", Visitor: "hG3k2cQ_visitor-id0123", Seq: 7, Draw: draw}
		s, err := tickets.Issue(tk, testNow, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(s)
		if raw[0] != 3 || math.Float64frombits(binary.BigEndian.Uint64(raw[9:17])) == draw {
			t.Fatalf("draw %v: format %d, field %x: readable by the holder", draw, raw[0], raw[9:17])
		}
		if got, ok := PeekTicket(s); !ok || got.Draw != 0 {
			t.Fatalf("PeekTicket reads the draw: %+v", got)
		}
		v, err := tickets.Check(s, "r1", testNow)
		if err != nil || v.Draw != draw || v.Stale {
			t.Fatalf("Check = %+v, %v; want draw %v, not stale", v, err, draw)
		}
		// Another visitor of the same draw shows other bytes: no pad twice.
		other := tk
		other.Visitor += "x"
		s2, _ := tickets.Issue(other, testNow, time.Minute)
		raw2, _ := base64.RawURLEncoding.DecodeString(s2)
		if string(raw2[9:17]) == string(raw[9:17]) {
			t.Fatalf("two visitors' equal draws look alike: %x", raw[9:17])
		}
		// A plain one (format 2) is Stale and comes back hidden, same place.
		plain := signBody(testSecret, testIssuer, plainBody(tk, testNow, testNow.Add(time.Minute)))
		v, err = tickets.Check(plain, "r1", testNow)
		if err != nil || !v.Stale || v.Draw != draw {
			t.Fatalf("plain draw: %+v, %v; want stale, draw %v", v, err, draw)
		}
		again, err := tickets.Reissue(v)
		if err != nil || again != s {
			t.Fatalf("reissued %s, %v; want %s", again, err, s)
		}
	}
}
