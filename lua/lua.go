// Package lua holds Vestibule's Redis scripts, one per atomic operation of a
// room. Each script opens with its contract (KEYS, ARGV with units, the return
// shape); lib.lua holds what they share and is put in front of each.
package lua

import (
	_ "embed"
	"regexp"
	"strings"
)

//go:embed lib.lua
var lib string

// pace.lua is the pace that follows the origin: lib.lua's to the scripts, put
// after it (it builds on lib.lua's definitions; lib.lua's pace reads what it stores).
//
//go:embed pace.lua
var paceLib string

// roomLib is what the room scripts share: lib.lua, then pace.lua.
var roomLib = lib + paceLib

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

//go:embed renew.lua
var renew string

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

//go:embed arrive.lua
var arrive string

//go:embed arrivals.lua
var arrivals string

//go:embed arrtrim.lua
var arrtrim string

//go:embed merge.lua
var merge string

//go:embed arrdrop.lua
var arrdrop string

//go:embed fence.lua
var fence string

//go:embed arrfence.lua
var arrfence string

//go:embed bury.lua
var bury string

//go:embed spoll.lua
var spoll string

//go:embed ssweep.lua
var ssweep string

//go:embed sevict.lua
var sevict string

//go:embed sleave.lua
var sleave string

//go:embed drop.lua
var drop string

//go:embed load.lua
var load string

//go:embed schedput.lua
var schedput string

//go:embed schedfree.lua
var schedfree string

//go:embed schedrefuse.lua
var schedrefuse string

//go:embed claim.lua
var claim string

// The scripts, ready to load: what each uses of roomLib, then the operation.
var (
	Enqueue  = withLib(roomLib, enqueue)
	Poll     = withLib(roomLib, poll)
	Tick     = withLib(roomLib, tick)
	Consume  = withLib(roomLib, consume)
	Complete = withLib(roomLib, complete)
	Renew    = withLib(roomLib, renew)
	Leave    = withLib(roomLib, leave)
	Config   = withLib(roomLib, config)
	Stats    = withLib(roomLib, stats)
	Head     = withLib(roomLib, head)
	Drain    = withLib(roomLib, drain)
	// RateLimit takes its own KEYS (the room's config and one client's
	// limiter); lib.lua only lends it limit_client.
	RateLimit = withLib(roomLib, ratelimit)
	// The arrival shards' scripts take their own KEYS (docs/ENGINE.md, "Arrival
	// shards"); merge runs on the room's shard with the room's KEYS.
	Arrive   = withLib(roomLib, arrive)
	Arrivals = withLib(roomLib, arrivals)
	ArrTrim  = withLib(roomLib, arrtrim)
	Merge    = withLib(roomLib, merge)
	ArrDrop  = withLib(roomLib, arrdrop)
	// A change of settings fences the room's arrival shards first: fence
	// runs on the room's shard, arrfence on each arrival shard.
	Fence    = withLib(roomLib, fence)
	ArrFence = withLib(roomLib, arrfence)
	// A room deleted keeps a tombstone (drop); bury raises it before the
	// delete and when the durable store gives one back.
	Bury = withLib(roomLib, bury)
	Drop = withLib(roomLib, drop)
	// The heartbeats of a spread room's far visitors live on their arrival
	// shards (docs/ENGINE.md, "Heartbeats on the arrival shards"): a poll
	// there, a shard's sweep, the room's eviction of what it found, and the
	// mark a leave leaves there.
	SPoll  = withLib(roomLib, spoll)
	SSweep = withLib(roomLib, ssweep)
	SEvict = withLib(roomLib, sevict)
	SLeave = withLib(roomLib, sleave)
	// Load records the origin's load, which the tick's pace follows.
	Load = withLib(roomLib, load)
	// A room's schedule takes its own KEYS (the schedule, its version, a
	// change's lease): schedput plans a change within the cap, schedfree
	// gives a lease back (removing its change when asked) only to its holder;
	// config applies a change under its lease, and schedrefuse keeps one
	// refused under it.
	SchedPut    = withLib(roomLib, schedput)
	SchedFree   = withLib(roomLib, schedfree)
	SchedRefuse = withLib(roomLib, schedrefuse)

	// Claim gives a room to the region of the engine that runs it (a
	// failover's fence: InRegion, docs/ENGINE.md "Regions").
	Claim = withLib(roomLib, claim)
)

