package token

import (
	"fmt"

	"github.com/vestibule-dev/vestibule/gate"
)

// GateKeys derives the edge gate's cookie keys from the entry-key seeds
// (docs/GATE.md, "Keys and rotation"): the current seed's key signs, the
// previous seed's, when there is one, only verifies. The gate needs no secret
// of its own and rotates with the entry key. Keys built without seeds (by hand,
// in a test) have no gate keys: an error wrapping gate.ErrKey.
func (k *Keys) GateKeys() (gate.KeyRing, error) {
	if k == nil || len(k.EntrySeeds) == 0 {
		return gate.KeyRing{}, fmt.Errorf("%w: no entry seeds to derive gate keys from", gate.ErrKey)
	}
	var ring gate.KeyRing
	cur, err := gate.DeriveKey(k.EntrySeeds[0])
	if err != nil {
		return gate.KeyRing{}, fmt.Errorf("token: current gate key: %w", err)
	}
	ring.Current = cur
	if len(k.EntrySeeds) > 1 {
		prev, err := gate.DeriveKey(k.EntrySeeds[1])
		if err != nil {
			return gate.KeyRing{}, fmt.Errorf("token: previous gate key: %w", err)
		}
		if prev.ID != cur.ID {
			ring.Previous = prev
		}
	}
	return ring, ring.Validate()
}
