package gate

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// The derivations are pinned: changing them would change every deployed kid
// and key (values computed independently with Python's hmac and hashlib).
func TestKeyDerivationGolden(t *testing.T) {
	k, err := DeriveKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	if k.ID != "sV7q34tA" || hex.EncodeToString(k.Secret) != "3331b6494ff3d65915b853fa4f7faf9f7e05a9668bf1310f68e0c627a1ad95f4" {
		t.Errorf("DeriveKey = %s %x", k.ID, k.Secret)
	}
	z, err := NewKey(make([]byte, KeySize))
	if err != nil || z.ID != "Ck2fNIkJ" {
		t.Errorf("NewKey(zeros) = %s, %v", z.ID, err)
	}
}

func TestKeys(t *testing.T) {
	if _, err := DeriveKey(make([]byte, MinSeedLen-1)); !errors.Is(err, ErrKey) {
		t.Errorf("short seed: %v", err)
	}
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := NewKey(make([]byte, n)); !errors.Is(err, ErrKey) {
			t.Errorf("NewKey(%d bytes): %v", n, err)
		}
	}
	secret := bytes.Repeat([]byte{7}, KeySize)
	k, _ := NewKey(secret)
	secret[0] = 8
	if k.Secret[0] != 7 {
		t.Error("NewKey keeps the caller's slice")
	}
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKey()
	if a.ID == b.ID || bytes.Equal(a.Secret, b.Secret) || a.valid() != nil {
		t.Errorf("GenerateKey: %s %s", a.ID, b.ID)
	}
}

func TestKeyRing(t *testing.T) {
	k1, k2 := testKey(t, "1"), testKey(t, "2")
	for _, tc := range []struct {
		name string
		r    KeyRing
		ok   bool
	}{
		{"current only", KeyRing{Current: k2}, true},
		{"current and previous", KeyRing{Current: k2, Previous: k1}, true},
		{"empty", KeyRing{}, false},
		{"previous only", KeyRing{Previous: k1}, false},
		{"same kid twice", KeyRing{Current: k2, Previous: Key{ID: k2.ID, Secret: k1.Secret}}, false},
		{"previous without secret", KeyRing{Current: k2, Previous: Key{ID: "x"}}, false},
		{"bad kid", KeyRing{Current: Key{ID: "a.b", Secret: k2.Secret}}, false},
		{"short secret", KeyRing{Current: Key{ID: "a", Secret: k2.Secret[:16]}}, false},
	} {
		if err := tc.r.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
	}
	r := KeyRing{Current: k2, Previous: k1}
	for id, want := range map[string]string{k2.ID: k2.ID, k1.ID: k1.ID, "": "", "nobody": ""} {
		got, ok := r.Lookup(id)
		if got.ID != want || ok != (want != "") {
			t.Errorf("Lookup(%q) = %q, %v", id, got.ID, ok)
		}
	}
	if _, ok := (KeyRing{Current: k2}).Lookup(""); ok {
		t.Error("an empty kid found the zero previous key")
	}
}

func TestKVSEntries(t *testing.T) {
	k1, k2 := testKey(t, "1"), testKey(t, "2")
	r := KeyRing{Current: k2, Previous: k1}
	e := r.KVSEntries()
	if len(e) != 3 || e["current"] != k2.ID || e["key:"+k2.ID] != hex.EncodeToString(k2.Secret) || e["key:"+k1.ID] != hex.EncodeToString(k1.Secret) {
		t.Fatalf("KVSEntries = %v", e)
	}
	if got := (KeyRing{Current: k2}).KVSEntries(); len(got) != 2 {
		t.Errorf("KVSEntries without previous = %v", got)
	}
	back, err := KeyRingFromKVS(e)
	if err != nil || back.Current.ID != k2.ID || back.Previous.ID != k1.ID || !bytes.Equal(back.Current.Secret, k2.Secret) {
		t.Fatalf("KeyRingFromKVS = %+v, %v", back, err)
	}
	// Other entries of a shared store are ignored.
	e["theme"] = "dark"
	if _, err := KeyRingFromKVS(e); err != nil {
		t.Errorf("with an unrelated entry: %v", err)
	}
	k0 := testKey(t, "0")
	bad := func(edit func(m map[string]string)) map[string]string {
		m := r.KVSEntries()
		edit(m)
		return m
	}
	for name, m := range map[string]map[string]string{
		"no current":      bad(func(m map[string]string) { delete(m, "current") }),
		"current missing": bad(func(m map[string]string) { m["current"] = "nobody" }),
		"three keys":      bad(func(m map[string]string) { m["key:"+k0.ID] = hex.EncodeToString(k0.Secret) }),
		"mislabelled":     bad(func(m map[string]string) { m["key:"+k2.ID] = hex.EncodeToString(k0.Secret) }),
		"upper-case hex":  bad(func(m map[string]string) { m["key:"+k2.ID] = strings.ToUpper(m["key:"+k2.ID]) }),
		"not hex":         bad(func(m map[string]string) { m["key:"+k2.ID] = strings.Repeat("zz", KeySize) }),
		"short":           bad(func(m map[string]string) { m["key:"+k2.ID] = m["key:"+k2.ID][:32] }),
	} {
		if _, err := KeyRingFromKVS(m); !errors.Is(err, ErrKey) {
			t.Errorf("%s: KeyRingFromKVS = %v", name, err)
		}
	}
}
