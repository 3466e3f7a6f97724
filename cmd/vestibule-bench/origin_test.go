package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The origin rows at a fifth of the table's rate: eleven rows, each named for
// the origin and its slowdown or health, each with a goal but the share of
// the site's capacity admitted (a figure); the steered room's pace gets under the slowed site's
// capacity in time and loses no grant, and the fixed room's never does.
func TestOriginRows(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two sales of the bench's origin rows; make test runs them")
	}
	sc := originScenario{Rate: 120, Visitors: 800, Healthy: 180, Slow: 200 * time.Second, Recover: 320 * time.Second}
	rows, err := originRows(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 11 {
		t.Fatalf("%d rows, want 11", len(rows))
	}
	for i, r := range rows {
		if !strings.Contains(r.Name, "origin") || !(strings.Contains(r.Name, "slow") || strings.Contains(r.Name, "health")) {
			t.Errorf("row %q: name without origin and slow or health", r.Name)
		}
		// Rows 2 (admissions after the cut) and 3, 4 (ETAs over the whole sale,
		// which spans the slowdown) are figures; the others carry goals.
		if figure := i == 2 || i == 3 || i == 4; (r.Met == nil) != figure {
			t.Errorf("row %q: goal %v, want one only when it is not a figure", r.Name, r.Met != nil)
		}
	}
	if under, never := rows[0].Value, rows[0].Baseline; under > 30 || never != (sc.Recover-sc.Slow).Seconds() {
		t.Errorf("pace under the slowed capacity after %.0f s (fixed room: %.0f s), want ≤ 30 s and the whole spell", under, never)
	}
	if rows[1].Baseline <= rows[1].Value {
		t.Errorf("site's p95 ÷ target %.2f steered, %.2f fixed: want the fixed room's worse", rows[1].Value, rows[1].Baseline)
	}
	if used, fixed := rows[2].Value, rows[2].Baseline; used > 1 || fixed < 1.5 {
		t.Errorf("admissions after the cut %.2f of the slowed capacity (fixed room %.2f), want at most 1 (and about 2)", used, fixed)
	}
	if rows[7].Value != 0 || rows[8].Value != 0 || rows[8].Baseline != 0 {
		t.Errorf("grants lost %v, invariant violations %v (fixed room %v)", rows[7].Value, rows[8].Value, rows[8].Baseline)
	}
	if !*rows[10].Met {
		t.Errorf("highest pace %.2f of admitPerMinute", rows[10].Value)
	}
}
