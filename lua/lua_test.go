package lua

import (
	"strings"
	"testing"
)

// Each script carries every lib.lua definition it uses, directly or through
// another, in lib.lua's order, and no others.
func TestWithLibKeepsWhatIsUsed(t *testing.T) {
	defs := libDefs(lib)
	if got := strings.Join(func() []string {
		var s []string
		for _, d := range defs {
			s = append(s, d.text)
		}
		return s
	}(), ""); got != strings.TrimRight(lib, "\n")+"\n" {
		t.Fatalf("lib.lua's definitions do not add up to lib.lua")
	}
	scripts := map[string]string{"enqueue": enqueue, "poll": poll, "tick": tick, "consume": consume, "complete": complete,
		"leave": leave, "config": config, "stats": stats, "head": head, "drain": drain, "ratelimit": ratelimit}
	for name, op := range scripts {
		full := withLib(op)
		if !strings.HasSuffix(full, op) {
			t.Fatalf("%s: the operation is not at the end", name)
		}
		part := strings.TrimSuffix(full, op)
		// Kept definitions appear in lib.lua's order.
		rest := part
		kept := map[string]bool{}
		for _, d := range defs {
			if strings.HasPrefix(rest, d.text) {
				rest = rest[len(d.text):]
				for _, n := range d.names {
					kept[n] = true
				}
			}
		}
		if rest != "" {
			t.Fatalf("%s: the lib part is not lib.lua's definitions in order: %.80q left", name, rest)
		}
		// Whatever the kept code and the operation name is defined.
		u := uses(part + op)
		for _, d := range defs {
			for _, n := range d.names {
				if u[n] && !kept[n] {
					t.Errorf("%s uses %s but its definition was left out", name, n)
				}
				if kept[n] && !u[n] {
					t.Errorf("%s carries %s, which nothing uses", name, n)
				}
			}
		}
	}
	// What the poll, the hottest script, leaves out.
	for _, n := range []string{"limit_client", "admitted_last_minute", "count_admissions", "free_slots"} {
		if strings.Contains(Poll, "local function "+n+"(") {
			t.Errorf("poll carries %s", n)
		}
	}
	if !strings.Contains(RateLimit, "local function limit_client(") || strings.Contains(RateLimit, "local function reply(") {
		t.Errorf("ratelimit: wrong definitions kept")
	}
}
