package token

import "testing"

func TestOriginCredential(t *testing.T) {
	o := NewOrigins([]byte("0123456789abcdef0123456789abcdef"))
	a, b := o.Credential("room-a"), o.Credential("room-b")
	if a == b || len(a) != 43 {
		t.Fatalf("credentials of two rooms: %q %q", a, b)
	}
	if a != o.Credential("room-a") {
		t.Fatal("a credential must be stable")
	}
	if !o.Check("room-a", a) {
		t.Fatal("the room's own credential refused")
	}
	for _, bad := range []string{"", b, a[:42], a + "x", "Bearer " + a} {
		if o.Check("room-a", bad) {
			t.Errorf("Check accepted %q", bad)
		}
	}
	other := NewOrigins([]byte("fedcba9876543210fedcba9876543210"))
	if other.Check("room-a", a) {
		t.Fatal("a credential under another secret accepted")
	}
	if NewOrigins(nil).Check("room-a", NewOrigins(nil).Credential("room-a")) {
		t.Fatal("an empty secret must refuse everything")
	}
	// The credential is not the ticket secret's other uses: a ticket signature
	// over the same bytes differs (the label separates them).
	if a == NewOrigins([]byte("0123456789abcdef0123456789abcdef")).Credential("room-a\x00") {
		t.Fatal("room ids must not be extendable")
	}
}
