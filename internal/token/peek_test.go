package token

import (
	"strings"
	"testing"
)

func TestPeek(t *testing.T) {
	s, err := NewEntries([]*EntryKey{mustEntryKey(t, testSeed)}, testIssuer).Issue(testEntryClaims())
	if err != nil {
		t.Fatal(err)
	}
	p, ok := Peek(s)
	if !ok || p.Room != "r1" || !p.Start.Equal(testNow) {
		t.Fatalf("Peek = %+v, %v; want room r1 start %v", p, ok, testNow)
	}
	for _, bad := range []string{"", "a.b.c", "x", strings.Repeat("a", MaxTokenLen+1)} {
		if _, ok := Peek(bad); ok {
			t.Errorf("Peek(%.20q) accepted", bad)
		}
	}
}
