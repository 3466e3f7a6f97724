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
