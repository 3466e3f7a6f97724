package gate

import (
	"crypto/sha256"
	"testing"
)

// testKey is a fixed key, so failures reproduce.
func testKey(t testing.TB, label string) Key {
	t.Helper()
	sum := sha256.Sum256([]byte("gate test key " + label))
	k, err := NewKey(sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}
