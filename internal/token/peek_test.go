package token

import (
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestPeek(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tk := NewTickets([]byte(strings.Repeat("k", 32)), "vestibule")
	s, err := tk.Issue(room.Ticket{Room: "r1", Visitor: "v", Seq: 7}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := Peek(s)
	if !ok || p.Room != "r1" || !p.Start.Equal(now) {
		t.Fatalf("Peek = %+v, %v; want room r1 start %v", p, ok, now)
	}
	for _, bad := range []string{"", "a.b.c", "x", strings.Repeat("a", MaxTokenLen+1)} {
		if _, ok := Peek(bad); ok {
			t.Errorf("Peek(%.20q) accepted", bad)
		}
	}
}