// regionLine is lib.lua's definition of REGION, which InRegion rewrites.
const regionLine = "local REGION = ''\n"

// validRegion is what a region's name may be: AWS's (us-east-1) and the
// names tests give, never a quote that would end the Lua string.
var validRegion = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// InRegion returns script src as the engine of region runs it: REGION is the
// region's name, so the script refuses a room that a failover gave to another
// region (lib.lua fence_region). A script that does not use REGION, or an
// empty region, comes back unchanged; a name that is no region panics, as it
// is the program's configuration (validated first by config.Load).
func InRegion(src, region string) string {
	if region == "" {
		return src
	}
	if !validRegion.MatchString(region) {
		panic("lua: not a region name: " + region)
	}
	return strings.Replace(src, regionLine, "local REGION = '"+region+"'\n", 1)
}

// ValidRegion reports whether name can be a region's name for InRegion.
func ValidRegion(name string) bool { return validRegion.MatchString(name) }

// libDef is one top-level definition of lib.lua: the lines from the comment
// above it to the next definition, and the names it defines.
type libDef struct {
	text  string
	names []string
}

var (
	defFunc  = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)`)
	defNames = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_, ]*?)\s*=`)
	ident    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// libDefs splits a lib at its top-level `local` lines; the header comment
// goes with the first definition.
func libDefs(src string) []libDef {
	var defs []libDef
	var cur, pending []string
	var names []string
	flush := func() {
		if len(cur) > 0 {
			defs = append(defs, libDef{text: strings.Join(cur, "\n") + "\n", names: names})
		}
	}
	for _, l := range strings.Split(strings.TrimRight(src, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "local "):
			flush()
			cur, pending = append(pending, l), nil
			if m := defFunc.FindStringSubmatch(l); m != nil {
				names = []string{m[1]}
			} else if m := defNames.FindStringSubmatch(l); m != nil {
				names = strings.Split(strings.ReplaceAll(m[1], " ", ""), ",")
			} else {
				panic("lua: a lib line not understood: " + l)
			}
		case strings.HasPrefix(l, "--") || strings.TrimSpace(l) == "":
			// A comment or blank line belongs to the definition below it.
			pending = append(pending, l)
		default:
			cur, pending = append(append(cur, pending...), l), nil
		}
	}
	cur = append(cur, pending...)
	flush()
	return defs
}

// uses is the set of identifiers in code, whole-line comments left out (a
// comment after code counts: at worst a definition is kept for nothing).
func uses(code string) map[string]bool {
	u := map[string]bool{}
	for _, l := range strings.Split(code, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		for _, id := range ident.FindAllString(l, -1) {
			u[id] = true
		}
	}
	return u
}

// withLib puts in front of op the definitions of lib.lua it uses, directly or
// through another definition, in lib.lua's order. Every definition is a
// closure or table Redis builds again on each call of a script (scripts keep
// no state between calls), so a script pays only for what it uses.
func withLib(lib, op string) string {
	defs := libDefs(lib)
	keep := make([]bool, len(defs))
	u := uses(op)
	for changed := true; changed; {
		changed = false
		for i, d := range defs {
			if keep[i] {
				continue
			}
			for _, n := range d.names {
				if u[n] {
					keep[i], changed = true, true
					for id := range uses(d.text) {
						u[id] = true
					}
					break
				}
			}
		}
	}
	var b strings.Builder
	for i, d := range defs {
		if keep[i] {
			b.WriteString(d.text)
		}
	}
	return b.String() + op
}
