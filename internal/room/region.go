package room

import "errors"

// RegionClaim is which region writes a room: a two-region deployment's
// failover gives every room to the new region (Engine.ClaimRegion), and the
// old region's engines are fenced out of it from then on (docs/ENGINE.md,
// "Regions").
type RegionClaim struct {
	// Region is the region that writes the room; "" when the room names none
	// (a deployment in one region).
	Region string `json:"region"`
	// Epoch counts the failovers that moved the room.
	Epoch int64 `json:"epoch"`
	// Previous is the region the room named before the claim ("" for none).
	Previous string `json:"previous"`
}

// ErrNoRegion is a claim asked of functions that write for no region (a
// deployment in one region).
var ErrNoRegion = errors.New("room: the functions write for no region")
