package room_test

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// The report's minutes take admissions and evictions from the next minute's
// point, joins from the queue's change, a gap leaves the minute before it
// without them, a reset counter counts from 0, and the wait percentiles
// weigh each minute by its admissions.
func TestReportOf(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	pts := []room.HistoryPoint{
		{Minute: m(0), Waiting: 100, Evicted: 5},
		{Minute: m(1), Waiting: 400, AdmittedLastMinute: 60, Evicted: 9}, // 60 admitted, 4 evicted in minute 0
		{Minute: m(2), Waiting: 200, AdmittedLastMinute: 300, Evicted: 9},
		// a gap: minute 3 has no point
		{Minute: m(4), Waiting: 50, AdmittedLastMinute: 100, Evicted: 2}, // counter reset by a loss
		{Minute: m(5), Waiting: 0, AdmittedLastMinute: 50, Evicted: 3},
	}
	r := room.ReportOf(pts)
	want := []room.ReportMinute{
		{Minute: m(0), Waiting: 100, AdmittedPerMinute: 60, EvictedPerMinute: 4, JoinsPerMinute: 364, WaitSeconds: 100},
		{Minute: m(1), Waiting: 400, AdmittedPerMinute: 300, EvictedPerMinute: 0, JoinsPerMinute: 100, WaitSeconds: 80},
		{Minute: m(2), Waiting: 200},
		{Minute: m(4), Waiting: 50, AdmittedPerMinute: 50, EvictedPerMinute: 1, JoinsPerMinute: 1, WaitSeconds: 60},
		{Minute: m(5)},
	}
	if len(r.Minutes) != len(want) {
		t.Fatalf("%d minutes, want %d", len(r.Minutes), len(want))
	}
	for i := range want {
		if r.Minutes[i] != want[i] {
			t.Errorf("minute %d: %+v, want %+v", i, r.Minutes[i], want[i])
		}
	}
	tot := r.Totals
	if tot.Visitors != 100+364+100+1 || tot.Admitted != 410 || tot.Evicted != 5 || tot.PeakWaiting != 400 || tot.PeakJoins != 364 ||
		tot.Minutes != 5 || !tot.From.Equal(m(0)) || !tot.To.Equal(m(5)) {
		t.Errorf("totals %+v", tot)
	}
	// Waits weighed by admissions: 50 at 60 s, 300 at 80 s, 60 at 100 s (410).
	if tot.WaitP50Seconds != 80 || tot.WaitP95Seconds != 100 {
		t.Errorf("wait p50 %v p95 %v, want 80 and 100", tot.WaitP50Seconds, tot.WaitP95Seconds)
	}
	if e := room.ReportOf(nil); len(e.Minutes) != 0 || e.Totals.Minutes != 0 {
		t.Errorf("empty history: %+v", e)
	}
}
