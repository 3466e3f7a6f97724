package lua

import (
	"strings"
	"testing"
)

// Each script carries every definition of its lib (lib.lua, booking_lib.lua)
// it uses, directly or through another, in the lib's order, and no others.
func TestWithLibKeepsWhatIsUsed(t *testing.T) {
	for _, set := range []struct {
		lib     string
		scripts map[string]string
	}{
		{lib, map[string]string{"enqueue": enqueue, "poll": poll, "tick": tick, "consume": consume, "complete": complete, "renew": renew,
			"leave": leave, "config": config, "stats": stats, "head": head, "drain": drain, "ratelimit": ratelimit}},
		{bookingLib, map[string]string{"define": bookingDefine, "hold": bookingHold, "confirm": bookingConfirm,
			"release": bookingRelease, "cancel": bookingCancel, "sweep": bookingSweep, "view": bookingView,
			"room": bookingRoom, "outbox": bookingOutbox, "ack": bookingAck, "end": bookingEnd,
			"sessions": bookingSessions, "extend": bookingExtend, "orders": bookingOrders, "rebuild": bookingRebuild}},
	} {
		checkWithLib(t, set.lib, set.scripts)
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

// checkWithLib: each script of scripts carries every definition of lib it
// uses, in lib's order, and no others.
func checkWithLib(t *testing.T, lib string, scripts map[string]string) {
	t.Helper()
	defs := libDefs(lib)
	if got := strings.Join(func() []string {
		var s []string
		for _, d := range defs {
			s = append(s, d.text)
		}
		return s
	}(), ""); got != strings.TrimRight(lib, "\n")+"\n" {
		t.Fatalf("the lib's definitions do not add up to the lib")
	}
	for name, op := range scripts {
		full := withLib(lib, op)
		if !strings.HasSuffix(full, op) {
			t.Fatalf("%s: the operation is not at the end", name)
		}
		part := strings.TrimSuffix(full, op)
		// Kept definitions appear in the lib's order.
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
			t.Fatalf("%s: the lib part is not the lib's definitions in order: %.80q left", name, rest)
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
}
