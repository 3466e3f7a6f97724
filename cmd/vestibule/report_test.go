package main

import (
	"encoding/csv"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// A burst that joins and is admitted within one minute is the report's peak
// waiting: the queue is counted at every tick of the minute, not at its
// first tick alone. The stack's clock stands still inside a minute while
// nine visitors wait in a paused room and are admitted, then moves to the
// next minute, whose first tick keeps the minute's peak.
func TestReportPeakOfABurstWithinAMinute(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Minute).Add(time.Minute + 5*time.Second)
	clock := testkit.FixedClock(start)
	s := stackAt(t, clock)
	id := newRoom(t, s, map[string]any{"mode": "paused", "maxActive": 20, "admitPerMinute": 600})
	recorded := func(n string) {
		t.Helper()
		if !testkit.WaitFor(30*time.Second, func() bool {
			out, _, _ := vestibule(t, s, "report", id)
			return strings.Contains(out, "("+n+" minutes recorded)")
		}) {
			t.Fatalf("no tick recorded minute %s", n)
		}
	}
	recorded("1") // the minute's first tick ran: its point counts nobody
	enqueue(t, s, id, 9)
	if code, m := admin(t, s, "PUT", id, map[string]any{"mode": "queue"}); code != 200 {
		t.Fatalf("resume: %d %v", code, m)
	}
	clock.Advance(20 * time.Second) // the bucket fills; still the same minute
	if !testkit.WaitFor(30*time.Second, func() bool {
		_, m := admin(t, s, "GET", id, nil)
		st, _ := m["stats"].(map[string]any)
		return st["admitted"] == float64(9) && st["waiting"] == float64(0)
	}) {
		t.Fatal("the nine were not admitted")
	}
	clock.Advance(50 * time.Second) // the next minute, the admissions within its last 60 s
	recorded("2")
	out, _, _ := vestibule(t, s, "report", id)
	if !regexp.MustCompile(`peak waiting\s+9\s`).MatchString(out) {
		t.Errorf("the report's peak waiting, want 9:\n%s", out)
	}
	out, _, _ = vestibule(t, s, "report", id, "--csv")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	if first := rows[1]; first[col["waiting"]] != "0" || first[col["peakWaiting"]] != "9" || first[col["admittedPerMinute"]] != "9" {
		t.Errorf("the burst's minute: waiting %s, peak %s, admitted %s; want 0, 9, 9", first[col["waiting"]],
			first[col["peakWaiting"]], first[col["admittedPerMinute"]])
	}
}
