package lua

import (
	_ "embed" // the scripts below are //go:embed files
)

// The scripts of invitations and support: each takes the room's
// KEYS (lib.lua) and opens with its contract.

//go:embed invite.lua
var invite string

//go:embed bypass.lua
var bypass string

//go:embed visitor.lua
var visitor string

//go:embed restore.lua
var restore string

var (
	// Invite takes (or gives back) one use of an invitation, refusing a revoked one.
	Invite = withLib(roomLib, invite)
	// Bypass is a bypass invitation's join, ahead of the line.
	Bypass = withLib(roomLib, bypass)
	// Visitor reads where one visitor stands, for support.
	Visitor = withLib(roomLib, visitor)
	// Restore gives a visitor back a lost place.
	Restore = withLib(roomLib, restore)
)
