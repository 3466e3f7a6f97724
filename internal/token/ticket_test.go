package token

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vestibule-dev/vestibule/internal/room"
)

const ticketHeader = `{"alg":"HS256","typ":"vst-ticket+jwt"}`

// ticketClaimsFor is the payload Issue writes for tk at testNow with a minute to live.
func ticketClaimsFor(tk room.Ticket) map[string]any {
	m := map[string]any{
		"typ": "vestibule-ticket", "iss": testIssuer, "sub": tk.Visitor, "room": tk.Room,
		"seq": tk.Seq, "iat": testNow.Unix(), "exp": testNow.Add(time.Minute).Unix(),
	}
	if tk.Draw != 0 {
		m["draw"] = tk.Draw
	}
	return m
}

func TestTicketRoundTrip(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	for _, tk := range []room.Ticket{
		{Room: "r1", Visitor: "v1", Seq: 1},
		{Room: "demo", Visitor: "0f9a-visitor", Seq: 1<<52 + 3},    // sequences reach 2^52
		{Room: "demo", Visitor: "v", Seq: 1<<62 + 1},               // exact far beyond float64's 2^53
		{Room: "pre", Visitor: "v2", Seq: 7, Draw: 0.123456789012}, // pre-queue draw
	} {
		s, err := tickets.Issue(tk, testNow, time.Minute)
		if err != nil {
			t.Fatalf("Issue(%+v): %v", tk, err)
		}
		got, err := tickets.Verify(s, tk.Room, testNow.Add(30*time.Second))
		if err != nil {
			t.Fatalf("Verify(%+v): %v", tk, err)
		}
		if diff := cmp.Diff(tk, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
}

func TestTicketIssueRefuses(t *testing.T) {
	good := room.Ticket{Room: "r1", Visitor: "v1", Seq: 1}
	tickets := NewTickets(testSecret, testIssuer)
	for _, tc := range []struct {
		name    string
		tickets *Tickets
		tk      room.Ticket
		ttl     time.Duration
		want    error
	}{
		{"short secret", NewTickets([]byte("short"), testIssuer), good, time.Minute, ErrKeyMaterial},
		{"empty issuer", NewTickets(testSecret, ""), good, time.Minute, ErrInvalid},
		{"empty room", tickets, room.Ticket{Visitor: "v", Seq: 1}, time.Minute, ErrInvalid},
		{"empty visitor", tickets, room.Ticket{Room: "r", Seq: 1}, time.Minute, ErrInvalid},
		{"seq zero", tickets, room.Ticket{Room: "r", Visitor: "v"}, time.Minute, ErrInvalid},
		{"draw one", tickets, room.Ticket{Room: "r", Visitor: "v", Seq: 1, Draw: 1}, time.Minute, ErrInvalid},
		{"negative draw", tickets, room.Ticket{Room: "r", Visitor: "v", Seq: 1, Draw: -0.5}, time.Minute, ErrInvalid},
		{"ttl under a second", tickets, good, 500 * time.Millisecond, ErrInvalid},
		{"too long", tickets, room.Ticket{Room: "r", Visitor: strings.Repeat("v", MaxTokenLen), Seq: 1}, time.Minute, ErrInvalid},
		{"visitor over 128 bytes", tickets, room.Ticket{Room: "r", Visitor: strings.Repeat("v", 129), Seq: 1}, time.Minute, ErrInvalid},
		{"visitor with a space", tickets, room.Ticket{Room: "r", Visitor: "v 1", Seq: 1}, time.Minute, ErrInvalid},
		{"visitor with a dot", tickets, room.Ticket{Room: "r", Visitor: "v.1", Seq: 1}, time.Minute, ErrInvalid},
		{"room not a room id", tickets, room.Ticket{Room: "r/1", Visitor: "v", Seq: 1}, time.Minute, ErrInvalid},
		{"room over 64 bytes", tickets, room.Ticket{Room: strings.Repeat("r", 65), Visitor: "v", Seq: 1}, time.Minute, ErrInvalid},
		{"NaN draw", tickets, room.Ticket{Room: "r", Visitor: "v", Seq: 1, Draw: math.NaN()}, time.Minute, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.tickets.Issue(tc.tk, testNow, tc.ttl)
			if err == nil || !errors.Is(err, tc.want) {
				t.Fatalf("Issue = %q, %v; want %v", s, err, tc.want)
			}
		})
	}
}

// TestTicketVerifyFormat1 keeps every check of the JWT tickets issued before
// format 2, which are still accepted (as Stale) during the transition.
func TestTicketVerifyFormat1(t *testing.T) {
	tickets := NewTickets(testSecret, testIssuer)
	good := room.Ticket{Room: "r1", Visitor: "v1", Seq: 42}
	claims := ticketClaimsFor(good)
	signed := func(edit map[string]any) string {
		return forge(ticketHeader, claimsJSON(claims, edit), hs256(testSecret))
	}
	valid := signed(nil)
	entryKey := mustEntryKey(t, testSeed)
	entryTok, err := NewEntries([]*EntryKey{entryKey}, testIssuer).Issue(EntryClaims{
		Room: "r1", Visitor: "v1", Seq: 42, Audience: "https://shop.example",
		IssuedAt: testNow, Expiry: testNow.Add(time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(time.Minute)

	// The longest visitor id whose ticket still fits in MaxTokenLen, found by
	// growing it: the same ticket one byte longer must be refused unread.
	var fits, over string
	for n := 2000; ; n++ {
		s := signed(map[string]any{"sub": strings.Repeat("v", n)})
		if len(s) > MaxTokenLen {
			over = s
			break
		}
		fits = s
	}
	if len(fits) < MaxTokenLen-3 {
		t.Fatalf("the largest fitting ticket is %d bytes; the search is broken", len(fits))
	}

	for _, tc := range []struct {
		name  string
		token string
		room  string    // default r1
		at    time.Time // default testNow
		want  error
	}{
		{name: "valid", token: valid},
		{name: "other room", token: valid, room: "r2", want: ErrWrongRoom},

		// Algorithms.
		{name: "alg none", token: forge(`{"alg":"none","typ":"vst-ticket+jwt"}`, claimsJSON(claims, nil), noSig), want: ErrInvalid},
		{name: "alg None", token: forge(`{"alg":"None","typ":"vst-ticket+jwt"}`, claimsJSON(claims, nil), noSig), want: ErrInvalid},
		{name: "alg none with HS256 signature", token: forge(`{"alg":"none","typ":"vst-ticket+jwt"}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},
		{name: "ES256 ticket", token: forge(`{"alg":"ES256","typ":"vst-ticket+jwt"}`, claimsJSON(claims, nil), es256(entryKey.Private)), want: ErrInvalid},
		{name: "HS512 with the right secret", token: forge(`{"alg":"HS512","typ":"vst-ticket+jwt"}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},
		{name: "another secret", token: forge(ticketHeader, claimsJSON(claims, nil), hs256([]byte("another-secret-0123456789abcdef0123"))), want: ErrInvalid},
		{name: "entry token used as ticket", token: entryTok, want: ErrInvalid},

		// Tampering.
		{name: "tampered signature", token: flipSignature(valid), want: ErrInvalid},
		{name: "tampered payload", token: swapPayload(valid, claimsJSON(claims, map[string]any{"seq": 1})), want: ErrInvalid},
		{name: "tampered payload moves room", token: swapPayload(valid, claimsJSON(claims, map[string]any{"room": "r2"})), room: "r2", want: ErrInvalid},
		{name: "signature stripped", token: strings.TrimRight(valid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"), want: ErrInvalid},

		// Time, with Leeway on both sides.
		{name: "expired", token: valid, at: exp.Add(Leeway), want: ErrExpired},
		{name: "expired long ago", token: valid, at: exp.Add(time.Hour), want: ErrExpired},
		{name: "expired within leeway", token: valid, at: exp.Add(Leeway - time.Second)},
		{name: "issued in the future", token: valid, at: testNow.Add(-Leeway - time.Second), want: ErrNotYetValid},
		{name: "issued in the future within leeway", token: valid, at: testNow.Add(-Leeway)},
		{name: "exp not after iat", token: signed(map[string]any{"exp": testNow.Unix()}), want: ErrInvalid},
		{name: "exp in year 10000", token: signed(map[string]any{"exp": int64(253402300800)}), want: ErrInvalid},
		{name: "negative iat", token: signed(map[string]any{"iat": -1}), want: ErrInvalid},
		{name: "exp overflows float64", token: signed(map[string]any{"exp": rawJSON("1e400")}), want: ErrInvalid},

		// Size.
		{name: "largest that fits", token: fits, room: "r1"},
		{name: "oversized, validly signed", token: over, want: ErrInvalid},
		{name: "oversized garbage", token: strings.Repeat("a", 1<<20), want: ErrInvalid},

		// Duplicated and unknown claims.
		{name: "duplicate room, first checked", token: forge(ticketHeader, dupRoom(claims, "r1", "r2"), hs256(testSecret)), room: "r1", want: ErrInvalid},
		{name: "duplicate room, last checked", token: forge(ticketHeader, dupRoom(claims, "r1", "r2"), hs256(testSecret)), room: "r2", want: ErrInvalid},
		{name: "case-folded duplicate", token: forge(ticketHeader, addRaw(claims, `"ROOM":"r2"`), hs256(testSecret)), room: "r2", want: ErrInvalid},
		{name: "escaped duplicate", token: forge(ticketHeader, addRaw(claims, `"r\u006fom":"r2"`), hs256(testSecret)), room: "r2", want: ErrInvalid},
		{name: "Kelvin-sign alias", token: forge(ticketHeader, addRaw(claims, `"\u017fub":"x"`), hs256(testSecret)), want: ErrInvalid},
		{name: "unknown claim", token: signed(map[string]any{"admin": true}), want: ErrInvalid},
		{name: "entry claim jti", token: signed(map[string]any{"jti": "42"}), want: ErrInvalid},
		{name: "duplicate header alg", token: forge(`{"alg":"none","alg":"HS256","typ":"vst-ticket+jwt"}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},

		// Claim values.
		{name: "missing seq", token: signed(map[string]any{"seq": nil}), want: ErrInvalid},
		{name: "seq zero", token: signed(map[string]any{"seq": 0}), want: ErrInvalid},
		{name: "seq negative", token: signed(map[string]any{"seq": -5}), want: ErrInvalid},
		{name: "seq as float", token: signed(map[string]any{"seq": rawJSON("42.0")}), want: ErrInvalid},
		{name: "seq in exponent form", token: signed(map[string]any{"seq": rawJSON("4.2e1")}), want: ErrInvalid},
		{name: "seq as string", token: signed(map[string]any{"seq": "42"}), want: ErrInvalid},
		{name: "seq above int64", token: signed(map[string]any{"seq": rawJSON("9223372036854775808")}), want: ErrInvalid},
		{name: "null room", token: signed(map[string]any{"room": rawJSON("null")}), want: ErrInvalid},
		{name: "room as object", token: signed(map[string]any{"room": map[string]any{"a": 1}}), want: ErrInvalid},
		{name: "room as array", token: signed(map[string]any{"room": []string{"r1"}}), want: ErrInvalid},
		{name: "empty visitor", token: signed(map[string]any{"sub": ""}), want: ErrInvalid},
		{name: "draw one", token: signed(map[string]any{"draw": 1}), want: ErrInvalid},
		{name: "draw negative", token: signed(map[string]any{"draw": -0.1}), want: ErrInvalid},
		{name: "wrong typ claim", token: signed(map[string]any{"typ": "vestibule-entry"}), want: ErrInvalid},
		{name: "missing typ claim", token: signed(map[string]any{"typ": nil}), want: ErrInvalid},
		{name: "wrong issuer", token: signed(map[string]any{"iss": "someone-else"}), want: ErrInvalid},
		{name: "missing exp", token: signed(map[string]any{"exp": nil}), want: ErrInvalid},
		{name: "missing iat", token: signed(map[string]any{"iat": nil}), want: ErrInvalid},
		{name: "data after the payload", token: forge(ticketHeader, claimsJSON(claims, nil)+" {}", hs256(testSecret)), want: ErrInvalid},
		{name: "payload not an object", token: forge(ticketHeader, `["room"]`, hs256(testSecret)), want: ErrInvalid},

		// Header.
		{name: "header typ JWT", token: forge(`{"alg":"HS256","typ":"JWT"}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},
		{name: "header typ of entry tokens", token: forge(`{"alg":"HS256","typ":"vst-entry+jwt"}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},
		{name: "header without typ", token: forge(`{"alg":"HS256"}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},
		{name: "header crit", token: forge(`{"alg":"HS256","typ":"vst-ticket+jwt","crit":["exp"]}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},
		{name: "header kid", token: forge(`{"alg":"HS256","typ":"vst-ticket+jwt","kid":"x"}`, claimsJSON(claims, nil), hs256(testSecret)), want: ErrInvalid},

		// Encoding.
		{name: "empty", token: "", want: ErrInvalid},
		{name: "two segments", token: "a.b", want: ErrInvalid},
		{name: "four segments", token: valid + ".x", want: ErrInvalid},
		{name: "dots only", token: "..", want: ErrInvalid},
		{name: "padded header", token: padFirst(valid), want: ErrInvalid},
		{name: "standard base64 alphabet", token: strings.NewReplacer("-", "+", "_", "/").Replace(valid) + "+/", want: ErrInvalid},
		{name: "non-canonical signature bits", token: nonCanonical(valid), want: ErrInvalid},
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
			if got.Room != roomID {
				t.Fatalf("accepted a ticket of room %q for %q", got.Room, roomID)
			}
			if got.Seq != good.Seq || !got.Stale {
				t.Fatalf("seq = %d, stale %v; want %d, stale", got.Seq, got.Stale, good.Seq)
			}
		})
	}
}

func TestTicketVerifyShortSecret(t *testing.T) {
	// A misconfigured empty secret must not make every HMAC-of-nothing valid,
	// in either format.
	empty := NewTickets(nil, testIssuer)
	tk := room.Ticket{Room: "r1", Visitor: "v", Seq: 1}
	tok := forge(ticketHeader, claimsJSON(ticketClaimsFor(tk), nil), hs256(nil))
	_, err := empty.Verify(tok, "r1", testNow)
	checkErr(t, err, ErrInvalid)
	_, err = empty.Verify(signBody(nil, testIssuer, ticketBody(tk, testNow, testNow.Add(time.Minute))), "r1", testNow)
	checkErr(t, err, ErrInvalid)
	// A short previous secret is ignored, not trusted.
	withShort := NewTickets(testSecret, testIssuer, []byte("short"))
	_, err = withShort.Verify(signBody([]byte("short"), testIssuer, ticketBody(tk, testNow, testNow.Add(time.Minute))), "r1", testNow)
	checkErr(t, err, ErrInvalid)
}

// dupRoom writes the claims with room twice: first, then last.
func dupRoom(claims map[string]any, first, last string) string {
	with := claimsJSON(claims, map[string]any{"room": first})
	return strings.TrimSuffix(with, "}") + `,"room":"` + last + `"}`
}

// addRaw appends a raw `"name":value` member to the JSON object of claims.
func addRaw(claims map[string]any, member string) string {
	body := claimsJSON(claims, nil)
	if member == "" {
		return body
	}
	return strings.TrimSuffix(body, "}") + "," + member + "}"
}

// padFirst adds base64 padding to the header segment.
func padFirst(tok string) string {
	h, p, s := segments(tok)
	return h + "==" + "." + p + "." + s
}

// nonCanonical changes the unused low bits of the signature's last character:
// lenient decoders read the same bytes, strict ones refuse it.
func nonCanonical(tok string) string {
	h, p, s := segments(tok)
	last := s[len(s)-1]
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, last)
	return h + "." + p + "." + s[:len(s)-1] + string(alphabet[i^1])
}
