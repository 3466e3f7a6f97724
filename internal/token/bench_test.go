package token

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// BenchmarkTicketVerify measures the hot path: every poll verifies a ticket.
func BenchmarkTicketVerify(b *testing.B) {
	tickets := NewTickets(testSecret, testIssuer)
	s, err := tickets.Issue(room.Ticket{Room: "demo", Visitor: "0f9a1c2d-visitor", Seq: 1<<52 + 1}, testNow, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tickets.Verify(s, "demo", testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEntryVerify measures consume's check of an entry token (ES256).
func BenchmarkEntryVerify(b *testing.B) {
	entries := NewEntries([]*EntryKey{mustEntryKey(b, testSeed)}, testIssuer)
	s, err := entries.Issue(testEntryClaims())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := entries.Verify(s, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTicketVerifyFormat1 is the JWT ticket issued before format 2, for
// comparison (and the cost of a first poll after the upgrade).
func BenchmarkTicketVerifyFormat1(b *testing.B) {
	tickets := NewTickets(testSecret, testIssuer)
	tk := room.Ticket{Room: "demo", Visitor: "0f9a1c2d-visitor", Seq: 1<<52 + 1}
	m := ticketClaimsFor(tk)
	m["exp"] = testNow.Add(time.Hour).Unix()
	s := forge(ticketHeader, claimsJSON(m, nil), hs256(testSecret))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tickets.Verify(s, "demo", testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEntryVerifyPastExpiry measures complete's check of an entry token
// after its claim window, the usual case (a session outlasts the window).
func BenchmarkEntryVerifyPastExpiry(b *testing.B) {
	entries := NewEntries([]*EntryKey{mustEntryKey(b, testSeed)}, testIssuer)
	c := testEntryClaims()
	s, err := entries.Issue(c)
	if err != nil {
		b.Fatal(err)
	}
	late := c.Expiry.Add(10 * time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := entries.VerifyPastExpiry(s, late); err != nil {
			b.Fatal(err)
		}
	}
}
