package token

import (
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestBookingSessionRoundTrip(t *testing.T) {
	b := NewBookingSessions(testSecret, testIssuer)
	s := BookingSession{Room: "concert", Seq: 1<<52 + 3, Ends: testNow.Add(10*time.Minute + 123*time.Millisecond)}
	tok, err := b.Issue(s, testNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Verify(tok, testNow.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Room != s.Room || got.Seq != s.Seq || !got.Ends.Equal(s.Ends) {
		t.Fatalf("round trip %+v, want %+v", got, s)
	}
	if got.ID() != "concert:4503599627370499" {
		t.Fatalf("ID %q", got.ID())
	}
}

func TestBookingSessionVerifyRefuses(t *testing.T) {
	b := NewBookingSessions(testSecret, testIssuer)
	s := BookingSession{Room: "concert", Seq: 7, Ends: testNow.Add(10 * time.Minute)}
	tok, err := b.Issue(s, testNow)
	if err != nil {
		t.Fatal(err)
	}
	ticket, err := NewTickets(testSecret, testIssuer).Issue(room.Ticket{Room: "concert", Visitor: "v", Seq: 7}, testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The same claims signed with the raw ticket secret: the key is derived, not shared.
	raw := forge(`{"alg":"HS256","typ":"vst-booking+jwt"}`, claimsJSON(map[string]any{
		"typ": "vestibule-booking-session", "iss": testIssuer, "room": "concert", "seq": 7,
		"end": s.Ends.UnixMilli(), "iat": testNow.Unix(),
	}, nil), hs256(testSecret))
	for _, tc := range []struct {
		name string
		tok  string
		b    *BookingSessions
		now  time.Time
		want error
	}{
		{"ended", tok, b, testNow.Add(10*time.Minute + Leeway), ErrExpired},
		{"issued in the future", tok, b, testNow.Add(-time.Minute), ErrNotYetValid},
		{"a ticket", ticket, b, testNow, ErrInvalid},
		{"as a ticket", tok, nil, testNow, ErrInvalid},
		{"ticket secret itself", raw, b, testNow, ErrInvalid},
		{"other issuer", tok, NewBookingSessions(testSecret, "other"), testNow, ErrInvalid},
		{"other secret", tok, NewBookingSessions([]byte(strings.Repeat("x", 40)), testIssuer), testNow, ErrInvalid},
		{"short secret", tok, NewBookingSessions([]byte("short"), testIssuer), testNow, ErrInvalid},
		{"garbage", "a.b.c", b, testNow, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.b == nil {
				_, err := NewTickets(testSecret, testIssuer).Verify(tc.tok, "concert", tc.now)
				checkErr(t, err, tc.want)
				return
			}
			_, err := tc.b.Verify(tc.tok, tc.now)
			checkErr(t, err, tc.want)
		})
	}
}

func TestBookingSessionIssueRefuses(t *testing.T) {
	b := NewBookingSessions(testSecret, testIssuer)
	for name, s := range map[string]BookingSession{
		"no room":   {Seq: 1, Ends: testNow.Add(time.Minute)},
		"seq zero":  {Room: "r", Ends: testNow.Add(time.Minute)},
		"ended":     {Room: "r", Seq: 1, Ends: testNow},
		"zero time": {Room: "r", Seq: 1},
	} {
		if _, err := b.Issue(s, testNow); err == nil {
			t.Errorf("%s: issued", name)
		}
	}
	if _, err := NewBookingSessions([]byte("short"), testIssuer).Issue(BookingSession{Room: "r", Seq: 1, Ends: testNow.Add(time.Minute)}, testNow); err == nil {
		t.Error("short secret: issued")
	}
}
