package token

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/gate"
)

// The gate's keys are gate.DeriveKey of the entry seeds, current then
// previous, whichever way the keys were loaded; keys without seeds have none.
func TestGateKeys(t *testing.T) {
	want := func(seed []byte) gate.Key {
		k, err := gate.DeriveKey(seed)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	// Secrets Manager, before and after a rotation.
	const ticketARN, entryARN = "arn:t", "arn:e"
	sm := &memorySecrets{versions: map[string]map[string]string{
		ticketARN: {"AWSCURRENT": strings.Repeat("t", 64)},
		entryARN:  {"AWSCURRENT": string(testSeed)},
	}}
	keys, err := LoadSecretsManager(context.Background(), sm, ticketARN, entryARN)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := keys.GateKeys()
	if err != nil || ring.Current.ID != want(testSeed).ID || ring.HasPrevious() {
		t.Fatalf("before a rotation: %+v %v", ring, err)
	}
	sm.versions[entryARN]["AWSPREVIOUS"] = string(testPrevSeed)
	keys, err = LoadSecretsManager(context.Background(), sm, ticketARN, entryARN)
	if err != nil {
		t.Fatal(err)
	}
	ring, err = keys.GateKeys()
	if err != nil || ring.Current.ID != want(testSeed).ID || ring.Previous.ID != want(testPrevSeed).ID {
		t.Fatalf("after a rotation: %+v %v", ring, err)
	}

	// The local folder: entry.key, then entry.previous.key.
	dir := t.TempDir()
	local, err := LoadLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ring, err = local.GateKeys()
	if err != nil || ring.Current.ID != want(bytes.TrimSpace(mustSeedFile(t, dir, "entry.key"))).ID {
		t.Fatalf("local: %+v %v", ring, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "entry.previous.key"), testPrevSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	local, err = LoadLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ring2, err := local.GateKeys(); err != nil || ring2.Current.ID != ring.Current.ID || ring2.Previous.ID != want(testPrevSeed).ID {
		t.Fatalf("local after a rotation: %+v %v", ring2, err)
	}

	// In-memory keys have a ring; keys made by hand without seeds do not.
	mem, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.GateKeys(); err != nil {
		t.Errorf("NewKeys: %v", err)
	}
	if _, err := (&Keys{TicketSecret: mem.TicketSecret, Entry: mem.Entry}).GateKeys(); !errors.Is(err, gate.ErrKey) {
		t.Errorf("keys without seeds: %v, want gate.ErrKey", err)
	}
	// The gate key is not the entry key's material: another label.
	if string(ring.Current.Secret) == string(mustSeedFile(t, dir, "entry.key")) {
		t.Error("the gate key is the seed itself")
	}
}
