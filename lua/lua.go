// Package lua holds Vestibule's Redis scripts, one per atomic operation of a
// room. Each script opens with its contract (KEYS, ARGV with units, the return
// shape); lib.lua holds what they share and is put in front of each.
package lua

import (
	_ "embed"
)

//go:embed lib.lua
var lib string

//go:embed enqueue.lua
var enqueue string

//go:embed poll.lua
var poll string

//go:embed tick.lua
var tick string

//go:embed consume.lua
var consume string

//go:embed complete.lua
var complete string

//go:embed leave.lua
var leave string

//go:embed config.lua
var config string

//go:embed stats.lua
var stats string

//go:embed ratelimit.lua
var ratelimit string

//go:embed head.lua
var head string

//go:embed drain.lua
var drain string

// The scripts, ready to load: lib.lua followed by the operation.
var (
	Enqueue  = lib + enqueue
	Poll     = lib + poll
	Tick     = lib + tick
	Consume  = lib + consume
	Complete = lib + complete
	Leave    = lib + leave
	Config   = lib + config
	Stats    = lib + stats
	Head     = lib + head
	Drain    = lib + drain
	// RateLimit takes its own KEYS (the room's config and one client's
	// limiter); lib.lua only lends it limit_client.
	RateLimit = lib + ratelimit
)
