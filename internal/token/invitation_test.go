package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

func testInvitation() room.Invitation {
	return room.Invitation{ID: "presale-1", Room: "r1", Uses: 3, Bypass: true,
		IssuedAt: testNow, ExpiresAt: testNow.Add(48 * time.Hour)}
}

// mintBySite signs an invitation as a booking site would, with a plain JWT
// library's steps and the room's origin credential as the HS256 key.
func mintBySite(credential, header, payload string) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, []byte(credential))
	m.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(m.Sum(nil))
}

func TestInvitationRoundTrip(t *testing.T) {
	inv := NewInvitations(NewOrigins(testSecret))
	want := testInvitation()
	s, err := inv.Issue(want)
	checkErr(t, err, nil)
	got, err := inv.Verify(s, "r1", testNow.Add(time.Hour))
	checkErr(t, err, nil)
	if got != want {
		t.Fatalf("verified %+v; want %+v", got, want)
	}
}

// TestInvitationMintedBySite: a site holding the room's origin credential
// mints an invitation without Vestibule, and it verifies.
func TestInvitationMintedBySite(t *testing.T) {
	o := NewOrigins(testSecret)
	s := mintBySite(o.Credential("r1"), `{"alg":"HS256","typ":"vst-invite+jwt"}`,
		`{"typ":"vestibule-invitation","room":"r1","jti":"site-42","uses":1,"iat":1772366400,"exp":1772452800}`)
	got, err := NewInvitations(o).Verify(s, "r1", testNow)
	checkErr(t, err, nil)
	if got.ID != "site-42" || got.Uses != 1 || got.Bypass {
		t.Fatalf("verified %+v", got)
	}
}

func TestInvitationVerifyRefuses(t *testing.T) {
	o := NewOrigins(testSecret)
	inv := NewInvitations(o)
	good, err := inv.Issue(testInvitation())
	checkErr(t, err, nil)
	other := NewInvitations(NewOrigins([]byte("another-ticket-secret-0123456789abcdef")))
	forged, err := other.Issue(testInvitation())
	checkErr(t, err, nil)
	ticket, err := NewTickets(testSecret, testIssuer).Issue(room.Ticket{Room: "r1", Visitor: "v", Seq: 7}, testNow, time.Hour)
	checkErr(t, err, nil)
	session, err := NewBookingSessions(testSecret, testIssuer).Issue(BookingSession{Room: "r1", Seq: 7, Ends: testNow.Add(time.Hour)}, testNow)
	checkErr(t, err, nil)
	cred := o.Credential("r1")
	hdr := `{"alg":"HS256","typ":"vst-invite+jwt"}`
	for _, tc := range []struct {
		name, token, room string
		now               time.Time
		want              error
	}{
		{"another room", good, "r2", testNow, ErrInvalid}, // another room's key: the signature fails
		{"another deployment's key", forged, "r1", testNow, ErrInvalid},
		{"expired", good, "r1", testNow.Add(49 * time.Hour), ErrExpired},
		{"issued in the future", good, "r1", testNow.Add(-time.Hour), ErrNotYetValid},
		{"tampered", good[:len(good)-2] + "AA", "r1", testNow, ErrInvalid},
		{"a ticket", ticket, "r1", testNow, ErrInvalid},
		{"a booking session", session, "r1", testNow, ErrInvalid},
		{"room claim of another room", mintBySite(cred, hdr,
			`{"typ":"vestibule-invitation","room":"r2","jti":"x","uses":1,"iat":1772366400,"exp":1772452800}`), "r1", testNow, ErrWrongRoom},
		{"unknown claim", mintBySite(cred, hdr,
			`{"typ":"vestibule-invitation","room":"r1","jti":"x","uses":1,"iat":1772366400,"exp":1772452800,"admin":true}`), "r1", testNow, ErrInvalid},
		{"no uses", mintBySite(cred, hdr,
			`{"typ":"vestibule-invitation","room":"r1","jti":"x","uses":0,"iat":1772366400,"exp":1772452800}`), "r1", testNow, ErrInvalid},
		{"bad id", mintBySite(cred, hdr,
			`{"typ":"vestibule-invitation","room":"r1","jti":"a b","uses":1,"iat":1772366400,"exp":1772452800}`), "r1", testNow, ErrInvalid},
		{"life over a year", mintBySite(cred, hdr,
			`{"typ":"vestibule-invitation","room":"r1","jti":"x","uses":1,"iat":1772366400,"exp":1872452800}`), "r1", testNow, ErrInvalid},
		{"header typ of a JWT", mintBySite(cred, `{"alg":"HS256","typ":"JWT"}`,
			`{"typ":"vestibule-invitation","room":"r1","jti":"x","uses":1,"iat":1772366400,"exp":1772452800}`), "r1", testNow, ErrInvalid},
		{"duplicate claim", mintBySite(cred, hdr,
			`{"typ":"vestibule-invitation","room":"r1","jti":"x","uses":1,"uses":9,"iat":1772366400,"exp":1772452800}`), "r1", testNow, ErrInvalid},
		{"garbage", strings.Repeat("a", 50), "r1", testNow, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inv.Verify(tc.token, tc.room, tc.now)
			checkErr(t, err, tc.want)
		})
	}
	if _, err := NewInvitations(nil).Verify(good, "r1", testNow); err == nil {
		t.Fatal("no key verified an invitation")
	}
}

func TestInvitationIssueRefuses(t *testing.T) {
	inv := NewInvitations(NewOrigins(testSecret))
	for name, change := range map[string]func(*room.Invitation){
		"no id":          func(i *room.Invitation) { i.ID = "" },
		"uses over max":  func(i *room.Invitation) { i.Uses = room.MaxInvitationUses + 1 },
		"expired at iat": func(i *room.Invitation) { i.ExpiresAt = i.IssuedAt },
		"bad room":       func(i *room.Invitation) { i.Room = "a{b}" },
	} {
		in := testInvitation()
		change(&in)
		if _, err := inv.Issue(in); err == nil {
			t.Errorf("%s: issued", name)
		}
	}
	if _, err := NewInvitations(NewOrigins([]byte("short"))).Issue(testInvitation()); err == nil {
		t.Error("issued under a short secret")
	}
}
