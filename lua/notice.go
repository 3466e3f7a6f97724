package lua

import (
	_ "embed" // the scripts below are //go:embed files
)

// The scripts of notices (docs/ENGINE.md, "Notices"): each takes the room's
// KEYS (lib.lua) and the notice keys after them, and opens with its contract.

//go:embed notice.lua
var notice string

//go:embed notices.lua
var notices string

//go:embed noticeack.lua
var noticeack string

var (
	// Notice registers a waiting visitor's notice, or withdraws it.
	Notice = withLib(roomLib, notice)
	// Notices takes the notices due to send, each for a lease.
	Notices = withLib(roomLib, notices)
	// NoticeAck records how a notice went.
	NoticeAck = withLib(roomLib, noticeack)
)
