package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// rooms schedule plans a change that the local stack's ticks apply at its
// time, audited as the schedule's; the list shows what is planned, and
// rooms unschedule cancels a change.
func TestScheduledChangeFromTheCommandLine(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	out, errs, code := vestibule(t, s, "rooms", "schedule", id, "--at", "+2s", "admitPerMinute=90")
	if code != 0 || !strings.Contains(out, "planned") {
		t.Fatalf("schedule: %d %q %q", code, out, errs)
	}
	// Awaited with a deadline: the stack's ticks apply it once its time comes.
	// Applying is three writes: the settings with the change's removal from
	// the schedule (one script, under the lease), then the audit entry. The
	// test waits for the audit entry, the last of them, and then holds all
	// three: a log that shows the change without it applied or gone from the
	// schedule fails here, and so does a change never audited.
	var log string
	audited := testkit.WaitFor(30*time.Second, func() bool {
		log, _, _ = vestibule(t, s, "rooms", "log", id)
		return strings.Contains(log, "schedule (planned by admin key)")
	})
	if !audited {
		t.Fatalf("the scheduled change was never audited as applied; log:\n%s", log)
	}
	if !strings.Contains(log, "admitPerMinute 60 → 90") {
		t.Fatalf("log:\n%s", log)
	}
	if out, _, _ := vestibule(t, s, "rooms", "schedule", id); !strings.Contains(out, "nothing scheduled") {
		t.Fatalf("the applied change is still in the schedule:\n%s", out)
	}
	_, m := admin(t, s, "GET", id, nil)
	if cfg, _ := m["config"].(map[string]any); cfg["admitPerMinute"] != float64(90) {
		t.Fatalf("the scheduled change was not applied: %v", m["config"])
	}
	out, _, code = vestibule(t, s, "rooms", "schedule", id, "--at", time.Now().Add(time.Hour).Format(time.RFC3339), "mode=closed")
	if code != 0 {
		t.Fatal(out)
	}
	change := strings.Fields(out)[2]
	if out, _, _ = vestibule(t, s, "rooms", "schedule", id); !strings.Contains(out, change) || !strings.Contains(out, `{"mode":"closed"}`) {
		t.Fatalf("list:\n%s", out)
	}
	if out, errs, code = vestibule(t, s, "rooms", "unschedule", id, change); code != 0 || !strings.Contains(out, "cancelled "+change) {
		t.Fatalf("unschedule: %d %q %q", code, out, errs)
	}
	if _, errs, code = vestibule(t, s, "rooms", "unschedule", id, change); code != 1 || !strings.Contains(errs, "was cancelled at") ||
		!strings.Contains(errs, "unknown_change") {
		t.Fatalf("unschedule again: %d %q", code, errs)
	}
	if _, errs, code = vestibule(t, s, "rooms", "schedule", id, "--at", "tomorrow", "mode=closed"); code != 2 {
		t.Fatalf("a bad --at: %d %q", code, errs)
	}
}

// report prints the sale's totals and, with --csv, a row a minute; help
// lists both new commands.
func TestReportCommand(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	// The stack's ticks record a point at the first tick of each minute.
	testkit.WaitFor(30*time.Second, func() bool {
		out, _, _ := vestibule(t, s, "report", id)
		return strings.Contains(out, "visitors")
	})
	out, errs, code := vestibule(t, s, "report", id)
	if code != 0 || !strings.Contains(out, "visitors") || !strings.Contains(out, "wait p50 / p95") {
		t.Fatalf("report: %d %q %q", code, out, errs)
	}
	out, _, code = vestibule(t, s, "report", id, "--csv")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || lines[0] != strings.Join(reportColumns, ",") || len(lines) < 2 {
		t.Fatalf("csv: %d\n%s", code, out)
	}
	out, _, _ = vestibule(t, s, "help")
	for _, want := range []string{"rooms schedule ROOM --at TIME", "rooms unschedule ROOM ID", "report ROOM [--csv]"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// A change that sets what the room already has (a resume planned while the
// room is open) still says what it sets, when planned and when applied.
func TestScheduledChangeOfTheSameValueIsAudited(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	out, errs, code := vestibule(t, s, "rooms", "schedule", id, "--at", "+2s", "mode=queue")
	if code != 0 {
		t.Fatalf("schedule: %d %q %q", code, out, errs)
	}
	change := strings.Fields(out)[2]
	out, _, _ = vestibule(t, s, "rooms", "log", id)
	if !strings.Contains(out, "planned "+change+": mode queue → queue") {
		t.Fatalf("the plan's entry does not say what it sets:\n%s", out)
	}
	if !testkit.WaitFor(30*time.Second, func() bool {
		out, _, _ = vestibule(t, s, "rooms", "log", id)
		return strings.Contains(out, "schedule (planned by admin key)")
	}) {
		t.Fatalf("the change was never applied:\n%s", out)
	}
	for l := range strings.Lines(out) {
		if strings.Contains(l, "schedule (planned by admin key)") && !strings.Contains(l, "mode queue → queue") {
			t.Errorf("the applied change's entry does not say what it set: %q", l)
		}
	}
}
